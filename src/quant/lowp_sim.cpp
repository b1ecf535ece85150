// src/quant/lowp_sim.cpp: FP8/FP4 simulations (see lowp_sim.h). Rounding uses std::nearbyint in the
// default round-to-nearest-even mode on values scaled to an exact power-of-two quantum, so every
// step is exact except the one intended rounding.
#include "quant/lowp_sim.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/check.h"

namespace ds4::quant {
namespace {

// Rounds |a| (finite, <= the format's max) to a grid with `mant_bits` explicit mantissa bits and
// minimum normal exponent `min_exp` (values below 2^min_exp use the subnormal quantum).
float round_to_grid(float a, int mant_bits, int min_exp) {
  if (a == 0.0f) return 0.0f;
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the leading bit is 2^(e-1)
  const int lead = std::max(e - 1, min_exp);
  const float quantum = std::ldexp(1.0f, lead - mant_bits);
  return std::nearbyint(a / quantum) * quantum;
}

float block_amax(std::span<const float> x) {
  float m = 0.0f;
  for (float v : x) m = std::max(m, std::fabs(v));
  return m;
}

void simulate_blocks(std::span<float> x, int block, float amax_floor, float fmt_max,
                     float (*round)(float)) {
  for (size_t b = 0; b + static_cast<size_t>(block) <= x.size(); b += static_cast<size_t>(block)) {
    const std::span<float> blk = x.subspan(b, static_cast<size_t>(block));
    const float amax = std::max(block_amax(blk), amax_floor);
    const float scale = block_scale_pow2(amax, 1.0f / fmt_max);
    for (float& v : blk) v = round(std::clamp(v / scale, -fmt_max, fmt_max)) * scale;
  }
}

}  // namespace

float e4m3_round(float v) {
  // e4m3: 3 mantissa bits, exponent bias 7, min normal 2^-6, subnormal quantum 2^-9, max 448.
  const float a = std::min(std::fabs(v), kE4m3Max);
  return std::copysign(round_to_grid(a, 3, -6), v);
}

float e2m1_round(float v) {
  // e2m1: 1 mantissa bit, min normal 2^0 (values 1, 1.5, 2, 3, 4, 6), subnormal quantum 0.5.
  const float a = std::min(std::fabs(v), kE2m1Max);
  return std::copysign(round_to_grid(a, 1, 0), v);
}

float block_scale_pow2(float amax, float inv_format_max) {
  DS4_DCHECK(amax > 0.0f && std::isfinite(amax));
  const uint32_t bits = std::bit_cast<uint32_t>(amax * inv_format_max);
  const int exponent =
      static_cast<int>((bits >> 23) & 0xff) - 127 + ((bits & 0x7fffff) != 0 ? 1 : 0);
  return std::ldexp(1.0f, exponent);
}

void fp8_kv_simulate(std::span<float> row) {
  DS4_CHECK(row.size() == static_cast<size_t>(kKvRowDims));
  simulate_blocks(row.first(kKvNopeDims), 64, 1e-4f, kE4m3Max, e4m3_round);
}

void hadamard128(std::span<float> x) {
  DS4_CHECK(x.size() == static_cast<size_t>(kIndexerDims));
  for (size_t stride = 1; stride < x.size(); stride *= 2) {
    for (size_t base = 0; base < x.size(); base += 2 * stride) {
      for (size_t i = 0; i < stride; ++i) {
        const float a = x[base + i], b = x[base + stride + i];
        x[base + i] = a + b;
        x[base + stride + i] = a - b;
      }
    }
  }
  for (float& v : x) v *= 0.08838834764831845f;  // 1/sqrt(128) as a float literal (model.md §3.4)
}

void indexer_fp4_simulate(std::span<float> x) {
  hadamard128(x);
  simulate_blocks(x, 32, 6.0f * std::ldexp(1.0f, -126), kE2m1Max, e2m1_round);
}

}  // namespace ds4::quant
