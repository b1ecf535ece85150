// src/backend/cuda/kernels/matmul_f16_rows.cuh: F16 weights (native layout) against a few float
// activation rows (decode: the compressor and indexer projections, the indexer's query, the
// router) in float, one to several parts of one row width in a launch (matmul_f16_rows.cu).
// 1-8 warps share an output row (more of them for a product of few rows, so that it alone would
// have two CTAs per SM; chosen per part, so a part's results do not depend on the others); each
// lane reads 8 halves and 8 floats per 16-byte step and keeps one float sum, a butterfly adds the
// lanes and the row's warps add in warp order. The CPU sums exact products in double; here the
// order and rounding differ (a tolerance). matmul_q.cu's warp-per-row double-sum kernel takes
// only the F16 products this one cannot (expert stacks, row groups, other row widths).
// Owns: the kernel and its launch conditions. Does not own: the weights or the activations.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <span>

#include "backend/cuda/kernels/matmul_planar.cuh"

namespace ds4::backend::cuda {

// parts.n >= 1 products of cols-long rows: part p's weights at parts.w[p] (parts.out[p] rows of
// cols halves, 16-byte aligned), its results at parts.y[p] + slot * y_stride + row. Slot j reads
// activation row rows[j] (j without rows) of x, x_stride floats apart. parts.first and
// warps_per_row are filled by the launcher.
struct F16RowsProduct {
  ProductParts parts;
  int64_t cols = 0;
  const float* x = nullptr;
  int64_t x_stride = 0;
  const int32_t* rows = nullptr;
  int n_slots = 0;
  int64_t y_stride = 0;
  int warps_per_row[kMaxParts] = {};  // filled by the launcher
};

// launch_matmul and launch_matmul_parts take this kernel for the F16 products it fits (one
// matrix, one row group, no experts, fewer slots than the float tiles).
// Whether the kernel can run p: 1 <= parts.n <= kMaxParts, cols a multiple of 8, 16-byte aligned
// weights and activation rows, 1 <= n_slots <= 65,535.
bool f16_rows_fit(const F16RowsProduct& p);

// The products w (one row width; F16 weights in the native layout, one matrix each; results at
// y) against the float activation rows at enc as one F16RowsProduct, when the kernel fits them
// (no experts, one row group); else nothing. The caller rules out the
// float tiles (prefill).
std::optional<F16RowsProduct> f16_rows_product(std::span<const Weight* const> w,
                                               std::span<float* const> y, const void* enc,
                                               int64_t enc_row_bytes, const int32_t* experts,
                                               const int32_t* rows, int64_t n_slots, int groups,
                                               int64_t y_stride);

void launch_f16_rows(F16RowsProduct p, cudaStream_t stream);

}  // namespace ds4::backend::cuda
