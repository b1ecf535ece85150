// src/backend/cuda/kernels/attention_flash.cuh: sink attention of a batch (prefill) on the f16
// tensor cores with float accumulation (attention_flash.cu), one pass over each batch row's
// cached rows: scores, online softmax with the sink and the weighted sum in one kernel.
//
// Precision: every float operand is split into an f16 pair hi + lo (|x - hi - lo| <= 2^-22 |x|
// for the magnitudes of attention: queries and rows are RMS-normalized, weights lie in [0, 1]),
// and the products are hi x hi + lo x hi (+ hi x lo when the cached rows are not f16 values
// already: Numerics::f16_rows off), summed in float by the tensor cores. Scores and sums are so
// the float ones up to rounding (~1e-6 relative; attention_test measures it against a double
// evaluation), not bit for bit the CPU's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"

namespace ds4::backend::cuda {

// Whether the kernel takes these rows: 16-byte aligned queries and cached rows, outputs in
// 8-byte pairs.
bool attention_flash_fits(const float* q, int64_t q_stride, const float* ring, const float* comp,
                          const float* out, int64_t out_stride);
// launch_attention's batch (its contract and arguments, no scratch) on this kernel; g.f16_values
// says whether every cached row holds f16 values (stored through f16: their hi part is exact).
void launch_attention_flash(const float* q, int64_t q_stride, const AttentionGeometry& g,
                            const float* ring, const float* comp, const int32_t* visible,
                            const float* sinks, const RopeArg& rope, RowSpan rows, float* out,
                            int64_t out_stride, cudaStream_t s);

}  // namespace ds4::backend::cuda
