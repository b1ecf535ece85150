// tools/convert/safetensors_writer.h: writes safetensors files and sharded checkpoint directories.
// Owns: the on-disk encoding (8-byte header length, space-padded JSON header, packed data) and the
//   index/config files of a checkpoint directory.
// Does not own: tensor contents (callers build the bytes). Holds every tensor in memory: meant for
//   tests and for small reference checkpoints, not for re-sharding a full model.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ds4/status.h"
#include "tools/convert/safetensors.h"

namespace ds4::convert {

struct TensorData {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // exactly elements x dtype_bytes(dtype)
};

// Writes one safetensors file with tensors in the given order. Metadata values are strings.
Status write_safetensors(const std::string& path, const std::vector<TensorData>& tensors,
                         const std::vector<std::pair<std::string, std::string>>& metadata = {});

// Writes `dir` (created if needed): tensors split into shards of at most `max_shard_bytes` of data
// (a larger tensor gets a shard of its own) named model-0000K-of-0000N.safetensors, plus
// model.safetensors.index.json, and config.json with `config_json` as its text (skipped if empty).
Status write_checkpoint(const std::string& dir, const std::vector<TensorData>& tensors,
                        const std::string& config_json, uint64_t max_shard_bytes);

}  // namespace ds4::convert
