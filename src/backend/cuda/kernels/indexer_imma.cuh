// src/backend/cuda/kernels/indexer_imma.cuh: the lightning indexer's row scores of a batch on the
// int8 tensor cores, for rows whose 32-value blocks hold FP4-simulated values (Hadamard + E2M1
// with a power-of-two scale, quant::indexer_fp4_simulate, f16-rounded or not). Such a block is
// an integer multiple of a power of two with at most 7 significant bits, so it is encoded exactly
// as int8 codes (|c| <= 127) and one unit 2^(E - 7), E = frexp(amax)'s exponent; a head's dot is
// then the sum over its 4 blocks of the exact int32 block dot times the two units, and the heads
// combine as indexer_scores.cu's kernels combine them. Every product and partial sum of such a
// dot is exact in float where the CPU's is (block units within a factor 2^9 of each other), so
// the scores are the float kernels' bits there; on other rows the codes round (not used).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/kernels/attention.cuh"

namespace ds4::backend::cuda {

// scores[t * n_stride + c] for every row t of `rows` with n_t = (p0 + t + 1) / 4 > top_k and
// c < n_t (launch_indexer_select's contract), through `codes` (indexer_code_bytes(n_keys,
// rows.n, n_ih) bytes, 16-byte aligned; n_keys = (p0 + n) / 4). keys and iq rows 16-byte aligned
// (iq_stride a multiple of 4 floats); n_ih a multiple of 8, at most 64.
void launch_indexer_scores_imma(const float* keys, const float* iq, int64_t iq_stride,
                                const float* w, int64_t w_stride, float wscale, int n_ih, int top_k,
                                RowSpan rows, int n_stride, void* codes, float* scores,
                                cudaStream_t s);

}  // namespace ds4::backend::cuda
