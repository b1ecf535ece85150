// src/quant/quantize_internal.h: helpers shared by the weight encoders (not a public header).
// Owns: the per-element weight rule and small rounding helpers.
// Does not own: any format's search (quantize*.cpp).
#pragma once

#include <cmath>
#include <cstdint>

namespace ds4::quant::detail {

// Fraction of the block's mean importance added to every element's weight. Keeps every weighted
// least-squares fit well posed when imatrix weights are zero for some (or all) columns, while
// leaving the weighting essentially unchanged elsewhere.
inline constexpr float kImportanceFloor = 1e-4f;

// Fills w[0..n) with the error weight of each element: 1 when importance is null, else
// importance[i] + kImportanceFloor * mean(importance[0..n)) (all 1 when that mean is 0).
inline void element_weights(const float* importance, int n, float* w) {
  if (importance == nullptr) {
    for (int i = 0; i < n; ++i) w[i] = 1.0f;
    return;
  }
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += importance[i];
  const float floor = static_cast<float>(sum / n) * kImportanceFloor;
  if (!(floor > 0.0f)) {
    for (int i = 0; i < n; ++i) w[i] = 1.0f;
    return;
  }
  for (int i = 0; i < n; ++i) w[i] = importance[i] + floor;
}

// Round half away from zero to int (the encoders' choice; the decoders never round).
inline int nearest_int(float v) { return static_cast<int>(std::lround(v)); }

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace ds4::quant::detail
