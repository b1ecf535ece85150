// src/backend/rope.cpp: reference RoPE rotation.
#include "backend/rope.h"

#include "base/det_math.h"

namespace ds4::backend {

void rope_cos_sin(const RopeParams& p, int64_t pos, float* cos, float* sin) {
  const float fpos = static_cast<float>(pos);
  for (int i = 0; i < kRopePairs; ++i) {
    const float theta = fpos * p.inv_freq[i];
    detmath::sincosf(theta, &sin[i], &cos[i]);
  }
}

void rope_rotate(const float* cos, const float* sin, float* tail64, bool inverse) {
  for (int i = 0; i < kRopePairs; ++i) {
    const float s = inverse ? -sin[i] : sin[i];
    const float x0 = tail64[2 * i], x1 = tail64[2 * i + 1];
    tail64[2 * i] = x0 * cos[i] - x1 * s;
    tail64[2 * i + 1] = x0 * s + x1 * cos[i];
  }
}

}  // namespace ds4::backend
