// src/backend/cuda/kernels/indexer_scores.cu: the lightning indexer's row scores and top-k
// choice for a batch (launch_indexer_select, contract in attention.cuh), moved out of
// attention.cu. Built with -fmad=false; every score is the CPU's AVX2 kernel's float operations,
// in its order (backend/cpu/x86/indexer_scores_avx2.cpp), whichever kernel forms it.
#include <cstdint>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/indexer_imma.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/topk.cuh"

namespace ds4::backend::cuda {
namespace {

constexpr int kIhd = 128;                      // indexer head dim
constexpr int kBatchRows = kIndexerBatchRows;  // rows from which a launch is a batch

// The indexer's row score from its heads' dots, in the CPU's order: per lane l of 8 a fused chain
// over heads 8j + l of relu(dot) * (w * wscale), then the horizontal sum.
__device__ float combine_heads(const float* dots, const float* w, float wscale, int n_ih) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < n_ih / 8; ++j) {
    for (int l = 0; l < 8; ++l) {
      const int h = 8 * j + l;
      const float acc = dots[h];
      s[l] = fmaf(acc > 0.0f ? acc : 0.0f, w[h] * wscale, s[l]);
    }
  }
  const float t0 = s[0] + s[4], t1 = s[1] + s[5], t2 = s[2] + s[6], t3 = s[3] + s[7];
  return (t0 + t2) + (t1 + t3);
}

constexpr int kScoreRows = 16;
constexpr int kHeadGroups = 256 / kScoreRows;
constexpr int kMaxIndexerHeads = 64;
constexpr int kQPitch = kIhd + 1;  // padded: the two heads a warp reads sit in different banks

// Compressed rows blockIdx.x * kScoreRows .. of batch row blockIdx.y, replicating the CPU's AVX2
// kernel operation for operation (backend/cpu/x86/indexer_scores_avx2.cpp): per head a fused
// multiply-add chain over the 128 dims, then per lane l of 8 a fused chain over heads 8j + l of
// relu(dot) * w, then the same horizontal sum. The row's queries and the tile's keys are staged
// in shared memory; thread (c, g) runs the dims chains of row c for heads g, g + 16, .. side by
// side, and one thread per row then combines the heads in the CPU's order. n_ih is a multiple of
// 8 and at most kMaxIndexerHeads.
__global__ void __launch_bounds__(256)
    indexer_scores_kernel(const float* keys, const float* iq_all, int64_t iq_stride,
                          const float* w_all, int64_t w_stride, float wscale, int n_ih, int top_k,
                          int p0, int n_stride, float* scores) {
  kernel_begin();
  __shared__ float qs[kMaxIndexerHeads * kQPitch];
  __shared__ float ks[kScoreRows][kQPitch];
  __shared__ float dots[kScoreRows][kMaxIndexerHeads + 1];
  const int t = static_cast<int>(blockIdx.y);
  const int n = (p0 + t + 1) / 4;
  const int c0 = static_cast<int>(blockIdx.x) * kScoreRows;
  if (n <= top_k || c0 >= n) return;  // uniform per CTA
  const int tid = static_cast<int>(threadIdx.x);
  const float* iq = iq_all + t * iq_stride;
  for (int i = tid; i < n_ih * kIhd; i += blockDim.x) qs[(i / kIhd) * kQPitch + i % kIhd] = iq[i];
  const int rows = min(kScoreRows, n - c0);
  for (int i = tid; i < rows * kIhd; i += blockDim.x)
    ks[i / kIhd][i % kIhd] = keys[int64_t{c0} * kIhd + i];
  __syncthreads();
  const int c = tid % kScoreRows, g = tid / kScoreRows;
  if (c < rows) {
    for (int h0 = g; h0 < n_ih; h0 += 4 * kHeadGroups) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int d = 0; d < kIhd; ++d) {
        const float kd = ks[c][d];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int h = h0 + k * kHeadGroups;
          if (h < n_ih) acc[k] = fmaf(kd, qs[h * kQPitch + d], acc[k]);
        }
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int h = h0 + k * kHeadGroups;
        if (h < n_ih) dots[c][h] = acc[k];
      }
    }
  }
  __syncthreads();
  if (tid >= rows) return;
  scores[int64_t{t} * n_stride + c0 + tid] =
      combine_heads(dots[tid], w_all + t * w_stride, wscale, n_ih);
}

// The same scores for kTileRows = 64 compressed rows per CTA: thread (cg, g) runs the dims chains
// of rows cg + 16 i and heads g + 16 k (4 x 4 chains side by side, each the same fused chain over
// the 128 dims in order, so bit-identical to the kernel above), reading 8 staged values per 16
// fmas instead of 5 per 4, and the queries are staged once for 4x as many rows. Shared memory
// (dynamic, kTileSmem bytes): the queries, then the keys, whose space then holds the dots.
constexpr int kTileRows = 64;
constexpr size_t kTileSmem = size_t{2} * kMaxIndexerHeads * kQPitch * sizeof(float);
static_assert(kTileRows == kMaxIndexerHeads &&
                  kTileRows * (kMaxIndexerHeads + 1) <= kTileRows * kQPitch,
              "the dots fit in the keys' space");

__global__ void __launch_bounds__(256)
    indexer_scores_tile_kernel(const float* keys, const float* iq_all, int64_t iq_stride,
                               const float* w_all, int64_t w_stride, float wscale, int n_ih,
                               int top_k, int p0, int n_stride, float* scores) {
  kernel_begin();
  extern __shared__ float smem_f[];
  float* qs = smem_f;                               // [kMaxIndexerHeads][kQPitch]
  float* ks = smem_f + kMaxIndexerHeads * kQPitch;  // [kTileRows][kQPitch]
  float* dots = ks;                                 // [kTileRows][kMaxIndexerHeads + 1], later
  const int t = static_cast<int>(blockIdx.y);
  const int n = (p0 + t + 1) / 4;
  const int c0 = static_cast<int>(blockIdx.x) * kTileRows;
  if (n <= top_k || c0 >= n) return;  // uniform per CTA
  const int tid = static_cast<int>(threadIdx.x);
  const float* iq = iq_all + t * iq_stride;
  for (int i = tid; i < n_ih * kIhd; i += blockDim.x) qs[(i / kIhd) * kQPitch + i % kIhd] = iq[i];
  const int rows = min(kTileRows, n - c0);
  for (int i = tid; i < kTileRows * kIhd; i += blockDim.x) {
    const int r = i / kIhd;
    ks[r * kQPitch + i % kIhd] = r < rows ? keys[int64_t{c0} * kIhd + i] : 0.0f;
  }
  __syncthreads();
  const int cg = tid % 16, g = tid / 16;
  float acc[4][4] = {};
  for (int d = 0; d < kIhd; ++d) {
    float kd[4], qd[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) kd[i] = ks[(cg + 16 * i) * kQPitch + d];
#pragma unroll
    for (int k = 0; k < 4; ++k) qd[k] = g + 16 * k < n_ih ? qs[(g + 16 * k) * kQPitch + d] : 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[i][k] = fmaf(kd[i], qd[k], acc[i][k]);
    }
  }
  __syncthreads();  // every thread is done with the keys: their space takes the dots
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (g + 16 * k < n_ih) dots[(cg + 16 * i) * (kMaxIndexerHeads + 1) + g + 16 * k] = acc[i][k];
    }
  }
  __syncthreads();
  if (tid >= rows) return;
  scores[int64_t{t} * n_stride + c0 + tid] =
      combine_heads(dots + tid * (kMaxIndexerHeads + 1), w_all + t * w_stride, wscale, n_ih);
}

// Batches with 16-byte aligned rows: the same scores for kWideKeys = 128 compressed
// rows per CTA of 8 warps. Warp w runs the dims chains of heads 8 w .. 8 w + 7 (all its lanes the
// same heads, so their staged queries reach the warp as broadcasts) against keys lane, lane + 32,
// lane + 64 and lane + 96: 32 chains per thread, each the same fused chain over the 128 dims in
// order (so bit-identical to the kernels above), each key's and head's next 4 dims in one 16-byte
// load: 12 loads per 128 fmas, where the 64-row kernel makes 8 per 16. Shared memory (dynamic,
// kWideSmem bytes): the queries, then the keys, whose space then holds the dots.
constexpr int kWideKeys = 128, kWideThreads = 256, kWideHeads = 8;  // kWideHeads per warp
constexpr int kWidePitch = kIhd + 4;  // floats: a key's 16-byte reads by 8 lanes cover 32 banks
constexpr size_t kWideSmem = sizeof(float) * (kMaxIndexerHeads + kWideKeys) * kWidePitch;
static_assert(kWideThreads / 32 * kWideHeads == kMaxIndexerHeads && kWideKeys == 4 * 32,
              "8 warps of 8 heads, 4 keys per lane");
static_assert(kWideKeys * (kMaxIndexerHeads + 1) <= kWideKeys * kWidePitch,
              "the dots fit in the keys' space");

__global__ void __launch_bounds__(kWideThreads)
    indexer_scores_wide_kernel(const float* keys, const float* iq_all, int64_t iq_stride,
                               const float* w_all, int64_t w_stride, float wscale, int n_ih,
                               int top_k, int p0, int n_stride, float* scores) {
  kernel_begin();
  extern __shared__ __align__(16) float smem_w[];
  float* qs = smem_w;                                  // [kMaxIndexerHeads][kWidePitch]
  float* ks = smem_w + kMaxIndexerHeads * kWidePitch;  // [kWideKeys][kWidePitch]
  float* dots = ks;                                    // [kWideKeys][kMaxIndexerHeads + 1], later
  const int t = static_cast<int>(blockIdx.y);
  const int n = (p0 + t + 1) / 4;
  const int c0 = static_cast<int>(blockIdx.x) * kWideKeys;
  if (n <= top_k || c0 >= n) return;  // uniform per CTA
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  constexpr int kQuads = kIhd / 4;  // float4 per row
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float4* iq = reinterpret_cast<const float4*>(iq_all + t * iq_stride);
  for (int i = tid; i < kMaxIndexerHeads * kQuads; i += kWideThreads) {
    const int h = i / kQuads, q4 = i % kQuads;
    *reinterpret_cast<float4*>(qs + h * kWidePitch + 4 * q4) = h < n_ih ? iq[i] : zero;
  }
  const int rows = min(kWideKeys, n - c0);
  const float4* kt = reinterpret_cast<const float4*>(keys + int64_t{c0} * kIhd);
  for (int i = tid; i < kWideKeys * kQuads; i += kWideThreads) {
    const int r = i / kQuads, q4 = i % kQuads;
    *reinterpret_cast<float4*>(ks + r * kWidePitch + 4 * q4) = r < rows ? kt[i] : zero;
  }
  __syncthreads();
  float acc[kWideHeads][4] = {};
  const float* qw = qs + warp * kWideHeads * kWidePitch;
  for (int d = 0; d < kIhd; d += 4) {
    float4 kv[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      kv[j] = *reinterpret_cast<const float4*>(ks + (lane + 32 * j) * kWidePitch + d);
#pragma unroll
    for (int h = 0; h < kWideHeads; ++h) {
      const float4 q = *reinterpret_cast<const float4*>(qw + h * kWidePitch + d);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float a = acc[h][j];
        a = fmaf(kv[j].x, q.x, a);
        a = fmaf(kv[j].y, q.y, a);
        a = fmaf(kv[j].z, q.z, a);
        a = fmaf(kv[j].w, q.w, a);
        acc[h][j] = a;
      }
    }
  }
  __syncthreads();  // every thread is done with the keys: their space takes the dots
#pragma unroll
  for (int h = 0; h < kWideHeads; ++h) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      dots[(lane + 32 * j) * (kMaxIndexerHeads + 1) + warp * kWideHeads + h] = acc[h][j];
  }
  __syncthreads();
  if (tid >= rows) return;
  scores[int64_t{t} * n_stride + c0 + tid] =
      combine_heads(dots + tid * (kMaxIndexerHeads + 1), w_all + t * w_stride, wscale, n_ih);
}

}  // namespace

void launch_indexer_select(const float* keys, const float* iq, int64_t iq_stride, const float* w,
                           int64_t w_stride, float wscale, int n_ih, int top_k, RowSpan rows,
                           int n_stride, void* codes, float* scores, int32_t* out, cudaStream_t s) {
  const int n_last = (rows.p0 + rows.n) / 4;
  DS4_CHECK_MSG(n_stride >= n_last && n_ih % 8 == 0, "indexer: stride %d < %d rows, %d heads",
                n_stride, n_last, n_ih);
  if (rows.n == 0 || n_last <= top_k) return;
  DS4_CHECK_MSG(n_ih <= kMaxIndexerHeads, "indexer: %d heads (at most %d)", n_ih, kMaxIndexerHeads);
  // Batches (prefill, never captured in a graph) of FP4-simulated rows take the int8 tensor cores
  // (indexer_imma.cu), other batches the 128-row kernel, or the 64-row one where the rows are not
  // 16-byte aligned; a decoded row keeps the 16-row kernel's 8x as many CTAs (the
  // same results). On the H200 the 128-row kernel prefilled Flash q2 faster than the 64-row one.
  const bool rows16 = aligned16(keys) && aligned16(iq) && iq_stride % 4 == 0;
  if (rows.n >= kBatchRows && rows16 && codes != nullptr) {
    launch_indexer_scores_imma(keys, iq, iq_stride, w, w_stride, wscale, n_ih, top_k, rows,
                               n_stride, codes, scores, s);
  } else if (rows.n >= kBatchRows && rows16) {
    DS4_CUDA_CHECK(cudaFuncSetAttribute(indexer_scores_wide_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kWideSmem)));
    launch(indexer_scores_wide_kernel, dim3((n_last + kWideKeys - 1) / kWideKeys, rows.n),
           kWideThreads, kWideSmem, s, keys, iq, iq_stride, w, w_stride, wscale, n_ih, top_k,
           rows.p0, n_stride, scores);
  } else if (rows.n >= kBatchRows) {
    DS4_CUDA_CHECK(cudaFuncSetAttribute(indexer_scores_tile_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kTileSmem)));
    launch(indexer_scores_tile_kernel, dim3((n_last + kTileRows - 1) / kTileRows, rows.n), 256,
           kTileSmem, s, keys, iq, iq_stride, w, w_stride, wscale, n_ih, top_k, rows.p0, n_stride,
           scores);
  } else {
    launch(indexer_scores_kernel, dim3((n_last + kScoreRows - 1) / kScoreRows, rows.n), 256, 0, s,
           keys, iq, iq_stride, w, w_stride, wscale, n_ih, top_k, rows.p0, n_stride, scores);
  }
  DS4_CUDA_CHECK_LAUNCH();
  launch_select_top_k_rows(scores, n_stride, rows.p0, rows.n, 4, top_k, out, s);
}

}  // namespace ds4::backend::cuda
