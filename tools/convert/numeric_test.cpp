// tools/convert/numeric_test.cpp: FP8 e4m3, E8M0 and FP4 e2m1 decoding against values derived
// from the format definitions (semantics-diff.md B.2), and the block/group scale geometry.
#include "tools/convert/numeric.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace ds4::convert {
namespace {

// e4m3 by bit placement: a normal code's exponent field e (bias 7) becomes f32 exponent e + 120
// and its 3 mantissa bits the top of the f32 mantissa; a subnormal is m / 512.
float e4m3_by_bits(uint8_t c) {
  const uint32_t s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return 0.0f;
  const float mag =
      e == 0 ? static_cast<float>(m) / 512.0f : std::bit_cast<float>(((e + 120) << 23) | (m << 20));
  return s ? -mag : mag;
}

TEST(Numeric, EveryE4m3Code) {
  for (int c = 0; c < 256; ++c) {
    const float got = e4m3_to_f32(static_cast<uint8_t>(c));
    EXPECT_EQ(std::bit_cast<uint32_t>(std::fabs(got)),
              std::bit_cast<uint32_t>(std::fabs(e4m3_by_bits(static_cast<uint8_t>(c)))))
        << "code " << c;
    if (got != 0.0f) {
      EXPECT_EQ(std::signbit(got), c >= 128);
    }
  }
  EXPECT_EQ(e4m3_to_f32(0x00), 0.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_f32(0x07), 7.0f / 512.0f);         // largest subnormal
  EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_f32(0xb8), -1.0f);
  EXPECT_EQ(e4m3_to_f32(0x3c), 1.5f);
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);  // largest finite
  EXPECT_EQ(e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(e4m3_to_f32(0x7f), 0.0f);  // NaN codes map to 0
  EXPECT_EQ(e4m3_to_f32(0xff), 0.0f);
  EXPECT_EQ(e4m3_to_f32(0x78), 256.0f);  // exponent 15 is finite in the FN variant
}

TEST(Numeric, E2m1Table) {
  const float want[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(e2m1_to_f32(static_cast<uint8_t>(c)), want[c]);
    EXPECT_EQ(e2m1_to_f32(static_cast<uint8_t>(c | 8)), -want[c]);
  }
}

TEST(Numeric, E8m0) {
  EXPECT_EQ(e8m0_to_f64(127), 1.0);
  EXPECT_EQ(e8m0_to_f64(128), 2.0);
  EXPECT_EQ(e8m0_to_f64(126), 0.5);
  EXPECT_EQ(e8m0_to_f64(0), std::ldexp(1.0, -127));
  EXPECT_EQ(e8m0_to_f64(254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(e8m0_to_f64(255)));
}

TensorView view(const char* name, Dtype dt, std::vector<int64_t> shape,
                const std::vector<uint8_t>& bytes) {
  return TensorView{name, dt, std::move(shape), bytes};
}

TEST(Numeric, Fp8BlockScalesWithPartialBlocks) {
  const int64_t rows = 130, cols = 200;  // 2 x 2 blocks, the last ones partial
  std::vector<uint8_t> w(rows * cols);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 37 + 11);
  const std::vector<uint8_t> sc = {127, 130, 120, 0};  // 1, 8, 2^-7, 2^-127
  const TensorView wv = view("x.weight", Dtype::kF8E4M3, {rows, cols}, w);
  const TensorView sv = view("x.scale", Dtype::kF8E8M0, {2, 2}, sc);
  auto m = describe_source(wv, &sv);
  ASSERT_TRUE(m) << m.status().to_string();
  EXPECT_EQ(m->rows, rows);
  EXPECT_EQ(m->cols, cols);
  std::vector<float> out(rows * cols);
  ASSERT_TRUE(decode_rows(*m, 0, rows, out.data()).is_ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double s = std::ldexp(1.0, sc[static_cast<size_t>((r / 128) * 2 + c / 128)] - 127);
      const float want = static_cast<float>(e4m3_by_bits(w[static_cast<size_t>(r * cols + c)]) * s);
      ASSERT_EQ(out[static_cast<size_t>(r * cols + c)], want) << r << "," << c;
    }
  }
  // A partial read returns the same rows.
  std::vector<float> part(3 * cols);
  ASSERT_TRUE(decode_rows(*m, 127, 3, part.data()).is_ok());
  EXPECT_EQ(0, std::memcmp(part.data(), out.data() + 127 * cols, part.size() * 4));
  // A NaN scale is an error.
  const std::vector<uint8_t> nan_sc = {127, 255, 127, 127};
  const TensorView nv = view("x.scale", Dtype::kF8E8M0, {2, 2}, nan_sc);
  auto bad = describe_source(wv, &nv);
  ASSERT_TRUE(bad);
  EXPECT_FALSE(decode_rows(*bad, 0, 1, out.data()).is_ok());
}

TEST(Numeric, Fp8WithF32Scale) {
  const std::vector<uint8_t> w = {0x38, 0x40, 0xb8, 0x7f};  // 1, 2, -1, NaN->0
  float s = 0.25f;
  std::vector<uint8_t> sb(4);
  std::memcpy(sb.data(), &s, 4);
  const TensorView wv = view("y.weight", Dtype::kF8E4M3, {2, 2}, w);
  const TensorView sv = view("y.weight_scale_inv", Dtype::kF32, {1, 1}, sb);
  auto m = describe_source(wv, &sv);
  ASSERT_TRUE(m);
  float out[4];
  ASSERT_TRUE(decode_rows(*m, 0, 2, out).is_ok());
  EXPECT_EQ(out[0], 0.25f);
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(out[2], -0.25f);
  EXPECT_EQ(out[3], 0.0f);
}

TEST(Numeric, Fp4LowNibbleIsEvenColumn) {
  // 2 rows x 64 columns: 32 packed bytes per row, 2 scale groups per row.
  std::vector<uint8_t> w(2 * 32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>((i * 5 + 3) & 0xff);
  const std::vector<uint8_t> sc = {127, 129, 125, 127};  // 1, 4, 1/4, 1
  const TensorView wv = view("e.w1.weight", Dtype::kI8, {2, 32}, w);
  const TensorView sv = view("e.w1.scale", Dtype::kF8E8M0, {2, 2}, sc);
  auto m = describe_source(wv, &sv);
  ASSERT_TRUE(m) << m.status().to_string();
  EXPECT_EQ(m->cols, 64);
  std::vector<float> out(128);
  ASSERT_TRUE(decode_rows(*m, 0, 2, out.data()).is_ok());
  const float table[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 64; ++c) {
      const uint8_t byte = w[static_cast<size_t>(r * 32 + c / 2)];
      const uint8_t nib = c % 2 == 0 ? byte & 0xf : byte >> 4;
      const float v = (nib & 8 ? -1.0f : 1.0f) * table[nib & 7];
      const float s =
          static_cast<float>(std::ldexp(1.0, sc[static_cast<size_t>(r * 2 + c / 32)] - 127));
      EXPECT_EQ(out[static_cast<size_t>(r * 64 + c)], v * s) << r << "," << c;
    }
  }
}

TEST(Numeric, ShapeAndDtypeErrors) {
  const std::vector<uint8_t> w(4 * 32), s(4 * 2), s_bad(3);
  const TensorView fp4 = view("w", Dtype::kI8, {4, 32}, w);
  const TensorView sc = view("w.scale", Dtype::kF8E8M0, {4, 2}, s);
  const TensorView sc_wrong = view("w.scale", Dtype::kF8E8M0, {3, 1}, s_bad);
  const TensorView sc_dtype = view("w.scale", Dtype::kBF16, {4, 1}, s);
  EXPECT_TRUE(describe_source(fp4, &sc));
  EXPECT_FALSE(describe_source(fp4, nullptr));    // no scale
  EXPECT_FALSE(describe_source(fp4, &sc_wrong));  // wrong scale shape
  EXPECT_FALSE(describe_source(fp4, &sc_dtype));  // wrong scale dtype
  const TensorView fp8 = view("w", Dtype::kF8E4M3, {4, 32}, w);
  EXPECT_FALSE(describe_source(fp8, &sc));  // FP8 needs [1,1]
  const TensorView f32 = view("w", Dtype::kF32, {8, 4}, w);
  EXPECT_TRUE(describe_source(f32, nullptr));
  EXPECT_FALSE(describe_source(f32, &sc));  // plain float with a scale
  const TensorView i32 = view("w", Dtype::kI32, {8, 4}, w);
  EXPECT_FALSE(describe_source(i32, nullptr));  // not a float format
}

}  // namespace
}  // namespace ds4::convert
