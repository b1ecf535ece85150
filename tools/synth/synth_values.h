// tools/synth/synth_values.h: the deterministic synthetic weights of `ds4-gguf synth`.
// Owns: the counter-based generator that gives every element of every tensor a value from its
// name, index and seed alone -- so any chunk can be produced on any thread, and so the reference
// script (tools/reference/, numpy) regenerates bit-identical F32 weights. Spec: docs/synth.md.
// Does not own: file layout (inventory.h) or writing (synth.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/inventory.h"

namespace ds4::synth {

// FNV-1a 64 of the tensor name, mixed with the seed: the per-tensor stream key.
uint64_t tensor_key(std::string_view name, uint64_t seed);

// splitmix64's output function applied to key + (i + 1) * golden: element i's 64 random bits.
constexpr uint64_t element_bits(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform value in (-1, 1) from the top 24 bits: (2u + 1) / 2^24, exactly representable in f32.
constexpr float unit_uniform(uint64_t bits) {
  const int64_t u = static_cast<int64_t>(bits >> 40) - (int64_t{1} << 23);
  return static_cast<float>(2 * u + 1) * (1.0f / 16777216.0f);
}

// The distribution of a tensor's float values: center + scale * unit_uniform, scale a power of two.
struct ValueLaw {
  float center;
  float scale;
};
ValueLaw value_law(const model::TensorSpec& spec);

// Element i of a float tensor, computed in float32 (the multiply is exact; the add rounds).
inline float element_value(uint64_t key, uint64_t i, ValueLaw law) {
  return law.center + unit_uniform(element_bits(key, i)) * law.scale;
}

// The spacing of decisive selection biases: wider than the whole range of the router's scores
// (sqrt(softplus(logit)) stays below 4 for logits below 15), so the bias alone orders the experts.
inline constexpr float kRouterTier = 4.0f;

// Expert e's decisive selection bias: -kRouterTier * rank(e), with rank a permutation of the
// experts drawn from the tensor's key (each layer prefers its own experts).
float tiered_bias(uint64_t key, uint64_t e, int n_expert);

// Entry i of a token -> experts table with `n_used` entries per token: token t = i / n_used picks
// n_used consecutive experts starting at a random one, so they are distinct.
int32_t token_expert(uint64_t key, uint64_t i, int n_used, int n_expert);

// The token map of the decisive head (docs/synth.md): every token t has a successor succ(t), an
// ordinary token. The ordinary tokens are permuted among themselves (succ(o_i) = o_{(a i + b) mod
// m}, o the ordinary ids in order, m their count, a coprime to m); every other token (the specials)
// maps to a random ordinary one. Row v of the decisive output.weight is the sum of the embedding
// rows of v's predecessors {t : succ(t) = v}, so after token t the logit of succ(t) stands out.
class SuccessorMap {
 public:
  // ordinary[t]: token t is ordinary (a normal vocabulary token); at least one must be. `key`
  // draws a, b and the specials' successors.
  SuccessorMap(const std::vector<bool>& ordinary, uint64_t key);

  int n_vocab() const { return static_cast<int>(succ_.size()); }
  int32_t successor(int32_t t) const { return succ_[static_cast<size_t>(t)]; }
  std::span<const int32_t> predecessors(int32_t v) const {
    const auto b = pred_begin_[static_cast<size_t>(v)], e = pred_begin_[static_cast<size_t>(v) + 1];
    return {preds_.data() + b, e - b};
  }

 private:
  std::vector<int32_t> succ_;
  std::vector<uint32_t> pred_begin_;  // predecessors of v: preds_[pred_begin_[v], pred_begin_[v+1])
  std::vector<int32_t> preds_;
};

}  // namespace ds4::synth
