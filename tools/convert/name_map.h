// tools/convert/name_map.h: how a DeepSeek V4 checkpoint is laid out and where each GGUF tensor
// comes from (semantics-diff.md B.1, B.3, D).
// Owns: the official <-> Hugging Face <-> GGUF tensor name map, the layout detection, and the
//   config.json -> Shape mapping (HF DeepseekV4Config keys, or the official inference keys).
// Does not own: GGUF names, types and shapes (model/inventory.h is the single source), decoding
//   (numeric.h) or I/O (safetensors.h, convert.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "model/inventory.h"
#include "model/shape.h"
#include "tools/convert/safetensors.h"

namespace ds4::convert {

enum class Layout {
  kHuggingFace,  // transformers `deepseek_v4` state dict: model.layers.N.self_attn.q_a_proj.weight,
                 // fused experts
  kOfficial,  // DeepSeek's own checkpoint: layers.N.attn.wq_a.weight (+ .scale), experts per index
};
std::string_view to_string(Layout l);

// HF when model.embed_tokens.weight or any model.layers.* key exists; official when embed.weight
// or any layers.* key exists; an error when neither (or both) is found.
Result<Layout> detect_layout(const CheckpointDir& dir);

// Maps a config.json (HF DeepseekV4Config, or the official inference/config.json key names) to a
// Shape. Missing required fields, per-head constants other than the engine's, and compress_ratios
// that do not follow the V4 layer pattern are errors naming the field. The shape is the builtin one
// (flash, pro, tiny, small) with the same dimensions when there is one, else a test shape "custom".
Result<model::Shape> shape_from_config(std::string_view config_json);

// One contiguous run of rows of a source tensor that fills the next rows of a GGUF tensor.
struct SourceSegment {
  std::string name;            // source weight name
  std::vector<int64_t> shape;  // expected logical torch shape (FP4 columns unpacked)
  int64_t row0 = 0;            // first source row (all but the last dimension flattened)
  int64_t n_rows = 0;
};

// Where GGUF tensor `spec` comes from: segments in GGUF row order. Experts come from slices of the
// fused HF tensors (gate_up_proj[:, :F] / [:, F:]) or one segment per official expert index.
Result<std::vector<SourceSegment>> source_plan(const model::TensorSpec& spec,
                                               const model::Shape& shape, Layout layout);

}  // namespace ds4::convert
