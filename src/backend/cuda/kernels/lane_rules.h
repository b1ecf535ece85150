// src/backend/cuda/kernels/lane_rules.h: the index rules of a compressor lane processed as a
// batch of rows at positions p0 .. p0 + n - 1 (kernels/attention.cu), as plain host+device
// functions so a host test (lane_rules_test.cpp) can replay them against row-by-row processing.
//
// Row-by-row semantics (backend/cpu/attention.cpp, compressor_step): position q is stored in
// frontier row 4 + q % 4 (ratio 4) or q % ratio (ratio 128); when (q + 1) % ratio == 0 the window
// is pooled and, for ratio 4, rows 4..7 are copied to rows 0..3 (the previous window).
#pragma once

#if defined(__CUDACC__)
#define DS4_LANE_HD __host__ __device__
#else
#define DS4_LANE_HD
#endif

namespace ds4::backend::cuda::lane_rules {

// Windows that end inside the batch (pooled rows it emits).
DS4_LANE_HD inline int emitted(int p0, int n, int ratio) { return (p0 + n) / ratio - p0 / ratio; }

// Last position of the w-th window that ends inside the batch.
DS4_LANE_HD inline int window_end(int p0, int ratio, int w) {
  return (p0 / ratio + 1 + w) * ratio - 1;
}

// First position of the window pooled as the w-th of the batch (the RoPE position of its row).
DS4_LANE_HD inline int window_start(int p0, int ratio, int w) { return (p0 / ratio + w) * ratio; }

// The frontier row that holds position q < p0 when a batch starts at p0: for ratio 4 the window
// open at p0 ([w0, w0 + 4)) is in rows 4.., the one before it in rows 0..3 (positions below 0
// read the empty rows of a fresh frontier); for ratio 128, row q - w0. w0 = (p0 / ratio) * ratio.
DS4_LANE_HD inline int state_row(int p0, int ratio, int q) {
  const int w0 = (p0 / ratio) * ratio;
  if (ratio == 4) return q >= w0 ? 4 + (q - w0) : q - (w0 - 4);
  return q - w0;
}

// The last position before `end` that is r modulo ratio (negative when there is none).
DS4_LANE_HD inline int last_with_residue(int end, int ratio, int r) {
  return end - 1 - ((end - 1 - r) % ratio + ratio) % ratio;
}

// Ratio 128: a batch of n positions ending before `end` rewrites the frontier rows of its last
// rewritten_rows(n, ratio) positions end - 1 - i, row (end - 1 - i) % ratio (the other rows keep
// positions before the batch).
DS4_LANE_HD inline int rewritten_rows(int n, int ratio) { return n < ratio ? n : ratio; }

// Ratio 4: the last window boundary before `end` (-1 when none).
DS4_LANE_HD inline int last_boundary(int end) { return (end / 4) * 4 - 1; }

}  // namespace ds4::backend::cuda::lane_rules
