// src/backend/cuda/kernels/matmul_f16_rows.cu: F16 decode products in float (contract in
// matmul_f16_rows.cuh). Built with -fmad=false: every fused multiply-add is written.
// It decoded Flash q2 faster on the H200 (ds4-bench) than the kernels it replaced (exact products
// summed in double: a CTA per output row for few rows of a long row, else a warp per row), and is
// now the only path of the F16 decode products it fits (the compressor and indexer projections,
// the indexer query, the router).
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <span>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/matmul_f16_rows.cuh"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kStep = 8;  // halves per lane and load (16 bytes)
// The launch aims at this many CTAs (two per SM of the H200) before it gives a row more warps.
constexpr int64_t kTargetCtas = 264;

// acc + the dot of 8 halves (w) and 8 floats (x0, x1).
__device__ __forceinline__ float dot8(float acc, uint4 w, float4 x0, float4 x1) {
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&w.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&w.y));
  const float2 c = __half22float2(*reinterpret_cast<const __half2*>(&w.z));
  const float2 d = __half22float2(*reinterpret_cast<const __half2*>(&w.w));
  acc = fmaf(a.x, x0.x, acc);
  acc = fmaf(a.y, x0.y, acc);
  acc = fmaf(b.x, x0.z, acc);
  acc = fmaf(b.y, x0.w, acc);
  acc = fmaf(c.x, x1.x, acc);
  acc = fmaf(c.y, x1.y, acc);
  acc = fmaf(d.x, x1.z, acc);
  return fmaf(d.y, x1.w, acc);
}

// CTA: kWarps / wpr output rows of one part and slot blockIdx.y, wpr = the part's warps per row.
__global__ void __launch_bounds__(kThreads) f16_rows_kernel(const F16RowsProduct p) {
  __shared__ float part_sums[kWarps];
  // The CTA's part (each test unrolled: no parameter array indexed at run time).
  const uint8_t* w = p.parts.w[0];
  float* y = p.parts.y[0];
  int out = p.parts.out[0], wpr = p.warps_per_row[0];
  int64_t cta = blockIdx.x;
#pragma unroll
  for (int q = 1; q < kMaxParts; ++q) {
    if (q < p.parts.n && static_cast<int>(blockIdx.x) >= p.parts.first[q]) {
      w = p.parts.w[q];
      y = p.parts.y[q];
      out = p.parts.out[q];
      wpr = p.warps_per_row[q];
      cta = blockIdx.x - p.parts.first[q];
    }
  }
  const int rows_per_cta = kWarps / wpr;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int sub = warp % wpr;  // this warp's share of the row
  const int64_t o_raw = cta * rows_per_cta + warp / wpr;
  const int64_t o = o_raw < out ? o_raw : out - 1;  // every warp reaches the barrier
  const auto* wr = reinterpret_cast<const uint4*>(w + o * p.cols * 2);
  // The CTA's weight rows (consecutive) go to L2 before the wait for the predecessor.
  const int64_t o0 = cta * rows_per_cta;
  prefetch_l2(w + o0 * p.cols * 2, (min(int64_t{out}, o0 + rows_per_cta) - o0) * p.cols * 2);
  kernel_begin();
  const int slot = static_cast<int>(blockIdx.y);
  const int64_t xr = p.rows != nullptr ? p.rows[slot] : slot;
  const auto* x = reinterpret_cast<const float4*>(p.x + xr * p.x_stride);
  const int64_t stride = int64_t{wpr} * 32;  // 16-byte steps between a lane's loads
  constexpr int kBatch = 4;                  // steps whose loads are in flight together
  const int64_t steps = p.cols / kStep;
  float acc = 0.0f;
  int64_t i = int64_t{sub} * 32 + lane;
  for (; i + (kBatch - 1) * stride < steps; i += kBatch * stride) {
    uint4 wv[kBatch];
    float4 xa[kBatch], xb[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t j = i + u * stride;
      wv[u] = wr[j];
      xa[u] = x[2 * j];
      xb[u] = x[2 * j + 1];
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) acc = dot8(acc, wv[u], xa[u], xb[u]);
  }
  for (; i < steps; i += stride) acc = dot8(acc, wr[i], x[2 * i], x[2 * i + 1]);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) part_sums[warp] = acc;
  __syncthreads();
  if (sub != 0 || lane != 0 || o_raw >= out) return;
  for (int k = 1; k < wpr; ++k) acc += part_sums[warp + k];
  y[slot * p.y_stride + o] = acc;
}

}  // namespace

bool f16_rows_fit(const F16RowsProduct& p) {
  if (p.parts.n < 1 || p.parts.n > kMaxParts || p.cols < kStep || p.cols % kStep != 0 ||
      p.n_slots < 1 || p.n_slots > kMaxGridYZ || !aligned16(p.x) || p.x_stride % 4 != 0)
    return false;
  for (int q = 0; q < p.parts.n; ++q) {
    if (!aligned16(p.parts.w[q]) || p.parts.out[q] < 1) return false;
  }
  return true;
}

std::optional<F16RowsProduct> f16_rows_product(std::span<const Weight* const> w,
                                               std::span<float* const> y, const void* enc,
                                               int64_t enc_row_bytes, const int32_t* experts,
                                               const int32_t* rows, int64_t n_slots, int groups,
                                               int64_t y_stride) {
  if (experts != nullptr || groups != 1 || n_slots < 1 || w.empty() ||
      w.size() > static_cast<size_t>(kMaxParts) || y.size() != w.size() || enc_row_bytes % 16 != 0)
    return std::nullopt;
  F16RowsProduct p;
  p.cols = w[0]->ne[0];
  p.x = static_cast<const float*>(enc);
  p.x_stride = enc_row_bytes / static_cast<int64_t>(sizeof(float));
  p.rows = rows;
  p.n_slots = static_cast<int>(n_slots);
  p.y_stride = y_stride;
  p.parts.n = static_cast<int>(w.size());
  for (size_t q = 0; q < w.size(); ++q) {
    const Weight& wq = *w[q];
    if (wq.layout != 0 || wq.type != gguf::GgufType::kF16 || wq.ne[0] != p.cols || wq.ne[2] != 1 ||
        wq.ne[1] > INT_MAX)
      return std::nullopt;
    p.parts.w[q] = static_cast<const uint8_t*>(wq.data);
    p.parts.y[q] = y[q];
    p.parts.out[q] = static_cast<int>(wq.ne[1]);
  }
  if (!f16_rows_fit(p)) return std::nullopt;
  return p;
}

void launch_f16_rows(F16RowsProduct p, cudaStream_t stream) {
  DS4_CHECK_MSG(f16_rows_fit(p), "f16 rows: %d parts of %lld values, %d slots", p.parts.n,
                static_cast<long long>(p.cols), p.n_slots);
  // Each part's warps per row: the fewest (1, 2, 4 or 8) that would give a launch of it alone,
  // for one slot, kTargetCtas CTAs. It depends on the part's own rows only, not on the other
  // parts nor on the slot count, so that a slot's outputs have the same bits in any launch: a
  // speculative verification of a few rows must reproduce one-row decode exactly (issue 51: on
  // Flash the compressor projections of 1,024 rows took 4 warps alone and 1 in a batch of 3,
  // and greedy decoding with drafts diverged at its second token).
  int64_t ctas = 0;
  for (int q = 0; q < p.parts.n; ++q) {
    int wpr = 1;
    while (wpr < kWarps && int64_t{p.parts.out[q]} * wpr < kTargetCtas * kWarps) wpr *= 2;
    p.warps_per_row[q] = wpr;
    p.parts.first[q] = static_cast<int>(ctas);
    const int rows_per_cta = kWarps / wpr;
    ctas += (p.parts.out[q] + rows_per_cta - 1) / rows_per_cta;
    DS4_CHECK(ctas <= INT_MAX);
  }
  p.parts.first[p.parts.n] = static_cast<int>(ctas);
  launch(f16_rows_kernel, dim3(static_cast<unsigned>(ctas), static_cast<unsigned>(p.n_slots)),
         kThreads, 0, stream, p);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
