// src/backend/cuda/kernels/attention_rows.cuh: what the sink-attention kernels (attention.cu,
// attention_sum_tile.cu) share: the head width, the cached rows a batch row attends to, and the
// maximum over a head's scores (ordered_key.h carries maxima between kernels).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/ordered_key.h"

namespace ds4::backend::cuda {

inline constexpr int kHd = 512;    // attention head width
inline constexpr int kNope = 448;  // its unrotated dims; the RoPE tail is dims 448..511

struct RowGeometry {  // the cached rows batch row t attends to (model.md §4.9)
  int n_raw, raw_head, n_rows;
  const int32_t* visible;  // the indexer's picks, or nullptr: compressed rows 0 ..
  __device__ RowGeometry(const AttentionGeometry& g, const int32_t* visible_all, int pos, int t) {
    n_raw = min(g.raw_cap, pos + 1);
    raw_head = (pos + 1 - n_raw) % g.ring_cap;
    const int n_all = g.ratio != 0 ? (pos + 1) / g.ratio : 0;
    const bool indexed = g.ratio == 4 && n_all > g.top_k;
    visible = indexed ? visible_all + int64_t{t} * g.top_k : nullptr;
    n_rows = n_raw + (indexed ? g.top_k : n_all);
  }
  __device__ const float* row(const AttentionGeometry& g, const float* ring, const float* comp,
                              int i) const {
    if (i < n_raw) {
      // (raw_head + i) % ring_cap without a division (raw_head < ring_cap and i < n_raw <= raw_cap
      // <= ring_cap, launch_attention's check): the division's conversions run on the XU pipe,
      // once per staged row and thread of the weighted sum.
      const int slot = raw_head + i;
      return ring + int64_t{slot >= g.ring_cap ? slot - g.ring_cap : slot} * kHd;
    }
    const int c = i - n_raw;
    return comp + int64_t{visible != nullptr ? visible[c] : c} * kHd;
  }
};

// The maximum over a head's sink and its n scores, on every lane of the calling warp. The maximum
// does not depend on the order, so each lane keeps four loads in flight (the scores were just
// written by the scores kernel and mostly come from device memory).
__device__ inline float head_max(const float* sc, int n, float sink, int lane) {
  float m[4] = {sink, sink, sink, sink};
  int i = lane;
  for (; i + 96 < n; i += 128) {
#pragma unroll
    for (int j = 0; j < 4; ++j) m[j] = fmaxf(m[j], sc[i + 32 * j]);
  }
  for (; i < n; i += 32) m[0] = fmaxf(m[0], sc[i]);
  float r = fmaxf(fmaxf(m[0], m[1]), fmaxf(m[2], m[3]));
  for (int off = 16; off > 0; off /= 2) r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, off));
  return r;
}

}  // namespace ds4::backend::cuda
