// tools/synth/synth_values.cpp: value laws and the hash-routing table (see synth_values.h).
#include "tools/synth/synth_values.h"

#include <cmath>
#include <numeric>

namespace ds4::synth {
namespace {

// The power of two nearest to sqrt(3 / fan_in): uniform values of that range have a standard
// deviation close to 1/sqrt(fan_in), the usual initialisation, so activations keep their size.
float fan_in_scale(uint64_t fan_in) {
  const double target = std::sqrt(3.0 / static_cast<double>(fan_in));
  return static_cast<float>(std::ldexp(1.0, static_cast<int>(std::lround(std::log2(target)))));
}

}  // namespace

uint64_t tensor_key(std::string_view name, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h ^ (seed * 0x9E3779B97F4A7C15ull);
}

ValueLaw value_law(const model::TensorSpec& spec) {
  using model::TensorRole;
  switch (spec.role) {
    case TensorRole::kEmbedding: return {0.0f, 1.0f};
    case TensorRole::kMatrix:
    case TensorRole::kRoutedExpert:
    case TensorRole::kRouter:
    case TensorRole::kHcFn: return {0.0f, fan_in_scale(spec.dims[0])};
    case TensorRole::kNormWeight: return {1.0f, 0.0625f};
    case TensorRole::kHcBase: return {0.0f, 0.5f};
    case TensorRole::kHcScale: return {0.5f, 0.125f};
    case TensorRole::kSinks: return {0.0f, 1.0f};
    case TensorRole::kApe: return {0.0f, 0.25f};
    case TensorRole::kRouterBias: return {0.0f, 0.125f};
    case TensorRole::kTokenToExpert: return {0.0f, 0.0f};
  }
  return {0.0f, 0.0f};
}

float tiered_bias(uint64_t key, uint64_t e, int n_expert) {
  const uint64_t n = static_cast<uint64_t>(n_expert);
  // rank(e) = (a * e + b) mod n is a permutation when gcd(a, n) == 1.
  uint64_t a = (element_bits(key, 0) % n) | 1;
  while (std::gcd(a, n) != 1) a += 2;
  const uint64_t b = element_bits(key, 1) % n;
  return -kRouterTier * static_cast<float>((a * e + b) % n);
}

int32_t token_expert(uint64_t key, uint64_t i, int n_used, int n_expert) {
  const uint64_t token = i / static_cast<uint64_t>(n_used);
  const uint64_t k = i % static_cast<uint64_t>(n_used);
  const uint64_t start = (element_bits(key, token) >> 32) % static_cast<uint64_t>(n_expert);
  return static_cast<int32_t>((start + k) % static_cast<uint64_t>(n_expert));
}

SuccessorMap::SuccessorMap(const std::vector<bool>& ordinary, uint64_t key) {
  std::vector<int32_t> ord;
  for (size_t t = 0; t < ordinary.size(); ++t)
    if (ordinary[t]) ord.push_back(static_cast<int32_t>(t));
  const uint64_t m = ord.size();
  succ_.assign(ordinary.size(), 0);
  if (m == 0) return;
  uint64_t a = (element_bits(key, 0) % m) | 1;
  while (std::gcd(a, m) != 1) a += 2;
  const uint64_t b = element_bits(key, 1) % m;
  for (uint64_t i = 0; i < m; ++i) succ_[static_cast<size_t>(ord[i])] = ord[(a * i + b) % m];
  for (size_t t = 0; t < ordinary.size(); ++t) {
    if (!ordinary[t]) succ_[t] = ord[(element_bits(key, 2 + t) >> 32) % m];
  }
  // Predecessor lists in CSR form, each in ascending token order.
  pred_begin_.assign(succ_.size() + 1, 0);
  for (int32_t s : succ_) ++pred_begin_[static_cast<size_t>(s) + 1];
  for (size_t v = 0; v < succ_.size(); ++v) pred_begin_[v + 1] += pred_begin_[v];
  preds_.resize(succ_.size());
  std::vector<uint32_t> fill(pred_begin_.begin(), pred_begin_.end() - 1);
  for (size_t t = 0; t < succ_.size(); ++t)
    preds_[fill[static_cast<size_t>(succ_[t])]++] = static_cast<int32_t>(t);
}

}  // namespace ds4::synth
