// src/model/weights.h: the semantic weight table of a DeepSeek V4 file and its binding.
// Owns: mapping GGUF tensor names (inventory.h) to backend weight handles per layer, with the
// per-layer constants the ops need (ratio, window, RoPE table, top-k). Binding happens after
// check_model_file() accepted the file, so names, types and shapes are already validated.
// Does not own: the file mapping (gguf::Reader) or device memory (the backend).
#pragma once

#include <vector>

#include "backend/backend.h"
#include "ds4/status.h"
#include "gguf/reader.h"
#include "model/shape.h"

namespace ds4::model {

struct LayerWeights {
  backend::HcWeights hc_attn, hc_ffn;
  backend::Weight attn_norm, q_a, q_a_norm, q_b, kv, kv_norm, out_a, out_b;
  backend::Weight comp_kv, comp_gate;                         // ratio != 0
  backend::Weight index_q, index_proj, index_kv, index_gate;  // ratio == 4
  backend::AttentionLayer attn;                               // sinks, ape, norms, constants
  backend::Weight ffn_norm;
  backend::MoeLayer moe;
};

struct ModelWeights {
  backend::Weight token_embd;
  std::vector<LayerWeights> layers;
  backend::OutputHead head;
  // Directional steering (features.md §8; EngineOptions::steering_file): one F32 [n_embd]
  // direction per layer, or none.
  std::vector<backend::Weight> steering;
};

// The MTP draft block of an MTP file (model.md §2.4, §8.1): the input projections and norms, one
// dense decoder layer, and its head, which projects with the main model's output.weight.
struct MtpWeights {
  backend::Weight e_proj, h_proj, enorm, hnorm;
  LayerWeights layer;
  backend::OutputHead head;
};

// Binds the tensors of a validated main model file (through backend.upload) that `range` uses:
// the embedding when it starts at layer 0, its layers, and the head when it has it. The others
// stay empty (a slice never reads them, and a mapped file's pages of them are never touched).
Result<ModelWeights> bind_weights(const gguf::Reader& file, const Shape& shape,
                                  backend::Backend& backend, const LayerRange& range);
// Binds a validated MTP file's block; `output` is the main model's bound output.weight.
Result<MtpWeights> bind_mtp_weights(const gguf::Reader& file, const Shape& shape,
                                    backend::Backend& backend, const backend::Weight& output);

}  // namespace ds4::model
