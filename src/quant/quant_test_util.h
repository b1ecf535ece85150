// src/quant/quant_test_util.h: seeded random data and random valid blocks for the quant tests.
// Owns: test-only generators (never linked into the library).
// Does not own: any expectation; the tests state those.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "base/f16.h"
#include "quant/blocks.h"

namespace ds4::quant::testing {

inline std::vector<float> gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// Any finite f16 (random sign, exponent and mantissa; subnormals and zero included).
inline uint16_t random_finite_f16(std::mt19937& rng) {
  for (;;) {
    const auto h = static_cast<uint16_t>(rng());
    if (((h >> 10) & 0x1f) != 0x1f) return h;
  }
}

inline int8_t random_i8(std::mt19937& rng, int lo, int hi) {
  return static_cast<int8_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
}

inline uint8_t random_u8(std::mt19937& rng) { return static_cast<uint8_t>(rng()); }

inline BlockQ8_0 random_q8_0(std::mt19937& rng) {
  BlockQ8_0 b{};
  b.d = random_finite_f16(rng);
  for (int8_t& q : b.qs) q = random_i8(rng, -128, 127);
  return b;
}

inline BlockQ2_K random_q2_k(std::mt19937& rng) {
  BlockQ2_K b{};
  for (uint8_t& s : b.scales) s = random_u8(rng);
  for (uint8_t& q : b.qs) q = random_u8(rng);
  b.d = random_finite_f16(rng);
  b.dmin = random_finite_f16(rng);
  return b;
}

inline BlockQ4_K random_q4_k(std::mt19937& rng) {
  BlockQ4_K b{};
  b.d = random_finite_f16(rng);
  b.dmin = random_finite_f16(rng);
  for (uint8_t& s : b.scales) s = random_u8(rng);
  for (uint8_t& q : b.qs) q = random_u8(rng);
  return b;
}

inline BlockIQ2_XXS random_iq2_xxs(std::mt19937& rng) {
  BlockIQ2_XXS b{};
  b.d = random_finite_f16(rng);
  for (uint16_t& q : b.qs) q = static_cast<uint16_t>(rng());
  return b;
}

// Activation blocks as quantize_act_* can produce them: qs in [-127, 127], positive d.
inline float random_act_scale(std::mt19937& rng) {
  return std::ldexp(std::uniform_real_distribution<float>(1.0f, 2.0f)(rng),
                    std::uniform_int_distribution<int>(-20, 2)(rng));
}

inline ActQ8_0 random_act_q8_0(std::mt19937& rng) {
  ActQ8_0 a{};
  a.d = random_act_scale(rng);
  for (int8_t& q : a.qs) q = random_i8(rng, -127, 127);
  return a;
}

inline BlockQ8_K random_q8_k(std::mt19937& rng) {
  BlockQ8_K a{};
  a.d = random_act_scale(rng);
  for (int8_t& q : a.qs) q = random_i8(rng, -127, 127);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += a.qs[16 * g + i];
    a.bsums[g] = static_cast<int16_t>(sum);
  }
  return a;
}

template <class Block, class Gen>
std::vector<Block> random_blocks(int64_t n, std::mt19937& rng, Gen gen) {
  std::vector<Block> v(static_cast<size_t>(n));
  for (Block& b : v) b = gen(rng);
  return v;
}

}  // namespace ds4::quant::testing
