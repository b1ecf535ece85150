// Protects: the deterministic transcendentals (det_math.h) are accurate: expf within 2 ulp of the
// correctly rounded value, sin/cos within half an ulp of 1, log1p within 1 ulp, over the ranges
// the model uses.
#include "base/det_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

namespace ds4::detmath {
namespace {

// Distance in units in the last place between a float and the exact (double) value.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  if (w == 0.0f) return std::fabs(got) / std::ldexp(1.0, -149);
  const double ulp = std::max(std::ldexp(1.0, std::ilogb(w) - 23), std::ldexp(1.0, -149));
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(DetMath, ExpIsWithinTwoUlps) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-103.0f, 88.7f);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = i < 100000 ? u(rng) : std::ldexp(u(rng), -12);  // also near 0
    worst = std::max(worst, ulps(expf(x), std::exp(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(expf(0.0f), 1.0f);
  EXPECT_EQ(expf(-200.0f), 0.0f);
  EXPECT_TRUE(std::isinf(expf(100.0f)));
  EXPECT_TRUE(std::isnan(expf(std::nanf(""))));
}

TEST(DetMath, SinCosAreRoundedOnceUpToRopeAngles) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> mag(-6, 6.02);  // |x| up to 10^6: 1M-token RoPE angles
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = static_cast<float>((i % 2 ? -1 : 1) * std::pow(10.0, mag(rng)));
    float s, c;
    sincosf(x, &s, &c);
    // Rounded once from double: within half an ulp of the value, so within 2^-25 absolutely.
    const double sd = std::sin(static_cast<double>(x)), cd = std::cos(static_cast<double>(x));
    worst = std::max({worst, std::fabs(s - sd), std::fabs(c - cd)});
  }
  EXPECT_LE(worst, std::ldexp(1.0, -25) * 1.0001);
}

TEST(DetMath, Log1pIsWithinOneUlp) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> e(-20.0f, 20.0f);
  double worst = 0;
  for (int i = 0; i < 100000; ++i) {
    const float y = std::exp(e(rng));
    worst = std::max(worst, ulps(log1pf(y), std::log1p(static_cast<double>(y))));
  }
  EXPECT_LE(worst, 1.0);
  EXPECT_EQ(log1pf(0.0f), 0.0f);
}

}  // namespace
}  // namespace ds4::detmath
