// src/backend/cuda/kernels/attention_rows.cuh: what the sink-attention kernels (attention.cu,
// attention_split.cu, attention_flash.cu) share: the head width and the cached rows a batch row
// attends to.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"

namespace ds4::backend::cuda {

inline constexpr int kHd = 512;    // attention head width
inline constexpr int kNope = 448;  // its unrotated dims; the RoPE tail is dims 448..511

// Where batch row t's cache lies. OneRun: n consecutive rows of one sequence at positions
// p0 + t, all reading one raw ring and one compressed cache (the indexer's picks of row t at
// visible_all + t * top_k). SeqTable: a batched decode step, row t the only row of its
// sequence (SeqRows, passed by value as a __grid_constant__ parameter: its arrays are read in
// place, never copied per thread).
struct OneRun {
  const float* ring;
  const float* comp;
  const int32_t* visible_all;
  int p0;
  __device__ int pos(int t) const { return p0 + t; }
  __device__ const float* ring_of(int) const { return ring; }
  __device__ const float* comp_of(int) const { return comp; }
  __device__ const int32_t* visible_of(int t, int top_k) const {
    return visible_all + int64_t{t} * top_k;
  }
};
struct SeqTable {
  SeqRows r;
  __device__ int pos(int t) const { return r.pos[t]; }
  __device__ float* ring_of(int t) const { return r.ring[t]; }
  __device__ const float* comp_of(int t) const { return r.comp[t]; }
  __device__ const int32_t* visible_of(int t, int) const { return r.visible[t]; }
};

struct RowGeometry {  // the cached rows batch row t attends to (model.md §4.9)
  int n_raw, raw_head, n_rows, ring_cap;
  const float* ring;
  const float* comp;
  const int32_t* visible;  // the indexer's picks, or nullptr: compressed rows 0 ..
  template <class Src>
  __device__ RowGeometry(const AttentionGeometry& g, const Src& src, int t) {
    const int pos = src.pos(t);
    ring_cap = g.ring_cap;
    ring = src.ring_of(t);
    comp = src.comp_of(t);
    n_raw = min(g.raw_cap, pos + 1);
    raw_head = (pos + 1 - n_raw) % g.ring_cap;
    const int n_all = g.ratio != 0 ? (pos + 1) / g.ratio : 0;
    const bool indexed = g.ratio == 4 && n_all > g.top_k;
    visible = indexed ? src.visible_of(t, g.top_k) : nullptr;
    n_rows = n_raw + (indexed ? g.top_k : n_all);
  }
  __device__ const float* row(int i) const {
    if (i < n_raw) {
      // (raw_head + i) % ring_cap without a division (raw_head < ring_cap and i < n_raw <= raw_cap
      // <= ring_cap, launch_attention's check): the division's conversions run on the XU pipe,
      // once per staged row and thread of the weighted sum.
      const int slot = raw_head + i;
      return ring + int64_t{slot >= ring_cap ? slot - ring_cap : slot} * kHd;
    }
    const int c = i - n_raw;
    return comp + int64_t{visible != nullptr ? visible[c] : c} * kHd;
  }
};

}  // namespace ds4::backend::cuda
