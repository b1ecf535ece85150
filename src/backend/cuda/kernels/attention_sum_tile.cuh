// src/backend/cuda/kernels/attention_sum_tile.cuh: the batched softmax-with-sink and weighted sum
// of sink attention as a register-tiled product (attention_sum_tile.cu), for launch_attention.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"

namespace ds4::backend::cuda {

// For every batch row t (rows.n of them, at positions rows.p0 + t): the weights of its n_head
// heads over its cached rows from the scores at scratch[(t * n_head + h) * max_rows + i] (the
// CPU's exponentials against the maximum over the sink and the scores), each (head, dim) output
// the rows' weight x value products added in row order with fused multiply-adds, divided by the
// denominator (the sink term, then each weight, plain adds), and inverse RoPE on the tail: the
// float operations of the CPU's sink attention in its order, so bit-identical results. Output row
// t at out + t * out_stride. Needs attention_sum_tile_fits. maxima: the maximum of row t's head h
// scores at maxima[t * n_head + h] as an ordered key (ordered_key.h), which the batch scores
// kernel leaves (launch_attention).
bool attention_sum_tile_fits(const float* ring, const float* comp, const float* out,
                             int64_t out_stride);
void launch_attention_sum_tile(const AttentionGeometry& g, const float* ring, const float* comp,
                               const int32_t* visible, const float* sinks, const RopeArg& rope,
                               RowSpan rows, const float* scratch, const uint32_t* maxima,
                               float* out, int64_t out_stride, cudaStream_t s);

}  // namespace ds4::backend::cuda
