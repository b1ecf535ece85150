// src/backend/cpu/math.h: the scalar primitives of model.md §4.1, exactly as specified.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/det_math.h"

namespace ds4::backend::cpu {

inline constexpr float kNegInf = -1.0e30f;      // the finite "minus infinity" sentinel
inline constexpr float kEmptyBelow = -5.0e29f;  // "is minus infinity" test
inline constexpr float kEps = 1e-6f;            // RMSNorm and HC epsilon

// 1 / sqrt(mean(x^2) + eps) with the sum of squares in double, index order.
inline float rms_scale(const float* x, int64_t n) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + kEps);
}

// exp / log1p are the deterministic versions shared with the CUDA backend (base/det_math.h).
inline float sigmoid_stable(float z) {
  if (z >= 0.0f) return 1.0f / (1.0f + detmath::expf(-z));
  const float e = detmath::expf(z);
  return e / (1.0f + e);
}

inline float silu(float g) { return g * sigmoid_stable(g); }

inline float softplus(float z) {
  if (z > 20.0f) return z;
  if (z < -20.0f) return detmath::expf(z);
  return detmath::log1pf(detmath::expf(z));
}

}  // namespace ds4::backend::cpu
