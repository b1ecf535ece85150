// src/model/inventory.h: the one tensor list of a model file -- names, types, shapes and roles --
// that synthesis, validation, conversion and (later) loading all walk (design §4 "one tensor list
// driving everything"). model.md §2.3 (main file) and §2.4 (MTP file).
// Owns: the naming scheme, the tensor types of each published quantisation recipe, and the set of
// types the engine accepts per tensor.
// Does not own: tensor contents (tools/synth, tools/convert) or metadata (hparams.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "model/shape.h"

namespace ds4::model {

// Quantisation recipes (`ds4-gguf synth --quant`). q2 and q4 are the published mixes.
enum class Recipe {
  kF32,  // every float tensor F32 (reference-matching tests)
  kF16,  // matrices F16, vectors F32
  kQ8,   // published layout with Q8_0 routed experts
  kQ2,   // published: IQ2_XXS routed gate/up, Q2_K routed down, Q8_0 projections, F16 HC/router/...
  kQ4,   // published: Q4_K routed experts
};
std::optional<Recipe> recipe_from_name(std::string_view name);
std::string_view to_string(Recipe r);

// What a tensor is, which decides the distribution of synthetic values and the conversions.
enum class TensorRole {
  kEmbedding,     // token_embd
  kMatrix,        // dense projection, fan-in = dims[0]
  kRoutedExpert,  // 3-D expert stack, fan-in = dims[0]
  kNormWeight,    // RMSNorm weight (around 1)
  kHcFn,          // hyper-connection projection
  kHcBase,
  kHcScale,
  kSinks,          // attention sink logits
  kApe,            // compressor absolute position embedding
  kRouter,         // expert router matrix
  kRouterBias,     // selection bias
  kTokenToExpert,  // hash-routing table (I32)
};

// Whether a file must hold a tensor, and whether the engine reads it (ds4's loader, model.md §2.3).
enum class Presence {
  kRequired,  // must be present
  kOptional,  // may be absent; read when present (the selection bias of a top-k layer)
  kIgnored,   // may be absent; never read when present (the selection bias of a hash layer, which
              // the published files carry although the table decides the experts)
};

struct TensorSpec {
  std::string name;
  gguf::GgufType type;
  std::vector<uint64_t> dims;  // GGUF ne (row length first)
  TensorRole role;
  int layer;  // -1 for top-level tensors
  Presence presence = Presence::kRequired;
  uint64_t n_elements() const;
};

// The main model file's tensors, in file order: the published layout, optional tensors included.
std::vector<TensorSpec> model_tensors(const Shape& shape, Recipe recipe);
// The optional MTP file's tensors (model.md §2.4).
std::vector<TensorSpec> mtp_tensors(const Shape& shape, Recipe recipe);

// Whether the engine accepts `type` for this tensor (the published type, or a wider float type, or
// another supported expert format).
bool type_accepted(const TensorSpec& spec, gguf::GgufType type);

}  // namespace ds4::model
