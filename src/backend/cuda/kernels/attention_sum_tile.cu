// src/backend/cuda/kernels/attention_sum_tile.cu: the batched weighted sum of sink attention as a
// register-tiled product (contract in attention_sum_tile.cuh). Built with -fmad=false.
//
// Per batch row the sum is a (heads x rows) by (rows x dims) product whose every output adds its
// rows in order, one fused multiply-add each: the order an ordinary register-tiled product keeps,
// since each thread walks the rows one after another for all of its outputs. A CTA takes 64 heads
// x 256 dims of one batch row (two CTAs per row for Flash), a thread 8 heads x 8 dims, so each
// row step is four 16-byte shared loads (one wavefront each) for 64 fused multiply-adds. The
// values come a round of 32 rows ahead by cp.async, zero-filled past the last row, the next
// round's scores with them (into each thread's own shared slots), and those scores become
// weights after the round's products. A zero weight times a zero value leaves an accumulator as it
// is (an accumulator that starts at +0 and adds finite products is never -0), and a zero weight
// leaves a positive denominator as it is, so the padded rows of the last round change nothing.
//
// Against attention.cu's kernel (16 heads x 256 dims, a thread 4 heads x 4 dims): a quarter of
// the value loads from L2 (each cached row reaches two CTAs per batch row instead of eight) and
// half the shared-memory wavefronts per fused multiply-add; the same exponentials per batch row.
#include "backend/cuda/check.h"
#include "backend/cuda/kernels/async_copy.cuh"
#include "backend/cuda/kernels/attention_rows.cuh"
#include "backend/cuda/kernels/attention_sum_tile.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kTHeads = 64;                   // heads per CTA
constexpr int kTDims = 256;                   // dims per CTA
constexpr int kTRows = 32;                    // cached rows per round
constexpr int kTThreads = 256;                // warp w: heads 32 (w % 2) .., dims 64 (w / 2) ..
constexpr int kTWPitch = kTHeads + 4;         // floats per staged weight row (16-byte aligned rows)
constexpr int kTValFloats = kTRows * kTDims;  // one stage of values
constexpr int kTWtFloats = kTRows * kTWPitch;  // one stage of weights
constexpr size_t kTSmem = sizeof(float) * (2 * (kTValFloats + kTWtFloats) + kTRows * kTHeads);
constexpr int kTCopies = kTRows * kTDims / 4 / kTThreads;  // 16-byte value copies per round
constexpr int kTScores = kTRows * kTHeads / kTThreads;     // scores per thread per round
static_assert(kTCopies * 4 * kTThreads == kTRows * kTDims &&
                  kTScores * kTThreads == kTRows * kTHeads,
              "whole copies and scores per thread");
static_assert(kTHeads * kTDims <= 2 * kTValFloats, "the outputs fit where the values were staged");
static_assert(kHd % kTDims == 0 && kHd - kNope <= kTDims && kNope / kTDims == (kHd - 1) / kTDims,
              "the rotated tail lies in one CTA's dims");

__global__ void __launch_bounds__(kTThreads, 2)
    attention_sum_tile_kernel(AttentionGeometry g, OneRun run, const float* sinks, RopeArg rope,
                              const float* scratch, const uint32_t* maxima, float* out_all,
                              int64_t out_stride) {
  kernel_begin();
  extern __shared__ __align__(16) float smem[];
  float* const vals = smem;                   // [2][kTRows][kTDims]
  float* const wts = smem + 2 * kTValFloats;  // [2][kTRows][kTWPitch]
  float* const raw = wts + 2 * kTWtFloats;    // [kTScores][kTThreads]: the next round's scores
  __shared__ float mx[kTHeads];
  __shared__ float den_sh[kTHeads];
  const int t = static_cast<int>(blockIdx.z);
  const int pos = run.pos(t);
  const RowGeometry rg(g, run, t);
  const int d0 = static_cast<int>(blockIdx.x) * kTDims;
  const int hbase = static_cast<int>(blockIdx.y) * kTHeads;
  const int n_here = min(kTHeads, g.n_head - hbase);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const float* const sc0 = scratch + (int64_t{t} * g.n_head + hbase) * g.max_rows;
  if (tid < n_here) {  // the scores' maxima, handed over by the scores kernel
    mx[tid] = fmaxf(sinks[hbase + tid], key_value(maxima[int64_t{t} * g.n_head + hbase + tid]));
  }
  __syncthreads();

  // Staging: this thread's scores are row ks of the round, heads hs + 8 j (a warp's load covers
  // 8 consecutive rows of 4 heads; its weight stores hit 32 distinct banks); its value copies
  // are rows vr + 4 j of the round at 16-byte column vc.
  const int ks = lane % 8 + 8 * (warp % 4), hs = lane / 8 + 4 * (warp / 4);
  const int vr = tid / (kTDims / 4), vc = tid % (kTDims / 4);
  // Raw scores go to this thread's own slots of `raw` (read back by the same thread only).
  const auto stage_scores = [&](int i0) {
#pragma unroll
    for (int j = 0; j < kTScores; ++j) {
      const int h = hs + 8 * j;
      if (h < n_here && i0 + ks < rg.n_rows)
        cp_async4(raw + j * kTThreads + tid, sc0 + int64_t{h} * g.max_rows + i0 + ks);
    }
  };
  const auto store_weights = [&](int i0, float* w) {
#pragma unroll
    for (int j = 0; j < kTScores; ++j) {
      const int h = hs + 8 * j;
      w[ks * kTWPitch + h] = h < n_here && i0 + ks < rg.n_rows
                                 ? detmath::expf(raw[j * kTThreads + tid] - mx[h])
                                 : 0.0f;
    }
  };
  // The values of rows i0 .. of the round into v, and the round's scores into `raw`: one group.
  const auto stage = [&](int i0, float* v) {
    stage_scores(i0);
#pragma unroll
    for (int j = 0; j < kTCopies; ++j) {
      const int r = vr + j * (kTThreads / (kTDims / 4));
      const bool live = i0 + r < rg.n_rows;
      const float* src = live ? rg.row(i0 + r) + d0 + 4 * vc : run.ring;
      cp_async16_or_zero(v + r * kTDims + 4 * vc, src, live);
    }
    cp_async_commit();
  };

  // Outputs: heads 32 wm + 4 hl + (0..3, 16..19), dims 64 wn + 4 dl + (0..3, 32..35).
  const int wm = warp % 2, wn = warp / 2, hl = lane % 4, dl = lane / 4;
  const int wcol = 32 * wm + 4 * hl, vcol = 64 * wn + 4 * dl;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  }
  // Thread h < n_here adds head h's denominator: the sink term, then every weight in row order.
  const bool den_thread = tid < n_here;
  float den = den_thread ? detmath::expf(sinks[hbase + tid] - mx[tid]) : 1.0f;

  const int n_rounds = (rg.n_rows + kTRows - 1) / kTRows;
  stage(0, vals);
  cp_async_wait<0>();
  store_weights(0, wts);
  for (int rd = 0; rd < n_rounds; ++rd) {
    const int st = rd & 1;
    const float* const v = vals + st * kTValFloats;
    const float* const w = wts + st * kTWtFloats;
    cp_async_wait<0>();
    __syncthreads();  // this round's values and weights are in; last round's are free
    const bool more = rd + 1 < n_rounds;
    if (more) stage((rd + 1) * kTRows, vals + (st ^ 1) * kTValFloats);
    if (den_thread) {
#pragma unroll
      for (int k = 0; k < kTRows; ++k) den += w[k * kTWPitch + tid];
    }
#pragma unroll
    for (int k = 0; k < kTRows; ++k) {
      const float4 wa = *reinterpret_cast<const float4*>(w + k * kTWPitch + wcol);
      const float4 wb = *reinterpret_cast<const float4*>(w + k * kTWPitch + wcol + 16);
      const float4 va = *reinterpret_cast<const float4*>(v + k * kTDims + vcol);
      const float4 vb = *reinterpret_cast<const float4*>(v + k * kTDims + vcol + 32);
      const float wk[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
      const float vk[8] = {va.x, va.y, va.z, va.w, vb.x, vb.y, vb.z, vb.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(wk[i], vk[j], acc[i][j]);
      }
    }
    if (more) {
      cp_async_wait<0>();
      store_weights((rd + 1) * kTRows, wts + (st ^ 1) * kTWtFloats);
    }
  }
  __syncthreads();  // every value read: the stages take the outputs
  if (den_thread) den_sh[tid] = den;
  __syncthreads();
  float* const o = vals;  // [kTHeads][kTDims]
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int h = wcol + i % 4 + 16 * (i / 4);
    const float inv = 1.0f / den_sh[h];
    *reinterpret_cast<float4*>(o + h * kTDims + vcol) =
        make_float4(acc[i][0] * inv, acc[i][1] * inv, acc[i][2] * inv, acc[i][3] * inv);
    *reinterpret_cast<float4*>(o + h * kTDims + vcol + 32) =
        make_float4(acc[i][4] * inv, acc[i][5] * inv, acc[i][6] * inv, acc[i][7] * inv);
  }
  __syncthreads();
  if (d0 + kTDims > kNope) {  // the rotated tail: 32 pairs per head
    for (int i = tid; i < n_here * 32; i += kTThreads)
      rope_pair(o + (i / 32) * kTDims + (kNope - d0), rope.inv_freq, i % 32, pos, true);
    __syncthreads();
  }
  float* const dst = out_all + t * out_stride + int64_t{hbase} * kHd + d0;
  for (int i = tid; i < n_here * (kTDims / 4); i += kTThreads) {
    const int h = i / (kTDims / 4), q = i % (kTDims / 4);
    reinterpret_cast<float4*>(dst + int64_t{h} * kHd)[q] =
        reinterpret_cast<const float4*>(o + h * kTDims)[q];
  }
}

}  // namespace

// The 16-byte copies and stores: ring, comp and output rows at 16-byte boundaries.
bool attention_sum_tile_fits(const float* ring, const float* comp, const float* out,
                             int64_t out_stride) {
  return aligned16(ring) && aligned16(comp) && aligned16(out) && out_stride % 4 == 0;
}

void launch_attention_sum_tile(const AttentionGeometry& g, const float* ring, const float* comp,
                               const int32_t* visible, const float* sinks, const RopeArg& rope,
                               RowSpan rows, const float* scratch, const uint32_t* maxima,
                               float* out, int64_t out_stride, cudaStream_t s) {
  DS4_CHECK_MSG(attention_sum_tile_fits(ring, comp, out, out_stride),
                "attention sum: rows not 16-byte aligned");
  DS4_CHECK_MSG(maxima != nullptr, "attention sum: no score maxima");
  if (rows.n == 0) return;
  DS4_CUDA_CHECK(cudaFuncSetAttribute(attention_sum_tile_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(kTSmem)));
  const dim3 grid(kHd / kTDims, (g.n_head + kTHeads - 1) / kTHeads, rows.n);
  launch(attention_sum_tile_kernel, grid, kTThreads, kTSmem, s, g,
         OneRun{ring, comp, visible, rows.p0}, sinks, rope, scratch, maxima, out, out_stride);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
