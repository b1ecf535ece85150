// src/backend/cuda/kernels/attention_split.cuh: sink attention of a few rows (decode) split over
// the cached rows (attention_split.cu): each CTA takes one span of a batch row's cached rows for
// 16 heads, forms their scores, its own softmax maximum and sum and its share of the weighted sum
// in float (an online softmax over rounds of 32 rows), and a second kernel merges the spans of
// each (row, head) with the sink, divides and applies inverse RoPE. Up to float rounding it is
// the CPU's attention (backend/cpu/attention.cpp): float scores, the rows' weights added span by
// span. launch_attention and launch_attention_seqs (attention.cuh) call it for decode rows, after
// their own checks; only .cu files include this header (attention_rows.cuh's row sources).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/attention_rows.cuh"

namespace ds4::backend::cuda {

// Scratch floats the split kernels need for n batch rows of at most max_rows cached rows each
// (attention_scratch_floats includes it).
int64_t attention_split_scratch_floats(int n_head, int max_rows, int n);
// The attention of n batch rows (1 <= n; Src: OneRun or SeqTable) on the split kernels; scratch
// holds attention_split_scratch_floats(g.n_head, g.max_rows, n) floats.
template <class Src>
void launch_attention_split(const float* q, int64_t q_stride, const AttentionGeometry& g,
                            const Src& src, int n, const float* sinks, const RopeArg& rope,
                            float* scratch, float* out, int64_t out_stride, cudaStream_t s);

}  // namespace ds4::backend::cuda
