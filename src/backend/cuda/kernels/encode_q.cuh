// src/backend/cuda/kernels/encode_q.cuh: activation rows encoded on the device for the weight
// types' dots, exactly as on the CPU (quant/activation.cpp): Q8_0 blocks with a float scale for
// Q8_0 weights, Q8_K blocks for Q2_K / Q4_K / IQ2_XXS, plain floats for F16 / F32 weights.
// Owns: the encode kernels and their launchers (encode_q.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gguf/types.h"

namespace ds4::backend::cuda {

// Bytes of one encoded activation row of `cols` values for weight type t.
int64_t encoded_row_bytes(gguf::GgufType t, int64_t cols);

// Encodes n_rows rows (row r at x + r * stride floats, device memory) into `out` (device,
// n_rows * encoded_row_bytes bytes), bit-identical to quantize_act_q8_0 / quantize_act_q8_k; for
// F16/F32 weights it copies the floats.
void launch_encode_rows(gguf::GgufType t, const float* x, int64_t n_rows, int64_t cols,
                        int64_t stride, void* out, cudaStream_t stream);
// Encodes for block weight type t (not F16 / F32) the SwiGLU rows launch_swiglu would form from
// g and u (n_rows rows of cols values, weights optional: one per row), without storing them:
// the same bytes as launch_swiglu followed by launch_encode_rows.
void launch_encode_swiglu_rows(gguf::GgufType t, const float* g, const float* u,
                               const float* weights, int64_t n_rows, int64_t cols, void* out,
                               cudaStream_t stream);

}  // namespace ds4::backend::cuda
