// src/model/inventory.cpp: tensor names, shapes and recipe types (model.md §2.3, §2.4).
#include "model/inventory.h"

namespace ds4::model {
namespace {

using gguf::GgufType;
using Dims = std::vector<uint64_t>;

// Storage classes of the published files; a recipe maps each to a GGUF type.
enum class Storage { kVector, kF16Matrix, kQ8Matrix, kExpertGateUp, kExpertDown, kI32 };

GgufType type_for(Storage st, Recipe r) {
  switch (st) {
    case Storage::kVector: return GgufType::kF32;
    case Storage::kI32: return GgufType::kI32;
    case Storage::kF16Matrix: return r == Recipe::kF32 ? GgufType::kF32 : GgufType::kF16;
    case Storage::kQ8Matrix:
      return r == Recipe::kF32   ? GgufType::kF32
             : r == Recipe::kF16 ? GgufType::kF16
                                 : GgufType::kQ8_0;
    case Storage::kExpertGateUp:
    case Storage::kExpertDown:
      switch (r) {
        case Recipe::kF32: return GgufType::kF32;
        case Recipe::kF16: return GgufType::kF16;
        case Recipe::kQ8: return GgufType::kQ8_0;
        case Recipe::kQ2:
          return st == Storage::kExpertGateUp ? GgufType::kIQ2_XXS : GgufType::kQ2_K;
        case Recipe::kQ4: return GgufType::kQ4_K;
      }
  }
  return GgufType::kF32;
}

class Builder {
 public:
  Builder(Recipe r, std::vector<TensorSpec>* out) : recipe_(r), out_(out) {}
  void add(std::string name, Storage st, Dims dims, TensorRole role, int layer,
           Presence presence = Presence::kRequired) {
    out_->push_back(
        {std::move(name), type_for(st, recipe_), std::move(dims), role, layer, presence});
  }

 private:
  Recipe recipe_;
  std::vector<TensorSpec>* out_;
};

uint64_t u(int v) { return static_cast<uint64_t>(v); }

constexpr std::string_view kIndexerQuery = "indexer.attn_q_b.weight";

bool is_indexer_query(const TensorSpec& spec) {
  const std::string_view n = spec.name;
  return n.size() >= kIndexerQuery.size() &&
         n.substr(n.size() - kIndexerQuery.size()) == kIndexerQuery;
}

// The tensors every block has (main layers and the MTP block alike), under prefix `p`.
void add_block_common(Builder& b, const Shape& s, const std::string& p, int il) {
  const uint64_t hc_in = u(s.n_hc * s.n_embd), mix = u(s.hc_mix());
  for (const char* sub : {"attn", "ffn"}) {
    b.add(p + "hc_" + sub + "_fn.weight", Storage::kF16Matrix, {hc_in, mix}, TensorRole::kHcFn, il);
    b.add(p + "hc_" + sub + "_scale.weight", Storage::kVector, {3}, TensorRole::kHcScale, il);
    b.add(p + "hc_" + sub + "_base.weight", Storage::kVector, {mix}, TensorRole::kHcBase, il);
  }
  b.add(p + "attn_norm.weight", Storage::kVector, {u(s.n_embd)}, TensorRole::kNormWeight, il);
  b.add(p + "attn_q_a.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.n_lora_q)},
        TensorRole::kMatrix, il);
  b.add(p + "attn_q_a_norm.weight", Storage::kVector, {u(s.n_lora_q)}, TensorRole::kNormWeight, il);
  b.add(p + "attn_q_b.weight", Storage::kQ8Matrix, {u(s.n_lora_q), u(s.n_head * s.head_dim)},
        TensorRole::kMatrix, il);
  b.add(p + "attn_kv.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.head_dim)}, TensorRole::kMatrix,
        il);
  b.add(p + "attn_kv_a_norm.weight", Storage::kVector, {u(s.head_dim)}, TensorRole::kNormWeight,
        il);
  b.add(p + "attn_sinks.weight", Storage::kVector, {u(s.n_head)}, TensorRole::kSinks, il);
  b.add(p + "attn_output_a.weight", Storage::kQ8Matrix,
        {u(s.heads_per_group() * s.head_dim), u(s.n_out_group * s.n_lora_o)}, TensorRole::kMatrix,
        il);
  b.add(p + "attn_output_b.weight", Storage::kQ8Matrix,
        {u(s.n_out_group * s.n_lora_o), u(s.n_embd)}, TensorRole::kMatrix, il);
}

void add_block_ffn(Builder& b, const Shape& s, const std::string& p, int il, Presence bias) {
  b.add(p + "ffn_norm.weight", Storage::kVector, {u(s.n_embd)}, TensorRole::kNormWeight, il);
  b.add(p + "ffn_gate_inp.weight", Storage::kF16Matrix, {u(s.n_embd), u(s.n_expert)},
        TensorRole::kRouter, il);
  b.add(p + "exp_probs_b.bias", Storage::kVector, {u(s.n_expert)}, TensorRole::kRouterBias, il,
        bias);
  b.add(p + "ffn_gate_exps.weight", Storage::kExpertGateUp,
        {u(s.n_embd), u(s.n_ff_exp), u(s.n_expert)}, TensorRole::kRoutedExpert, il);
  b.add(p + "ffn_up_exps.weight", Storage::kExpertGateUp,
        {u(s.n_embd), u(s.n_ff_exp), u(s.n_expert)}, TensorRole::kRoutedExpert, il);
  b.add(p + "ffn_down_exps.weight", Storage::kExpertDown,
        {u(s.n_ff_exp), u(s.n_embd), u(s.n_expert)}, TensorRole::kRoutedExpert, il);
  b.add(p + "ffn_gate_shexp.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.n_ff_exp)},
        TensorRole::kMatrix, il);
  b.add(p + "ffn_up_shexp.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.n_ff_exp)},
        TensorRole::kMatrix, il);
  b.add(p + "ffn_down_shexp.weight", Storage::kQ8Matrix, {u(s.n_ff_exp), u(s.n_embd)},
        TensorRole::kMatrix, il);
}

}  // namespace

std::optional<Recipe> recipe_from_name(std::string_view name) {
  for (Recipe r : {Recipe::kF32, Recipe::kF16, Recipe::kQ8, Recipe::kQ2, Recipe::kQ4}) {
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view to_string(Recipe r) {
  switch (r) {
    case Recipe::kF32: return "f32";
    case Recipe::kF16: return "f16";
    case Recipe::kQ8: return "q8";
    case Recipe::kQ2: return "q2";
    case Recipe::kQ4: return "q4";
  }
  return "?";
}

uint64_t TensorSpec::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

std::vector<TensorSpec> model_tensors(const Shape& s, Recipe recipe) {
  std::vector<TensorSpec> out;
  Builder b(recipe, &out);
  b.add("token_embd.weight", Storage::kF16Matrix, {u(s.n_embd), u(s.n_vocab)},
        TensorRole::kEmbedding, -1);
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add_block_common(b, s, p, il);
    const int ratio = s.compress_ratio(il);
    if (ratio != 0) {
      const uint64_t w = u(s.compressor_width(il));
      b.add(p + "attn_compressor_ape.weight", Storage::kF16Matrix, {w, u(ratio)}, TensorRole::kApe,
            il);
      b.add(p + "attn_compressor_kv.weight", Storage::kF16Matrix, {u(s.n_embd), w},
            TensorRole::kMatrix, il);
      b.add(p + "attn_compressor_gate.weight", Storage::kF16Matrix, {u(s.n_embd), w},
            TensorRole::kMatrix, il);
      b.add(p + "attn_compressor_norm.weight", Storage::kVector, {u(s.head_dim)},
            TensorRole::kNormWeight, il);
    }
    if (ratio == 4) {
      const uint64_t iw = u(2 * s.indexer_head_dim);
      b.add(p + "indexer.attn_q_b.weight", Storage::kF16Matrix,
            {u(s.n_lora_q), u(s.n_indexer_head * s.indexer_head_dim)}, TensorRole::kMatrix, il);
      b.add(p + "indexer.proj.weight", Storage::kF16Matrix, {u(s.n_embd), u(s.n_indexer_head)},
            TensorRole::kMatrix, il);
      b.add(p + "indexer_compressor_ape.weight", Storage::kF16Matrix, {iw, 4}, TensorRole::kApe,
            il);
      b.add(p + "indexer_compressor_kv.weight", Storage::kF16Matrix, {u(s.n_embd), iw},
            TensorRole::kMatrix, il);
      b.add(p + "indexer_compressor_gate.weight", Storage::kF16Matrix, {u(s.n_embd), iw},
            TensorRole::kMatrix, il);
      b.add(p + "indexer_compressor_norm.weight", Storage::kVector, {u(s.indexer_head_dim)},
            TensorRole::kNormWeight, il);
    }
    // The selection bias is optional everywhere; a hash-routed layer's is never read (its table
    // picks the experts) but the published files carry it (the official checkpoint does not).
    add_block_ffn(b, s, p, il, s.hash_routed(il) ? Presence::kIgnored : Presence::kOptional);
    if (s.hash_routed(il)) {
      b.add(p + "ffn_gate_tid2eid.weight", Storage::kI32, {u(s.n_expert_used), u(s.n_vocab)},
            TensorRole::kTokenToExpert, il);
    }
  }
  b.add("output_hc_base.weight", Storage::kVector, {u(s.n_hc)}, TensorRole::kHcBase, -1);
  b.add("output_hc_fn.weight", Storage::kF16Matrix, {u(s.n_hc * s.n_embd), u(s.n_hc)},
        TensorRole::kHcFn, -1);
  b.add("output_hc_scale.weight", Storage::kVector, {1}, TensorRole::kHcScale, -1);
  b.add("output_norm.weight", Storage::kVector, {u(s.n_embd)}, TensorRole::kNormWeight, -1);
  b.add("output.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.n_vocab)}, TensorRole::kMatrix, -1);
  return out;
}

std::vector<TensorSpec> mtp_tensors(const Shape& s, Recipe recipe) {
  std::vector<TensorSpec> out;
  Builder b(recipe, &out);
  const std::string p = "mtp.0.";
  const int il = s.n_layer;  // the MTP block follows the last layer
  b.add(p + "hc_head_base.weight", Storage::kVector, {u(s.n_hc)}, TensorRole::kHcBase, il);
  b.add(p + "hc_head_fn.weight", Storage::kF16Matrix, {u(s.n_hc * s.n_embd), u(s.n_hc)},
        TensorRole::kHcFn, il);
  b.add(p + "hc_head_scale.weight", Storage::kVector, {1}, TensorRole::kHcScale, il);
  b.add(p + "e_proj.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.n_embd)}, TensorRole::kMatrix,
        il);
  b.add(p + "h_proj.weight", Storage::kQ8Matrix, {u(s.n_embd), u(s.n_embd)}, TensorRole::kMatrix,
        il);
  for (const char* n : {"enorm", "hnorm", "norm"}) {
    b.add(p + n + ".weight", Storage::kVector, {u(s.n_embd)}, TensorRole::kNormWeight, il);
  }
  add_block_common(b, s, p, il);
  add_block_ffn(b, s, p, il, Presence::kRequired);  // ds4 requires the MTP block's bias
  return out;
}

bool type_accepted(const TensorSpec& spec, GgufType type) {
  if (type == spec.type) return true;
  switch (spec.role) {
    case TensorRole::kTokenToExpert: return false;
    case TensorRole::kRoutedExpert:
      return type == GgufType::kIQ2_XXS || type == GgufType::kQ2_K || type == GgufType::kQ4_K ||
             type == GgufType::kQ8_0 || type == GgufType::kF16 || type == GgufType::kF32;
    default: break;
  }
  // Vectors are F32 in every recipe; matrices may be stored wider than published.
  if (spec.dims.size() == 1) return type == GgufType::kF32;
  if (spec.type == GgufType::kQ8_0) return type == GgufType::kF16 || type == GgufType::kF32;
  // ds4 also reads the indexer's query projection as Q8_0 (files quantised further than published).
  if (spec.type == GgufType::kF16)
    return type == GgufType::kF32 || (type == GgufType::kQ8_0 && is_indexer_query(spec));
  return false;
}

}  // namespace ds4::model
