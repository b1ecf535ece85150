// src/backend/cuda/kernels/ordered_key.h: float maxima carried between kernels by an unsigned
// atomic maximum (kernels/attention.cu hands each (row, head)'s score maximum to the weighted
// sum this way). Host+device functions, so a host test (ordered_key_test.cpp) checks the order.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DS4_KEY_HD __host__ __device__
#else
#define DS4_KEY_HD
#endif

namespace ds4::backend::cuda {

// A float's key: keys compare as their floats do (-inf < negatives < -0 < +0 < positives < +inf;
// NaN excluded): the sign bit set on non-negative values, every bit flipped on negative ones.
// 0 is below every float's key, so a zeroed array is an empty maximum.
DS4_KEY_HD inline uint32_t ordered_key(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
}

// The float whose key is k (k != 0).
DS4_KEY_HD inline float key_value(uint32_t k) {
  const uint32_t b = (k & 0x80000000u) != 0 ? k & 0x7fffffffu : ~k;
  float v;
  memcpy(&v, &b, sizeof v);
  return v;
}

}  // namespace ds4::backend::cuda
