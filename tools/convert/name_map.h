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

// How the routed experts are stored; the other names are matched whatever their spelling (below).
enum class Layout {
  kHuggingFace,  // transformers `deepseek_v4` state dict: model.layers.N.self_attn.q_a_proj.weight,
                 // fused experts (mlp.experts.gate_up_proj / down_proj)
  kOfficial,  // DeepSeek's own checkpoint: layers.N.attn.wq_a.weight (+ .scale), experts per index
              // (ffn.experts.E.w1.weight); transformers 5.x `save_pretrained` writes these names
              // under a `model.` prefix
};
std::string_view to_string(Layout l);

// The one spelling every checkpoint name is compared in: the official name. A Hugging Face name
// (model.layers.N.self_attn.q_a_proj.weight, lm_head.weight, ...) maps to its official name
// (layers.N.attn.wq_a.weight, head.weight); a `model.` prefix in front of an official name (what
// transformers' save_pretrained writes) is dropped; fused expert tensors keep their own names
// under the official prefix (layers.N.ffn.experts.gate_up_proj). Names it does not know pass
// through unchanged, so they can still be reported.
std::string canonical_name(std::string_view name);

// kHuggingFace when the experts are fused, kOfficial when they are stored per expert; an error when
// the directory holds no DeepSeek V4 tensors or both expert layouts.
Result<Layout> detect_layout(const CheckpointDir& dir);

// How the checkpoint spells its names, for reports: "official", "huggingface", or
// "transformers-saved" (official names under `model.`, as save_pretrained writes them).
std::string naming_of(const CheckpointDir& dir);

// Maps a config.json (HF DeepseekV4Config as transformers 5.x writes it -- layer_types,
// mlp_layer_types, compress_rates, partial_rotary_factor -- or the older HF keys num_hash_layers,
// compress_ratios, qk_rope_head_dim, or the official inference/config.json key names) to a Shape.
// Missing required fields, per-head constants other than the engine's, values of semantic keys
// the engine does not implement (scoring_func, hidden_act, ...) and compress ratios that do not
// follow the V4 layer pattern are errors naming the field. Keys the reader does not know are
// appended to `unknown_keys` (when given) so they are reported, never silently dropped. The shape
// is the builtin one (flash, pro, tiny, small) with the same dimensions when there is one, else a
// test shape "custom".
Result<model::Shape> shape_from_config(std::string_view config_json,
                                       std::vector<std::string>* unknown_keys = nullptr);

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
