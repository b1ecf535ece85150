// src/backend/cuda/kernels/topk.cuh: the indexer's top-k on the device, the twin of
// backend/row_rules.h's select_top_k, so a ratio-4 attention row never waits for the host.
// Owns: the selection kernel and its launcher. Does not own: the rule (row_rules.h defines it).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ds4::backend::cuda {

// out[0..k) = the indices of the k largest of scores[0..n) (device memory) under the order
// (larger score, then smaller index), listed in ascending index order; -0.0 equals +0.0, and a
// NaN score ranks below every number. Requires 0 < k < n.
void launch_select_top_k(const float* scores, int n, int k, int32_t* out, cudaStream_t stream);

// The same for the indexer rows of a batch at positions p0 .. p0 + n_rows - 1: row t selects
// among its n_t = (p0 + t + 1) / ratio scores at scores + t * stride into out + t * k, and is
// skipped when n_t <= k.
void launch_select_top_k_rows(const float* scores, int64_t stride, int p0, int n_rows, int ratio,
                              int k, int32_t* out, cudaStream_t stream);

}  // namespace ds4::backend::cuda
