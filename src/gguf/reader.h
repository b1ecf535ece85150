// src/gguf/reader.h: GGUF v3 reader -- header, metadata, tensor directory, zero-copy tensor views.
// Owns: parsing and validation of the container (model.md §2.1); the mapping of the file.
// Does not own: any model meaning of keys or tensors (model/ validates shapes against its Shape).
//
// Hostile input is expected: every count, length and offset is checked against the bytes that
// remain before it is used, so a corrupt file yields a Status naming the problem and its offset,
// never a crash or an out-of-bounds read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "ds4/status.h"
#include "gguf/types.h"
#include "gguf/value.h"

namespace ds4::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 8;
inline constexpr uint64_t kMaxKeyBytes = 65535;

struct ReaderLimits {
  uint64_t max_metadata_bytes = uint64_t{1} << 30;  // memory the parsed metadata may take
  uint32_t max_array_depth = 8;                     // nesting of arrays inside arrays
};

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  GgufType type = GgufType::kF32;
  std::vector<uint64_t> dims;  // GGUF `ne`: fastest-varying first; dims[0] is the row length
  uint64_t n_elements = 0;
  uint64_t offset = 0;   // absolute byte offset of the data in the file
  uint64_t n_bytes = 0;  // ceil(n_elements / block_elems) * block_bytes
  // Row count when viewed as a matrix of dims[0]-long rows.
  uint64_t n_rows() const { return dims.empty() || dims[0] == 0 ? 0 : n_elements / dims[0]; }
};

class Reader {
 public:
  // Maps and parses a file.
  static Result<Reader> open(const std::string& path, const ReaderLimits& limits = {});
  // Parses bytes the caller keeps alive for the Reader's lifetime (tests, fuzzing).
  static Result<Reader> parse(std::span<const uint8_t> bytes, const ReaderLimits& limits = {});

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }

  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (zero-copy).
  std::span<const uint8_t> tensor_data(const TensorInfo& t) const {
    return bytes_.subspan(t.offset, t.n_bytes);
  }
  // A streaming reader's consumed bytes (base::MappedFile::release); nothing for parse()d bytes.
  void release(std::span<const uint8_t> range) const {
    if (file_) file_->release(range);
  }

  // Typed metadata access with errors that name the key and the type found.
  Result<uint32_t> get_u32(std::string_view key) const;       // exactly u32
  Result<uint64_t> get_u64_like(std::string_view key) const;  // u64 or u32
  Result<double> get_f64_like(std::string_view key) const;    // f32, f64, u32 or i32
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;

 private:
  friend class Parser;
  std::optional<base::MappedFile> file_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> key_index_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace ds4::gguf
