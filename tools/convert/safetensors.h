// tools/convert/safetensors.h: read-only, zero-copy access to safetensors files and checkpoint
// directories (one or more shards, optionally with model.safetensors.index.json).
// Owns: parsing and validating the JSON header (hostile input: every size, offset and name is
//   checked before use), the mappings of the shard files, and the name -> shard lookup.
// Does not own: what the tensors mean (name_map.h) or numeric decoding (numeric.h). Nothing is
//   copied: a tensor view points into the mapping, so a 160 GB checkpoint streams tensor by tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "ds4/status.h"

namespace ds4::convert {

enum class Dtype {
  kF64,
  kF32,
  kF16,
  kBF16,
  kI64,
  kI32,
  kI16,
  kI8,
  kU64,
  kU32,
  kU16,
  kU8,
  kBool,
  kF8E4M3,  // "F8_E4M3" (alias "F8_E4M3FN"): FP8, 4 exponent bits, finite-only
  kF8E5M2,
  kF8E8M0,  // "F8_E8M0" (alias "E8M0"): power-of-two scale byte
};

// Header spelling ("BF16"); aliases parse to the same value.
std::string_view to_string(Dtype d);
std::optional<Dtype> dtype_from_name(std::string_view name);
uint32_t dtype_bytes(Dtype d);

// Largest header accepted (the published 46-shard Flash headers are well under 1 MB each).
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct TensorView {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;  // torch order (outermost first)
  std::span<const uint8_t> data;
  uint64_t n_elements() const;
};

class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);
  // Parses bytes that the caller keeps alive (tests, fuzzing). `label` names them in errors.
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes, std::string label);

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& label() const { return label_; }

 private:
  std::unique_ptr<base::MappedFile> file_;  // stable address while SafetensorsFile moves
  std::string label_;
  std::vector<TensorView> tensors_;  // sorted by data offset
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Every shard of a checkpoint directory. With model.safetensors.index.json, the shards are the
// files its weight_map names (each name must be found in the shard the map gives); otherwise every
// *.safetensors file in the directory. A tensor name in two shards is an error.
class CheckpointDir {
 public:
  static Result<CheckpointDir> open(const std::string& dir);

  const TensorView* find(std::string_view name) const;
  // All tensor names, sorted.
  std::vector<std::string> names() const;
  size_t shard_count() const { return shards_.size(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<SafetensorsFile> shards_;
  std::unordered_map<std::string, const TensorView*> by_name_;
};

}  // namespace ds4::convert
