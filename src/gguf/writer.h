// src/gguf/writer.h: streaming GGUF v3 writer.
// Owns: the output file (written under a temporary name and renamed into place by finish(), so an
// interrupted write never leaves a truncated file at the final path).
// Does not own: tensor contents (callers produce them, possibly on many threads).
//
// Use: add_metadata()/add_tensor() to declare everything, write_header(), then stream each
// tensor's bytes with write_tensor_data() -- in any order, from any thread, in chunks -- and
// finish(). Nothing but the header is held in memory, so 80+ GB files stream from generators.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ds4/status.h"
#include "gguf/reader.h"
#include "gguf/types.h"
#include "gguf/value.h"

namespace ds4::gguf {

class Writer {
 public:
  // Creates `path` + ".partial"; finish() renames it to `path`. `alignment` must be a power of two;
  // a value other than 32 is recorded as general.alignment.
  static Result<Writer> create(const std::string& path, uint32_t alignment = kDefaultAlignment);

  Writer(Writer&& other) noexcept;
  Writer& operator=(Writer&&) = delete;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();  // without a successful finish(), removes the partial file

  Status add_metadata(std::string key, Value value);
  // Declares a tensor; returns its index for write_tensor_data. dims are GGUF `ne` (row first).
  Result<size_t> add_tensor(std::string name, GgufType type, std::vector<uint64_t> dims);

  // Writes header, metadata and tensor directory, and sizes the file. Declarations end here.
  Status write_header();
  // Writes `bytes` at `offset_in_tensor` within tensor `index`. Thread-safe; chunks must not
  // overlap.
  Status write_tensor_data(size_t index, std::span<const uint8_t> bytes,
                           uint64_t offset_in_tensor = 0);
  // Checks every tensor received exactly its byte size, syncs and renames into place.
  Status finish();

  uint64_t tensor_bytes(size_t index) const { return tensors_[index].n_bytes; }
  size_t tensor_count() const { return tensors_.size(); }
  // Final file size; valid after write_header().
  uint64_t file_size() const { return file_size_; }

 private:
  Writer() = default;
  Status write_all(const uint8_t* data, size_t n, uint64_t offset);

  std::string path_;
  std::string partial_path_;
  int fd_ = -1;
  uint32_t alignment_ = kDefaultAlignment;
  bool header_written_ = false;
  bool finished_ = false;
  std::vector<KeyValue> metadata_;
  std::unordered_map<std::string, size_t> key_index_;
  std::vector<TensorInfo> tensors_;  // offsets relative to the data section until write_header
  std::unordered_map<std::string, size_t> tensor_index_;
  uint64_t next_offset_ = 0;
  uint64_t data_offset_ = 0;
  uint64_t file_size_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> written_;
};

}  // namespace ds4::gguf
