// src/backend/cuda/kernels/ordered_key_test.cpp: the ordered keys of ordered_key.h on the host:
// keys order as their floats do (signed zeros, subnormals, infinities, random values of every
// magnitude), every key maps back to its float bit for bit, and a zeroed key is below them all.
// Runs without a GPU.
#include "backend/cuda/kernels/ordered_key.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace ds4::backend::cuda {
namespace {

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::vector<float> sample_floats() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {-inf,
                          -std::numeric_limits<float>::max(),
                          -1.0f,
                          -std::numeric_limits<float>::min(),
                          -std::numeric_limits<float>::denorm_min(),
                          -0.0f,
                          0.0f,
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::min(),
                          1.0f,
                          std::numeric_limits<float>::max(),
                          inf};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  while (v.size() < 4000) {
    float f;
    const uint32_t b = any(rng);
    std::memcpy(&f, &b, sizeof f);
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

TEST(OrderedKey, KeysOrderAsTheirFloats) {
  const std::vector<float> v = sample_floats();
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i % 7; j < v.size(); j += 7) {
      const float a = v[i], b = v[j];
      const uint32_t ka = ordered_key(a), kb = ordered_key(b);
      if (a < b) {
        ASSERT_LT(ka, kb) << a << " < " << b;
      } else if (a > b) {
        ASSERT_GT(ka, kb) << a << " > " << b;
      } else if (bits(a) == bits(b)) {
        ASSERT_EQ(ka, kb) << a;
      } else {  // +0 and -0: equal floats, and -0's key is the lower
        ASSERT_EQ(std::signbit(a) ? ka < kb : ka > kb, true) << a << " vs " << b;
      }
    }
  }
}

TEST(OrderedKey, KeysMapBackAndZeroIsBelowAll) {
  for (const float f : sample_floats()) {
    EXPECT_EQ(bits(key_value(ordered_key(f))), bits(f)) << f;
    EXPECT_GT(ordered_key(f), 0u) << f;
  }
}

}  // namespace
}  // namespace ds4::backend::cuda
