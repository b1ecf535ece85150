// src/backend/cuda/kernels/attention_split.cuh: sink attention of a few rows (decode) split over
// the cached rows (attention_split.cu): each CTA takes one span of a batch row's cached rows for
// 16 heads, forms their scores, its own softmax maximum and sum and its share of the weighted sum
// in float (an online softmax over rounds of 32 rows), and a second kernel merges the spans of
// each (row, head) with the sink, divides and applies inverse RoPE. It computes what the
// two-kernel decode path of attention.cu computes, up to float rounding: float scores instead of
// exact products summed in double, and the rows' weights added span by span. An A/B
// (DS4_CUDA_ATTN_SPLIT=1, attention_split_on), not yet measured on a GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"

namespace ds4::backend::cuda {

// DS4_CUDA_ATTN_SPLIT=1: decode attention (fewer rows than a batch) takes these kernels.
bool attention_split_on();
// Scratch floats the split kernels need for n batch rows of at most max_rows cached rows each
// (attention_scratch_floats, attention.cuh, includes it).
int64_t attention_split_scratch_floats(int n_head, int max_rows, int n);
// launch_attention's decode rows (rows.n < 16: one run of consecutive positions) and
// launch_attention_seqs's rows (one per sequence) on the split kernels, with their arguments;
// scratch holds attention_split_scratch_floats(g.n_head, g.max_rows, rows.n) floats (the first
// form also checks launch_attention's ring condition).
void launch_attention_split(const float* q, int64_t q_stride, const AttentionGeometry& g,
                            const float* ring, const float* comp, const int32_t* visible,
                            const float* sinks, const RopeArg& rope, RowSpan rows, float* scratch,
                            float* out, int64_t out_stride, cudaStream_t s);
void launch_attention_split_seqs(const float* q, int64_t q_stride, const AttentionGeometry& g,
                                 const SeqRows& rows, const float* sinks, const RopeArg& rope,
                                 float* scratch, float* out, int64_t out_stride, cudaStream_t s);

}  // namespace ds4::backend::cuda
