// src/quant/quantize_test.cpp: encoders round-trip within measured error bounds, honour importance
// weights, and report bad arguments as Status.
#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/types.h"
#include "quant/activation.h"
#include "quant/dequantize.h"
#include "quant/quant_test_util.h"

namespace ds4::quant {
namespace {

using gguf::GgufType;

constexpr int64_t kRows = 8;
constexpr int64_t kCols = 2048;

// Relative RMS error bounds, rms(dequant(quant(x)) - x) / rms(x), on N(0, 1) data. Each is the
// value measured when the encoders were written (docs/quant.md) plus about 5% headroom: a real
// regression in the search moves these by much more, while a harmless change of seed does not.
constexpr double kMaxRelRmsQ8_0 = 0.0055;
constexpr double kMaxRelRmsQ4_K = 0.073;
constexpr double kMaxRelRmsQ2_K = 0.274;
constexpr double kMaxRelRmsIq2Xxs = 0.347;
constexpr double kMaxRelRmsF16 = 2.5e-4;   // measured 2.1e-4 (11-bit significand)
constexpr double kMaxRelRmsBf16 = 1.8e-3;  // measured 1.66e-3 (8-bit significand)

size_t bytes_for(GgufType t, int64_t rows, int64_t cols) {
  return static_cast<size_t>(*gguf::byte_size(t, static_cast<uint64_t>(rows * cols)));
}

std::vector<float> round_trip(GgufType t, const std::vector<float>& x, int64_t rows, int64_t cols,
                              const float* importance, base::ThreadPool* pool = nullptr) {
  std::vector<uint8_t> q(bytes_for(t, rows, cols));
  EXPECT_TRUE(quantize_rows(t, x.data(), q.data(), rows, cols, importance, pool).is_ok());
  std::vector<float> y(x.size());
  EXPECT_TRUE(dequantize(t, q.data(), y.data(), rows * cols).is_ok());
  return y;
}

double rel_rms(const std::vector<float>& x, const std::vector<float>& y) {
  double se = 0.0, sx = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    se += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    sx += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / sx);
}

struct FormatBound {
  GgufType type;
  double max_rel_rms;
};
constexpr FormatBound kBounds[] = {
    {GgufType::kF16, kMaxRelRmsF16},   {GgufType::kBF16, kMaxRelRmsBf16},
    {GgufType::kQ8_0, kMaxRelRmsQ8_0}, {GgufType::kQ4_K, kMaxRelRmsQ4_K},
    {GgufType::kQ2_K, kMaxRelRmsQ2_K}, {GgufType::kIQ2_XXS, kMaxRelRmsIq2Xxs},
};

// Protects: the quality of every encoder on Gaussian weights (the shape of real weight rows).
TEST(QuantEncode, GaussianRoundTripErrorWithinMeasuredBounds) {
  const std::vector<float> x = testing::gaussian(kRows * kCols, 42);
  for (const FormatBound& f : kBounds) {
    const double err = rel_rms(x, round_trip(f.type, x, kRows, kCols, nullptr));
    std::printf("  %-8s relative rms error %.5f\n", std::string(gguf::to_string(f.type)).c_str(),
                err);
    EXPECT_LT(err, f.max_rel_rms) << gguf::to_string(f.type);
  }
}

// Protects: F32 storage is lossless and Q8_K storage equals the activation rule.
TEST(QuantEncode, F32IsExactAndQ8KIsTheActivationRule) {
  const std::vector<float> x = testing::gaussian(512, 3);
  EXPECT_EQ(round_trip(GgufType::kF32, x, 1, 512, nullptr), x);
  std::vector<BlockQ8_K> a(2), b(2);
  ASSERT_TRUE(quantize_rows(GgufType::kQ8_K, x.data(), a.data(), 1, 512, nullptr).is_ok());
  quantize_act_q8_k(x.data(), b.data(), 512);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(BlockQ8_K) * 2), 0);
}

// Sum over the emphasised columns of the squared error.
double emphasised_error(const std::vector<float>& x, const std::vector<float>& y,
                        const std::vector<float>& importance, int64_t cols) {
  double e = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (importance[i % static_cast<size_t>(cols)] > 1.0f) {
      e += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    }
  }
  return e;
}

// Minimum improvement on the emphasised columns when one column in 8 weighs 100x: measured
// reductions are reported by the test; the bounds keep a wide margin below them.
struct ImportanceBound {
  GgufType type;
  double max_ratio;  // error with importance / error without, on the emphasised columns
};
constexpr ImportanceBound kImportanceBounds[] = {
    {GgufType::kQ8_0, 0.95},    // measured 0.78: only the scale refit sees weights
    {GgufType::kQ4_K, 0.5},     // measured 0.31
    {GgufType::kQ2_K, 0.5},     // measured 0.07
    {GgufType::kIQ2_XXS, 0.5},  // measured 0.34
};

// Protects: the importance vector steers the error towards unimportant columns.
TEST(QuantEncode, ImportanceReducesErrorOnEmphasisedColumns) {
  const int64_t rows = 4;
  const std::vector<float> x = testing::gaussian(rows * kCols, 11);
  std::vector<float> importance(static_cast<size_t>(kCols), 1.0f);
  for (int64_t c = 5; c < kCols; c += 8) importance[static_cast<size_t>(c)] = 100.0f;
  for (const ImportanceBound& f : kImportanceBounds) {
    const double plain =
        emphasised_error(x, round_trip(f.type, x, rows, kCols, nullptr), importance, kCols);
    const double weighted = emphasised_error(
        x, round_trip(f.type, x, rows, kCols, importance.data()), importance, kCols);
    std::printf("  %-8s emphasised-column error ratio %.3f\n",
                std::string(gguf::to_string(f.type)).c_str(), weighted / plain);
    EXPECT_LE(weighted, plain * f.max_ratio) << gguf::to_string(f.type);
  }
}

// Protects: degenerate rows (zeros, constants, zero importance) decode sensibly.
TEST(QuantEncode, DegenerateRows) {
  const std::vector<float> zeros(512, 0.0f);
  const std::vector<float> zero_importance(512, 0.0f);
  for (const FormatBound& f : kBounds) {
    EXPECT_EQ(round_trip(f.type, zeros, 1, 512, nullptr), zeros) << gguf::to_string(f.type);
    EXPECT_EQ(round_trip(f.type, zeros, 1, 512, zero_importance.data()), zeros);
  }
  const std::vector<float> constant(512, -0.75f);
  for (GgufType t : {GgufType::kQ8_0, GgufType::kQ4_K, GgufType::kQ2_K}) {
    const std::vector<float> y = round_trip(t, constant, 1, 512, nullptr);
    for (float v : y) ASSERT_NEAR(v, -0.75f, 2e-3f) << gguf::to_string(t);
  }
}

// Protects: rows are independent, so a thread pool gives the same bytes.
TEST(QuantEncode, ThreadPoolGivesIdenticalBytes) {
  const std::vector<float> x = testing::gaussian(8 * 512, 5);
  base::ThreadPool pool(2);
  for (GgufType t : {GgufType::kQ8_0, GgufType::kQ4_K, GgufType::kQ2_K, GgufType::kIQ2_XXS}) {
    EXPECT_EQ(round_trip(t, x, 8, 512, nullptr), round_trip(t, x, 8, 512, nullptr, &pool));
  }
}

// Protects: the Status contract of quantize_rows().
TEST(QuantEncode, ErrorsAreStatuses) {
  std::vector<float> x(512, 1.0f);
  std::vector<uint8_t> out(4096);
  EXPECT_EQ(quantize_rows(GgufType::kQ6_K, x.data(), out.data(), 1, 256, nullptr).code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(quantize_rows(GgufType::kQ2_K, x.data(), out.data(), 1, 100, nullptr).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> bad(512, 1.0f);
  bad[7] = -1.0f;
  EXPECT_EQ(quantize_rows(GgufType::kQ8_0, x.data(), out.data(), 1, 512, bad.data()).code(),
            StatusCode::kInvalidArgument);
  bad[7] = NAN;
  EXPECT_EQ(quantize_rows(GgufType::kQ8_0, x.data(), out.data(), 1, 512, bad.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(can_quantize(GgufType::kIQ2_XXS));
  EXPECT_FALSE(can_quantize(GgufType::kQ4_0));
}

}  // namespace
}  // namespace ds4::quant
