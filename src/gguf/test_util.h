// src/gguf/test_util.h: helpers shared by the gguf tests (temporary files, raw byte builders).
// Test-only; not part of the gguf library.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::gguf::testing {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ds4-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Appends little-endian fields to a byte vector, for hand-crafting (possibly hostile) files.
class Bytes {
 public:
  template <class T>
  Bytes& put(T v) {
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));
    std::memcpy(b_.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes& str(std::string_view s) {
    put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(std::string_view s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.resize(b_.size() + n, 0);
    return *this;
  }
  Bytes& pad_to(size_t alignment) {
    while (b_.size() % alignment != 0) b_.push_back(0);
    return *this;
  }
  // Header: magic, version, tensor count, kv count.
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return put<uint32_t>(0x46554747)
        .put<uint32_t>(version)
        .put<uint64_t>(n_tensors)
        .put<uint64_t>(n_kv);
  }
  Bytes& kv_u32(std::string_view key, uint32_t v) {
    return str(key).put<uint32_t>(4).put<uint32_t>(v);
  }
  // Tensor directory entry for a 1-D tensor.
  Bytes& tensor(std::string_view name, uint64_t n, uint32_t type, uint64_t offset) {
    return str(name).put<uint32_t>(1).put<uint64_t>(n).put<uint32_t>(type).put<uint64_t>(offset);
  }
  const std::vector<uint8_t>& bytes() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  std::vector<uint8_t> b_;
};

}  // namespace ds4::gguf::testing
