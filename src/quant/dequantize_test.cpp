// src/quant/dequantize_test.cpp: decoders against values computed by hand from model.md §3.2.
#include "quant/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quant/iq2_tables.h"

namespace ds4::quant {
namespace {

using gguf::GgufType;

constexpr uint16_t kF16One = 0x3C00;      // 1.0
constexpr uint16_t kF16Half = 0x3800;     // 0.5
constexpr uint16_t kF16Quarter = 0x3400;  // 0.25

// Protects: plain float formats (bit patterns decoded by hand).
TEST(QuantDequantize, PlainFloatFormats) {
  const uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};  // 1, -2, 2^-24, 65504
  float out[4];
  ASSERT_TRUE(dequantize(GgufType::kF16, h, out, 4).is_ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 0x1p-24f);
  EXPECT_EQ(out[3], 65504.0f);
  const uint16_t bf[2] = {0x3F80, 0xC0A0};  // 1, -5
  ASSERT_TRUE(dequantize(GgufType::kBF16, bf, out, 2).is_ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -5.0f);
  const float f[2] = {3.25f, -0.0f};
  ASSERT_TRUE(dequantize(GgufType::kF32, f, out, 2).is_ok());
  EXPECT_EQ(out[0], 3.25f);
  EXPECT_TRUE(std::signbit(out[1]));
}

// Protects: Q8_0 x = f16(d) * q.
TEST(QuantDequantize, Q8_0HandBuiltBlock) {
  BlockQ8_0 b{};
  b.d = kF16Half;
  b.qs[0] = -128;
  b.qs[1] = -1;
  b.qs[3] = 1;
  b.qs[31] = 127;
  float out[32];
  ASSERT_TRUE(dequantize(GgufType::kQ8_0, &b, out, 32).is_ok());
  EXPECT_EQ(out[0], -64.0f);
  EXPECT_EQ(out[1], -0.5f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 0.5f);
  EXPECT_EQ(out[31], 63.5f);
}

// Protects: Q8_K x = d * q with float32 d.
TEST(QuantDequantize, Q8KHandBuiltBlock) {
  BlockQ8_K b{};
  b.d = 0.25f;
  b.qs[0] = -127;
  b.qs[255] = 5;
  std::vector<float> out(256);
  ASSERT_TRUE(dequantize(GgufType::kQ8_K, &b, out.data(), 256).is_ok());
  EXPECT_EQ(out[0], -31.75f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[255], 1.25f);
}

// Protects: Q2_K addressing and x = d * (sc & 15) * q - dmin * (sc >> 4). Every qs byte is
// 0b11100100, so the 2-bit code of element e is j = (e % 128) / 32. scales[s] = s | ((s+3)%16 <<
// 4).
TEST(QuantDequantize, Q2KHandBuiltBlock) {
  BlockQ2_K b{};
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(s | (((s + 3) & 15) << 4));
  for (uint8_t& q : b.qs) q = 0xE4;
  b.d = kF16One;
  b.dmin = kF16Half;
  std::vector<float> out(256);
  ASSERT_TRUE(dequantize(GgufType::kQ2_K, &b, out.data(), 256).is_ok());
  EXPECT_EQ(out[0], -1.5f);    // s 0: sc 0, m 3, q 0
  EXPECT_EQ(out[40], -0.5f);   // s 2: sc 2, m 5, q 1 -> 2 - 2.5
  EXPECT_EQ(out[100], 13.5f);  // s 6: sc 6, m 9, q 3 -> 18 - 4.5
  EXPECT_EQ(out[144], -6.0f);  // s 9: sc 9, m 12, q 0
  EXPECT_EQ(out[255], 44.0f);  // s 15: sc 15, m 2, q 3 -> 45 - 1
}

// Protects: Q4_K 6-bit scale packing, nibble order and x = d * sc * q - dmin * m.
// Scales as in QuantBlocks.Q4KScaleMinUnpacksHandPackedBytes; qs bytes 0xA5 give code 5 in even
// sub-blocks (low nibble) and 10 in odd ones.
TEST(QuantDequantize, Q4KHandBuiltBlock) {
  BlockQ4_K b{};
  const uint8_t scales[12] = {129, 130, 195, 196, 69, 134, 199, 200, 17, 143, 46, 255};
  for (int i = 0; i < 12; ++i) b.scales[i] = scales[i];
  for (uint8_t& q : b.qs) q = 0xA5;
  b.d = kF16One;
  b.dmin = kF16Quarter;
  std::vector<float> out(256);
  ASSERT_TRUE(dequantize(GgufType::kQ4_K, &b, out.data(), 256).is_ok());
  EXPECT_EQ(out[0], 3.75f);      // j0: 1 * 5 - 0.25 * 5
  EXPECT_EQ(out[32], 18.5f);     // j1: 2 * 10 - 0.25 * 6
  EXPECT_EQ(out[130], 160.75f);  // j4: 33 * 5 - 0.25 * 17
  EXPECT_EQ(out[255], 614.25f);  // j7: 63 * 10 - 0.25 * 63
}

// Protects: IQ2_XXS group decoding. Group 0: grid {0, 1, 255, 2}, sign indices {0, 1, 127, 3},
// s = 3 -> step = 1 * 3.5 * 0.25 = 0.875, so magnitudes 8, 25, 43 decode to 7, 21.875, 37.625.
// The other groups are all-zero headers: grid 0, no signs, s = 0 -> 8 * 0.125 = 1.
TEST(QuantDequantize, Iq2XxsHandBuiltBlock) {
  BlockIQ2_XXS b{};
  b.d = kF16One;
  set_iq2xxs_group(b, 0, Iq2xxsGroup{{0, 1, 255, 2}, {0, 1, 127, 3}, 3});
  std::vector<float> out(256);
  ASSERT_TRUE(dequantize(GgufType::kIQ2_XXS, &b, out.data(), 256).is_ok());
  for (int j = 0; j < 8; ++j) EXPECT_EQ(out[j], 7.0f) << j;  // grid 0, signs 0
  // grid 1 = 0x...082b: element 0 is 43; sign index 1 -> pattern 129: elements 0 and 7 negative
  const float sub1[8] = {-37.625f, 7, 7, 7, 7, 7, 7, -7};
  // grid 255 = 0x2b2b2b1908081908; sign index 127 -> all negative
  const float sub2[8] = {-7, -21.875f, -7, -7, -21.875f, -37.625f, -37.625f, -37.625f};
  // grid 2 = 0x...1919: elements 0, 1 are 25; sign index 3 -> elements 0, 1 negative
  const float sub3[8] = {-21.875f, -21.875f, 7, 7, 7, 7, 7, 7};
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(out[8 + j], sub1[j]) << j;
    EXPECT_EQ(out[16 + j], sub2[j]) << j;
    EXPECT_EQ(out[24 + j], sub3[j]) << j;
  }
  for (int e = 32; e < 256; ++e) EXPECT_EQ(out[e], 1.0f) << e;
}

// Protects: the Status contract of dequantize().
TEST(QuantDequantize, ErrorsAreStatuses) {
  float out[64];
  const uint8_t bytes[64] = {};
  EXPECT_EQ(dequantize(GgufType::kQ4_0, bytes, out, 32).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(dequantize(GgufType::kQ8_0, bytes, out, 31).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize(GgufType::kQ2_K, bytes, out, 128).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(dequantize(GgufType::kQ2_K, bytes, out, 0).is_ok());
  EXPECT_FALSE(can_dequantize(GgufType::kQ6_K));
}

}  // namespace
}  // namespace ds4::quant
