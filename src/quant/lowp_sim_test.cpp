// Protects: the FP8-KV and Hadamard+FP4 indexer simulations (model.md §3.4, semantics-diff §C.2).
// The grids are checked exhaustively against the format definitions, rounding against a brute-force
// nearest-code search written here independently, and the block scales against 2^ceil(log2 t)
// computed in double; edge cases: ties between grid points, amax at exact powers of two, all-zero
// and sub-floor blocks, negative zero, clamping.
#include "quant/lowp_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ds4::quant {
namespace {

// e4m3 code i in [0, 126]: E = i >> 3, M = i & 7; M * 2^-9 when E = 0, else (1 + M/8) * 2^(E-7).
double e4m3_value(int i) {
  const int e = i >> 3, m = i & 7;
  return e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
}
constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

// Nearest grid value by exhaustive search; ties go to the even code.
double nearest(double a, const std::vector<double>& grid) {
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i) {
    const double d = std::fabs(a - grid[i]), db = std::fabs(a - grid[best]);
    if (d < db || (d == db && i % 2 == 0)) best = i;
  }
  return grid[best];
}

std::vector<double> e4m3_grid() {
  std::vector<double> g;
  for (int i = 0; i <= 126; ++i) g.push_back(e4m3_value(i));
  return g;
}

TEST(QuantLowpSim, E4m3GridIsFixedAndTiesGoToTheEvenCode) {
  const auto g = e4m3_grid();
  EXPECT_EQ(g.back(), 448.0);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(e4m3_round(static_cast<float>(g[i])), static_cast<float>(g[i])) << i;
    ASSERT_EQ(e4m3_round(-static_cast<float>(g[i])), -static_cast<float>(g[i])) << i;
    if (i + 1 < g.size()) {
      const float mid = static_cast<float>((g[i] + g[i + 1]) / 2);  // exact in float
      ASSERT_EQ(e4m3_round(mid), static_cast<float>(g[i % 2 == 0 ? i : i + 1])) << i;
      ASSERT_EQ(e4m3_round(std::nextafter(mid, 0.0f)), static_cast<float>(g[i])) << i;
      ASSERT_EQ(e4m3_round(std::nextafter(mid, 1e9f)), static_cast<float>(g[i + 1])) << i;
    }
  }
  EXPECT_EQ(e4m3_round(1000.0f), 448.0f);
  EXPECT_EQ(e4m3_round(-1e30f), -448.0f);
  EXPECT_TRUE(std::signbit(e4m3_round(-0.0f)));
  EXPECT_EQ(e4m3_round(std::ldexp(1.0f, -11)), 0.0f);  // below half the smallest subnormal
}

TEST(QuantLowpSim, E4m3MatchesBruteForceOnRandomValues) {
  const auto g = e4m3_grid();
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> exp_dist(-14, 9.5);
  for (int i = 0; i < 200000; ++i) {
    const float v = static_cast<float>(std::exp2(exp_dist(rng)));
    ASSERT_EQ(e4m3_round(v), static_cast<float>(nearest(std::min<double>(v, 448.0), g))) << v;
  }
}

TEST(QuantLowpSim, E2m1GridAndTies) {
  const std::vector<double> g(std::begin(kE2m1), std::end(kE2m1));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(e2m1_round(static_cast<float>(g[i])), static_cast<float>(g[i]));
    if (i + 1 < g.size()) {
      const float mid = static_cast<float>((g[i] + g[i + 1]) / 2);
      EXPECT_EQ(e2m1_round(mid), static_cast<float>(g[i % 2 == 0 ? i : i + 1])) << mid;
      EXPECT_EQ(e2m1_round(-mid), -static_cast<float>(g[i % 2 == 0 ? i : i + 1])) << mid;
    }
  }
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-7.0f, 7.0f);
  for (int i = 0; i < 100000; ++i) {
    const float v = d(rng);
    const double want = std::copysign(nearest(std::min<double>(std::fabs(v), 6.0), g), v);
    ASSERT_EQ(e2m1_round(v), static_cast<float>(want)) << v;
  }
  EXPECT_TRUE(std::signbit(e2m1_round(-0.1f)));
}

TEST(QuantLowpSim, BlockScaleIsTheCeilPowerOfTwoOfTheFloatProduct) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> e(-20, 20);
  for (float inv : {1.0f / 448.0f, 1.0f / 6.0f}) {
    for (int i = 0; i < 100000; ++i) {
      const float amax = static_cast<float>(std::exp2(e(rng)));
      const float t = amax * inv;  // the product the kernels take the exponent bits of
      ASSERT_EQ(block_scale_pow2(amax, inv),
                static_cast<float>(std::exp2(std::ceil(std::log2(double(t))))));
    }
  }
  // amax = 6 * 2^k: t = 6 * fl(1/6) * 2^k; fl(1/6) * 6 rounds to exactly 1 in float, so scale =
  // 2^k.
  for (int k = -20; k <= 20; ++k)
    EXPECT_EQ(block_scale_pow2(std::ldexp(6.0f, k), 1.0f / 6.0f), std::ldexp(1.0f, k));
}

TEST(QuantLowpSim, Fp8KvRowKeepsRopeDimsAndPutsEachBlockOnTheScaledGrid) {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 2.0f);
  const auto g = e4m3_grid();
  for (int rep = 0; rep < 200; ++rep) {
    std::vector<float> row(512);
    for (float& v : row) v = n(rng);
    if (rep == 1) std::fill(row.begin(), row.begin() + 64, 0.0f);  // all-zero block: floor 1e-4
    if (rep == 2) std::fill(row.begin() + 64, row.begin() + 128, 1e-6f);  // below the amax floor
    const std::vector<float> orig = row;
    fp8_kv_simulate(row);
    for (int i = 448; i < 512; ++i) ASSERT_EQ(row[i], orig[i]);
    for (int b = 0; b < 7; ++b) {
      float amax = 1e-4f;
      for (int i = 0; i < 64; ++i) amax = std::max(amax, std::fabs(orig[64 * b + i]));
      const float scale = block_scale_pow2(amax, 1.0f / 448.0f);
      for (int i = 0; i < 64; ++i) {
        const float x = orig[64 * b + i] / scale;
        const double want =
            std::copysign(nearest(std::min<double>(std::fabs(x), 448.0), g), x) * scale;
        ASSERT_EQ(row[64 * b + i], static_cast<float>(want)) << rep << " " << b << " " << i;
      }
    }
  }
}

TEST(QuantLowpSim, HadamardIsTheSylvesterTransform) {
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<float> x(128), y(128);
  for (int rep = 0; rep < 50; ++rep) {
    for (float& v : x) v = static_cast<float>(d(rng));
    y = x;
    hadamard128(y);
    for (int i = 0; i < 128; ++i) {
      int64_t s = 0;  // H[i][j] = (-1)^popcount(i & j): exact integer sum
      for (int j = 0; j < 128; ++j)
        s += (__builtin_popcount(i & j) % 2 ? -1 : 1) * static_cast<int64_t>(x[j]);
      ASSERT_EQ(y[i], static_cast<float>(s) * 0.08838834764831845f) << i;
    }
    hadamard128(y);  // orthonormal and symmetric: applying it twice gives x back
    for (int i = 0; i < 128; ++i) ASSERT_NEAR(y[i], x[i], 1e-5f * 16);
  }
}

TEST(QuantLowpSim, IndexerFp4PutsEveryBlockOnTheScaledE2m1Grid) {
  std::mt19937 rng(8);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::vector<double> g(std::begin(kE2m1), std::end(kE2m1));
  for (int rep = 0; rep < 200; ++rep) {
    std::vector<float> x(128);
    for (float& v : x) v = rep == 0 ? 0.0f : n(rng);
    std::vector<float> h = x;
    hadamard128(h);
    indexer_fp4_simulate(x);
    for (int b = 0; b < 4; ++b) {
      float amax = 6.0f * std::ldexp(1.0f, -126);
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(h[32 * b + i]));
      const float scale = block_scale_pow2(amax, 1.0f / 6.0f);
      for (int i = 0; i < 32; ++i) {
        const float v = h[32 * b + i] / scale;
        const double want =
            std::copysign(nearest(std::min<double>(std::fabs(v), 6.0), g), v) * scale;
        ASSERT_EQ(x[32 * b + i], static_cast<float>(want)) << rep;
      }
    }
  }
}

}  // namespace
}  // namespace ds4::quant
