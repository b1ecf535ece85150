// src/quant/activation_test.cpp: the activation encoders follow model.md §3.3 bit for bit.
#include "quant/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/quant_test_util.h"

namespace ds4::quant {
namespace {

// Protects: an all-zero block gives d = 0 and zero codes (no division by zero).
TEST(QuantActivation, Q8_0AllZeroBlock) {
  std::vector<float> x(64, 0.0f);
  x[40] = 3.0f;  // second block not zero
  ActQ8_0 out[2];
  quantize_act_q8_0(x.data(), out, 64);
  EXPECT_EQ(out[0].d, 0.0f);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[0].qs[i], 0);
  EXPECT_EQ(out[1].d, 3.0f / 127.0f);
  EXPECT_EQ(out[1].qs[8], 127);
}

// Protects: d stays float32 (amax / 127, not rounded to f16) and rounding is half-to-even
// (lrintf), unlike ggml's roundf. amax = 127 makes d = 1, so x * id = x exactly.
TEST(QuantActivation, Q8_0TiesRoundToEven) {
  float x[32] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, 126.5f, -126.5f};
  ActQ8_0 out;
  quantize_act_q8_0(x, &out, 32);
  EXPECT_EQ(out.d, 1.0f);
  const int expect[10] = {127, 0, 2, 2, 0, -2, -2, 4, 126, -126};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(out.qs[i], expect[i]) << i;

  float y[32] = {1.0f};
  quantize_act_q8_0(y, &out, 32);
  EXPECT_EQ(out.d, 1.0f / 127.0f);  // not f16-representable: proves no f16 rounding
}

// Protects: Q8_K takes the first element of largest magnitude (strict >) and maps it to -127.
TEST(QuantActivation, Q8KFirstOccurrenceMaxMapsToMinus127) {
  std::vector<float> x(256, 0.0f);
  x[3] = -2.0f;
  x[10] = 2.0f;
  x[20] = 1.0f;
  BlockQ8_K out;
  quantize_act_q8_k(x.data(), &out, 256);
  EXPECT_EQ(out.qs[3], -127);  // max = -2 -> iscale = 63.5
  EXPECT_EQ(out.qs[10], 127);
  EXPECT_EQ(out.qs[20], 64);  // 63.5 -> 64 (tie to even)
  EXPECT_EQ(out.d, 1.0f / 63.5f);

  x[3] = 2.0f;
  x[10] = -2.0f;
  quantize_act_q8_k(x.data(), &out, 256);
  EXPECT_EQ(out.qs[3], -127);  // max = +2 -> iscale = -63.5
  EXPECT_EQ(out.qs[10], 127);
  EXPECT_EQ(out.qs[20], -64);  // -63.5 -> -64
  EXPECT_EQ(out.d, 1.0f / -63.5f);
}

// Protects: Q8_K ties to even, bsums, and the all-zero block.
TEST(QuantActivation, Q8KTiesBsumsAndZeroBlock) {
  std::vector<float> x(512, 0.0f);
  x[0] = -127.0f;  // iscale = 1
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -0.5f;
  x[17] = 100.0f;
  BlockQ8_K out[2];
  quantize_act_q8_k(x.data(), out, 512);
  EXPECT_EQ(out[0].d, 1.0f);
  EXPECT_EQ(out[0].qs[1], 2);
  EXPECT_EQ(out[0].qs[2], 4);
  EXPECT_EQ(out[0].qs[3], 0);
  EXPECT_EQ(out[0].bsums[0], -127 + 2 + 4);
  EXPECT_EQ(out[0].bsums[1], 100);
  EXPECT_EQ(out[1].d, 0.0f);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(out[1].qs[i], 0);
  for (int g = 0; g < 16; ++g) EXPECT_EQ(out[1].bsums[g], 0);
}

// Protects: the range [-127, 127] that the AVX2 kernels rely on (the clamp to -128 is never
// reached from finite input), the +-127 code of the largest element, and the bsums identity,
// over random blocks of very different magnitudes.
TEST(QuantActivation, RandomBlocksStayInRangeAndReachMax) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const float sigma = std::ldexp(1.0f, std::uniform_int_distribution<int>(-30, 30)(rng));
    const std::vector<float> x = testing::gaussian(256, 1000 + trial, sigma);
    ActQ8_0 a[8];
    quantize_act_q8_0(x.data(), a, 256);
    for (int b = 0; b < 8; ++b) {
      int largest = 0;
      for (int i = 0; i < 32; ++i) {
        ASSERT_GE(a[b].qs[i], -127);
        largest = std::max(largest, std::abs(int{a[b].qs[i]}));
      }
      EXPECT_EQ(largest, 127);
    }
    BlockQ8_K k;
    quantize_act_q8_k(x.data(), &k, 256);
    int minimum = 0;
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) {
        ASSERT_GE(k.qs[16 * g + i], -127);
        sum += k.qs[16 * g + i];
        minimum = std::min(minimum, int{k.qs[16 * g + i]});
      }
      EXPECT_EQ(k.bsums[g], sum);
    }
    EXPECT_EQ(minimum, -127);
  }
}

}  // namespace
}  // namespace ds4::quant
