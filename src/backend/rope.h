// src/backend/rope.h: the rotation every backend applies to a 64-dim head tail (model.md §4.6,
// semantics-diff.md §C.2 item 4): adjacent pairs, angle float32(pos * inv_freq[p]).
// Owns: the reference cos/sin and rotation. Does not own: the inv_freq tables (model/rope.h).
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace ds4::backend {

inline constexpr int kRopePairs = 32;

void rope_cos_sin(const RopeParams& p, int64_t pos, float* cos, float* sin);
// (x[2p], x[2p+1]) rotated by the angles whose cos/sin are given; `inverse` rotates back.
void rope_rotate(const float* cos, const float* sin, float* tail64, bool inverse);

}  // namespace ds4::backend
