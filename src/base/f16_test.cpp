// Protects: the f16/bf16 conversions every quant format and KV row depends on.
// Oracle: the CPU's own F16C conversion instructions (vcvtps2ph with round-to-nearest-even,
// vcvtph2ps), an implementation nobody here wrote; skipped where the CPU lacks F16C.
#include "base/f16.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "base/cpu_features.h"

namespace ds4 {
namespace {

__attribute__((target("f16c"))) uint16_t hw_f32_to_f16(float f) {
  const __m128i h = _mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return static_cast<uint16_t>(_mm_extract_epi16(h, 0));
}
__attribute__((target("f16c"))) float hw_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

bool have_f16c() { return base::cpu_features().f16c; }

TEST(F16, DecodeEveryHalfMatchesHardware) {
  if (!have_f16c()) GTEST_SKIP() << "CPU has no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = f16_to_f32(static_cast<uint16_t>(h));
    const float hw = hw_f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(ours)) << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(hw)) << h;
    }
  }
}

TEST(F16, EncodeMatchesHardwareOnEdgesAndRandomFloats) {
  if (!have_f16c()) GTEST_SKIP() << "CPU has no F16C";
  // Every float whose exponent lies in or near the half range, sampled densely around each
  // exponent, plus random bit patterns over the full float32 space.
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 2'000'000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    if (i % 2 == 0) {  // focus on exponents 100..145: subnormal halves, normals, overflow
      const uint32_t exp = 100 + static_cast<uint32_t>(rng() % 46);
      bits = (bits & 0x807fffffu) | (exp << 23);
    }
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), hw_f32_to_f16(f)) << std::hex << bits;
  }
  // Exact ties around the subnormal and overflow boundaries.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = f16_to_f32(static_cast<uint16_t>(h));
    const float hi = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = std::midpoint(lo, hi);  // exact in float32
    ASSERT_EQ(f32_to_f16(mid), hw_f32_to_f16(mid)) << h;
    ASSERT_EQ(f32_to_f16(-mid), hw_f32_to_f16(-mid)) << h;
  }
}

TEST(F16, SpecialValuesFollowTheSpec) {
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // halfway to the next binade rounds to infinity
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);   // tie to even: zero
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -26)), 0x8000);  // flush keeps the sign
  EXPECT_EQ(f32_to_f16(std::nanf("")), 0x7e00);
  EXPECT_EQ(f32_to_f16(-std::nanf("")), 0xfe00);
  EXPECT_EQ(f16_round(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie goes to even mantissa
}

TEST(Bf16, RoundTripAndRounding) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1+2^-7: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h);
  }
}

}  // namespace
}  // namespace ds4
