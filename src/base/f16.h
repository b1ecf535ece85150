// src/base/f16.h: exact scalar conversions between float32 and the 16-bit float formats.
// Owns: IEEE binary16 and bfloat16 encode/decode (model.md §3.1), bit-exact and branch-explicit.
// Does not own: FP8/FP4 activation simulations (model math, in model/ or quant/).
//
// f32 -> f16 rounds to nearest, ties to even, including subnormal results; values below half the
// smallest subnormal flush to signed zero; overflow gives signed infinity; NaN becomes a quiet NaN
// with the sign kept (sign | 0x7e00). These are the rules the GGUF files were written with.
#pragma once

#include <bit>
#include <cstdint>

namespace ds4 {

constexpr float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalise into a float32 normal.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(112 - e) << 23) |
                              ((mant & 0x3ffu) << 13));
}

constexpr uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | (mant != 0 ? 0x7e00u : 0x7c00u));
  const int e = static_cast<int>(exp) - 127 + 15;  // biased half exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return sign;  // below half of the smallest subnormal: signed zero
    mant |= 0x800000u;         // make the implicit bit explicit
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;  // may carry into the exponent
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half;  // carry may reach infinity: correct
  return static_cast<uint16_t>(sign | half);
}

// f16(x) in model.md's notation: the float32 value after a round trip through binary16.
constexpr float f16_round(float f) { return f16_to_f32(f32_to_f16(f)); }

constexpr float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

constexpr uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace ds4
