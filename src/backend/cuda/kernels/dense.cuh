// src/backend/cuda/kernels/dense.cuh: row-wise ops of the schedule -- embedding, RMSNorm,
// hyper-connection mixing (Sinkhorn), collapse and post, the output head's collapse, SwiGLU, and
// the MoE slot sum (model.md §4.1-4.4, 4.10, 4.11). All pointers are device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gguf/types.h"

namespace ds4::backend::cuda {

// out[r] = `copies` copies of row tokens[r] of an F16 or F32 table of n_embd columns.
void launch_embed(const void* table, gguf::GgufType type, int64_t n_embd, const int32_t* tokens,
                  int64_t rows, int copies, float* out, cudaStream_t s);
// Directional steering: y[r] -= s_r * d * (d . y[r]) for each of `rows` rows of `cols`, s_r =
// scales[r] (device memory), or `scale` for every row when scales is null.
void launch_steer(const float* direction, const float* scales, float scale, int64_t rows,
                  int64_t cols, float* y, cudaStream_t s);
// y[i] = a[i] + b[i] for i < n (y may be a or b).
void launch_add(const float* a, const float* b, int64_t n, float* y, cudaStream_t s);
// y = RMSNorm of each `segment` of each row (weight optional, F32 of length segment).
void launch_rms_norm(const float* x, int64_t rows, int64_t cols, int64_t segment, const float* w,
                     float* y, cudaStream_t s);
// mix[r] (raw fn products, 2n + n^2) -> [pre, post, comb] after the sigmoid gates and Sinkhorn.
void launch_hc_mix(float* mix, int64_t rows, int n_hc, const float* scale, const float* base,
                   int iters, cudaStream_t s);
// cur[r][d] = sum_h x[r][h][d] * pre[r][h].
void launch_hc_collapse(const float* x, const float* mix, int64_t rows, int n_hc, int64_t n_embd,
                        float* cur, cudaStream_t s);
// The whole HC pre-step for n_hc == 4 copies and F16 mixing weights of 24 rows
// (hc_pre_fusable): what launch_rms_norm (no weight), the product with fn, launch_hc_mix and
// launch_hc_collapse compute, in one launch (kernels/hc_pre.cu). tickets: `rows` device
// counters, zero before the first launch (each launch leaves them zero). With `norm` (n_embd F32
// weights), also normed = what launch_rms_norm(cur, segment n_embd, norm) computes.
struct HcPreArgs {
  const float* x = nullptr;  // rows x (4 * n_embd)
  int64_t rows = 0, n_embd = 0;
  const void* fn = nullptr;  // F16 [24][4 * n_embd]
  const float *scale = nullptr, *base = nullptr;
  int iters = 20;
  float *mix = nullptr, *cur = nullptr;
  const float* norm = nullptr;  // optional
  float* normed = nullptr;
  unsigned* tickets = nullptr;
};
bool hc_pre_fusable(int n_hc, gguf::GgufType fn_type, int64_t fn_rows);
// From this many rows the HC pre-step is a batch: launch_hc_pre gives each row a CTA of its own
// (below, a CTA per mixing product and row), and the backend may split it into separate launches.
inline constexpr int64_t kHcPreBatchRows = 32;
void launch_hc_pre(const HcPreArgs& a, cudaStream_t s);
// y[r][b][d] = f[r][d] post[b] + sum_a comb[a][b] x[r][a][d].
void launch_hc_post(const float* x, const float* f, const float* mix, int64_t rows, int n_hc,
                    int64_t n_embd, float* y, cudaStream_t s);
// e[r][d] = sum_h x[r][h][d] * (sigmoid(pre[r][h] * scale + base[h]) + eps).
void launch_head_collapse(const float* x, const float* pre, const float* scale, const float* base,
                          int64_t rows, int n_hc, int64_t n_embd, float* e, cudaStream_t s);
// out[r][i] = silu(min(g, 10)) * clamp(u, -10, 10) * (weights ? weights[r] : 1).
void launch_swiglu(const float* g, const float* u, const float* weights, int64_t rows, int64_t cols,
                   float* out, cudaStream_t s);
// out[t][d] = (sum_{i<k} slots[t*k + i][d], in slot order) + shared[t][d].
void launch_sum_slots(const float* slots, int k, const float* shared, int64_t rows, int64_t cols,
                      float* out, cudaStream_t s);

}  // namespace ds4::backend::cuda
