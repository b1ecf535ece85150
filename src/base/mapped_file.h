// src/base/mapped_file.h: RAII read-only memory mapping of a whole file.
// Owns: one mmap region and its file descriptor's lifetime (closed right after mapping).
// Does not own: interpretation of the bytes (gguf/, safetensors readers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ds4/status.h"

namespace ds4::base {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to an empty span (no mmap call).
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Lets the kernel drop the whole pages of `range` (a part of bytes()) from this process's
  // memory: a streaming reader's pages already consumed. They read again from the file if
  // touched. Anything outside the mapping is ignored.
  void release(std::span<const uint8_t> range) const;
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace ds4::base
