// src/backend/cpu/axpy_test.cpp: the fused axpy rounds once per element, and the AVX2 version
// gives the scalar definition's bits.
#include "backend/cpu/axpy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace ds4::backend::cpu {
namespace {

TEST(AxpyFma, RoundsOncePerElement) {
  // a * x = 1 + 2^-11 + 2^-24 exactly; y = -(1 + 2^-11): the fused result keeps the 2^-24 that a
  // separate multiply (rounded to 1 + 2^-11) would lose.
  const float e = std::ldexp(1.0f, -12);
  const float x[1] = {1.0f + e};
  float y[1] = {-(1.0f + 2.0f * e)};
  axpy_fma_ref(1.0f + e, x, y, 1);
  EXPECT_EQ(y[0], std::ldexp(1.0f, -24));
  float z[1] = {-(1.0f + 2.0f * e)};
  best_axpy_fma()(1.0f + e, x, z, 1);
  EXPECT_EQ(z[0], y[0]);
}

TEST(AxpyFma, Avx2MatchesTheDefinitionBitForBit) {
  const AxpyFn fast = axpy_fma_avx2();
  if (fast == nullptr) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (int n : {1, 7, 8, 9, 512, 515}) {
    std::vector<float> x(n), y0(n);
    for (int i = 0; i < n; ++i) {
      x[i] = nd(rng);
      y0[i] = nd(rng) * 3.0f;
    }
    x[0] = std::numeric_limits<float>::denorm_min();  // subnormal and large values too
    if (n > 2) x[n - 1] = 3.0e38f;
    for (float a : {0.0f, 1.0f, 0.37f, -1.0e-3f, 6.0e-39f}) {
      std::vector<float> ya = y0, yb = y0;
      axpy_fma_ref(a, x.data(), ya.data(), n);
      fast(a, x.data(), yb.data(), n);
      EXPECT_EQ(std::memcmp(ya.data(), yb.data(), sizeof(float) * n), 0) << "n " << n << " a " << a;
    }
  }
}

}  // namespace
}  // namespace ds4::backend::cpu
