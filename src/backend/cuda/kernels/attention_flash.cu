// src/backend/cuda/kernels/attention_flash.cu: batched sink attention on the f16 tensor cores
// (contract in attention_flash.cuh).
//
// Why: the exact batch kernels (scores on the FP64 tensor cores, then a float weighted sum in
// row order) took a quarter of a 2,048-row Flash q2 prefill chunk's kernel time at 6k context on
// the H200 (ncu).
//
// A CTA takes one batch row and 64 heads (all of Flash's), so each cached row is read once per
// batch row, and walks its cached rows in tiles of 16 (mma.m16n8k16, fragments by ldmatrix):
//   stage   the next tile's rows come into registers while the current one is worked on, then go
//           to shared memory as f16 (hi, and lo unless the rows are f16 values);
//   scores  warp (m, k): heads 16 m .., dims 128 k .., both n8 tiles of the 16 rows; the four dim
//           quarters' partial scores meet in shared memory and are added in a fixed order;
//   softmax thread (head, j): rows 2 j, 2 j + 1; the running maximum starts at the sink and the
//           running denominator at 1 (the sink's term), so the sink needs nothing at the end;
//           the weights go to shared memory as f16 hi / lo, with the rescale of earlier sums;
//   sum     warp (m, d): heads 16 m .., dims 128 d .. (16 n8 tiles, 64 float accumulators per
//           lane), rescaled, then += P x V with V the same staged rows (this model's one KV head
//           is both key and value).
// At the end each accumulator is divided by its head's denominator and the RoPE tail rotated back
// in registers (a pair of dims sits in one lane's two adjacent accumulators).
#include <cuda_fp16.h>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/async_copy.cuh"
#include "backend/cuda/kernels/attention_flash.cuh"
#include "backend/cuda/kernels/attention_rows.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "base/check.h"
#include "base/det_math.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kFlHeads = 64;             // heads per CTA
constexpr int kFlRows = 16;              // cached rows per tile
constexpr int kFlThreads = 512;          // 16 warps
constexpr int kFlPitch = kHd + 8;        // halves per staged q / cached row: 1,040 B, so the 8
                                         // rows of an ldmatrix fall in distinct banks
constexpr int kFlPPitch = kFlRows + 8;   // halves per weight row (48 B: distinct banks too)
constexpr int kFlSPitch = kFlRows + 2;   // floats per partial-score row
constexpr int kFlQuarters = 4;           // the scores' dims over 4 warps per head tile
constexpr int kFlDimsPerWarp = kHd / 4;  // the weighted sum's dims per warp
constexpr int kFlNTiles = kFlDimsPerWarp / 8;
static_assert(kFlThreads / 32 == (kFlHeads / 16) * kFlQuarters, "scores: a warp per (m, k)");
static_assert(kFlThreads / 32 == (kFlHeads / 16) * (kHd / kFlDimsPerWarp), "sum: per (m, d)");
static_assert(kFlThreads == kFlHeads * (kFlRows / 2), "softmax: two rows per thread");
static_assert(kFlThreads == kFlRows * 32 && kHd == 32 * 4 * 4, "staging: a warp per row");

constexpr int kFlQHalves = kFlHeads * kFlPitch;
constexpr int kFlKHalves = kFlRows * kFlPitch;
constexpr size_t kFlSmem = sizeof(__half) * (2 * kFlQHalves + 4 * kFlKHalves) +
                           sizeof(float) * kFlQuarters * kFlHeads * kFlSPitch +
                           sizeof(__half) * 2 * kFlHeads * kFlPPitch + sizeof(float) * 2 * kFlHeads;
static_assert(kFlSmem <= 227 * 1024, "one CTA per SM");

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
// d += A (16 x 16 f16) x B (16 x 8 f16) in float (PTX ISA, mma.m16n8k16 fragments).
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // built for sm_90 only; f16 mma needs sm_80
#endif
}

// Four floats as f16 hi parts at hi and (lo != nullptr) their remainders at lo (8-byte stores).
__device__ __forceinline__ void store_split4(__half* hi, __half* lo, float4 v) {
  __half2 h[2], l[2];
  f16_split4(v, h, l);
  *reinterpret_cast<uint2*>(hi) = *reinterpret_cast<const uint2*>(h);
  if (lo != nullptr) *reinterpret_cast<uint2*>(lo) = *reinterpret_cast<const uint2*>(l);
}

template <bool kSplitRows>
__global__ void __launch_bounds__(kFlThreads, 1)
    attention_flash_kernel(const float* q_all, int64_t q_stride, AttentionGeometry g, OneRun src,
                           const float* sinks, RopeArg rope, float* out_all, int64_t out_stride) {
  extern __shared__ __align__(16) unsigned char fl_smem[];
  __half* const qhi = reinterpret_cast<__half*>(fl_smem);  // [kFlHeads][kFlPitch]
  __half* const qlo = qhi + kFlQHalves;
  __half* const khi = qlo + kFlQHalves;      // [2][kFlRows][kFlPitch]: double-buffered tiles
  __half* const klo = khi + 2 * kFlKHalves;  // their remainders (kSplitRows)
  float* const spart = reinterpret_cast<float*>(klo + 2 * kFlKHalves);  // [4][heads][kFlSPitch]
  __half* const phi = reinterpret_cast<__half*>(spart + kFlQuarters * kFlHeads * kFlSPitch);
  __half* const plo = phi + kFlHeads * kFlPPitch;  // [kFlHeads][kFlPPitch] each
  float* const corr = reinterpret_cast<float*>(plo + kFlHeads * kFlPPitch);
  float* const lsum = corr + kFlHeads;
  kernel_begin();
  const int t = static_cast<int>(blockIdx.y);
  const int h0 = static_cast<int>(blockIdx.x) * kFlHeads;
  const RowGeometry rg(g, src, t);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int gq = lane / 4, tq = lane % 4;

  for (int i = tid; i < kFlHeads * (kHd / 4); i += kFlThreads) {
    const int hl = i / (kHd / 4), c4 = i % (kHd / 4);
    const int h = h0 + hl;  // heads past the last: zero queries, never stored
    const float4 v =
        h < g.n_head ? reinterpret_cast<const float4*>(q_all + t * q_stride + int64_t{h} * kHd)[c4]
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    store_split4(qhi + hl * kFlPitch + 4 * c4, qlo + hl * kFlPitch + 4 * c4, v);
  }
  // Staging: warp w brings cached row w of a tile (zeros past the last row), float4 lane + 32 j.
  float4 pre[4];
  const auto fetch = [&](int i0) {
    const int i = i0 + warp;
    const float4* row = i < rg.n_rows ? reinterpret_cast<const float4*>(rg.row(i)) : nullptr;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      pre[j] = row != nullptr ? row[lane + 32 * j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  };
  const auto stash = [&](int buf) {
    const int off = (buf * kFlRows + warp) * kFlPitch;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = 4 * (lane + 32 * j);
      store_split4(khi + off + c, kSplitRows ? klo + off + c : nullptr, pre[j]);
    }
  };

  // The softmax thread's head and rows, and its running maximum and denominator.
  const int sh = tid / (kFlRows / 2), sj = tid % (kFlRows / 2);
  float m_run = h0 + sh < g.n_head ? sinks[h0 + sh] : 0.0f;
  float l_run = 1.0f;
  const float scale = 1.0f / sqrtf(static_cast<float>(kHd));
  // The scores' warp (mi, kq) and the sum's warp (mi, dq).
  const int mi = warp % 4, kq = warp / 4, dq = warp / 4;
  const int a_row = 16 * mi + lane % 16, a_col = 8 * (lane / 16);
  const int b_row = lane % 8 + 8 * (lane / 16), b_col = 8 * ((lane / 8) % 2);  // scores' K
  const int v_row = lane % 8 + 8 * ((lane / 8) % 2), v_col = 8 * (lane / 16);  // sum's V (trans)
  float o[kFlNTiles][4];
#pragma unroll
  for (int n = 0; n < kFlNTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

  const int n_tiles = (rg.n_rows + kFlRows - 1) / kFlRows;
  fetch(0);
  stash(0);
  __syncthreads();
  for (int tile = 0; tile < n_tiles; ++tile) {
    const int buf = tile % 2, i0 = tile * kFlRows;
    if (tile + 1 < n_tiles) fetch(i0 + kFlRows);
    const __half* const kh = khi + buf * kFlKHalves;
    const __half* const kl = klo + buf * kFlKHalves;
    {  // scores: heads 16 mi .., dims 128 kq .., rows 0..15 of the tile
      float sacc[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < kHd / kFlQuarters / 16; ++ks) {
        const int k0 = (kHd / kFlQuarters) * kq + 16 * ks;
        uint32_t ah[4], al[4], b[4];
        ldsm_x4(ah, qhi + a_row * kFlPitch + k0 + a_col);
        ldsm_x4(al, qlo + a_row * kFlPitch + k0 + a_col);
        ldsm_x4(b, kh + b_row * kFlPitch + k0 + b_col);
        mma_f16(sacc[0], ah, b[0], b[1]);
        mma_f16(sacc[1], ah, b[2], b[3]);
        mma_f16(sacc[0], al, b[0], b[1]);
        mma_f16(sacc[1], al, b[2], b[3]);
        if (kSplitRows) {
          ldsm_x4(b, kl + b_row * kFlPitch + k0 + b_col);
          mma_f16(sacc[0], ah, b[0], b[1]);
          mma_f16(sacc[1], ah, b[2], b[3]);
        }
      }
      float* sp = spart + (kq * kFlHeads + 16 * mi + gq) * kFlSPitch + 2 * tq;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        *reinterpret_cast<float2*>(sp + 8 * j) = make_float2(sacc[j][0], sacc[j][1]);
        *reinterpret_cast<float2*>(sp + 8 * kFlSPitch + 8 * j) =
            make_float2(sacc[j][2], sacc[j][3]);
      }
    }
    __syncthreads();
    {  // online softmax: head sh, rows 2 sj and 2 sj + 1 (8 lanes per head)
      float s[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int r = 2 * sj + e;
        float v = spart[sh * kFlSPitch + r];
#pragma unroll
        for (int k = 1; k < kFlQuarters; ++k) v += spart[(k * kFlHeads + sh) * kFlSPitch + r];
        s[e] = i0 + r < rg.n_rows ? v * scale : kNegInf;
      }
      float mx = fmaxf(s[0], s[1]);
#pragma unroll
      for (int off = 1; off < kFlRows / 2; off *= 2)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_new = fmaxf(m_run, mx);
      const float c = detmath::expf(m_run - m_new);
      const float p0 = detmath::expf(s[0] - m_new), p1 = detmath::expf(s[1] - m_new);
      float ps = p0 + p1;
#pragma unroll
      for (int off = 1; off < kFlRows / 2; off *= 2) ps += __shfl_xor_sync(0xffffffffu, ps, off);
      l_run = l_run * c + ps;
      m_run = m_new;
      const __half2 hi = __floats2half2_rn(p0, p1);
      const float2 hf = __half22float2(hi);
      *reinterpret_cast<__half2*>(phi + sh * kFlPPitch + 2 * sj) = hi;
      *reinterpret_cast<__half2*>(plo + sh * kFlPPitch + 2 * sj) =
          __floats2half2_rn(p0 - hf.x, p1 - hf.y);
      if (sj == 0) corr[sh] = c;
    }
    __syncthreads();
    {  // weighted sum: heads 16 mi .., dims 128 dq ..
      const float c0 = corr[16 * mi + gq], c1 = corr[16 * mi + gq + 8];
#pragma unroll
      for (int n = 0; n < kFlNTiles; ++n)
        o[n][0] *= c0, o[n][1] *= c0, o[n][2] *= c1, o[n][3] *= c1;
      uint32_t ah[4], al[4];
      ldsm_x4(ah, phi + a_row * kFlPPitch + a_col);
      ldsm_x4(al, plo + a_row * kFlPPitch + a_col);
#pragma unroll
      for (int np = 0; np < kFlNTiles / 2; ++np) {
        const int d0 = kFlDimsPerWarp * dq + 16 * np;
        uint32_t b[4];
        ldsm_x4_trans(b, kh + v_row * kFlPitch + d0 + v_col);
        mma_f16(o[2 * np], ah, b[0], b[1]);
        mma_f16(o[2 * np + 1], ah, b[2], b[3]);
        mma_f16(o[2 * np], al, b[0], b[1]);
        mma_f16(o[2 * np + 1], al, b[2], b[3]);
        if (kSplitRows) {
          ldsm_x4_trans(b, kl + v_row * kFlPitch + d0 + v_col);
          mma_f16(o[2 * np], ah, b[0], b[1]);
          mma_f16(o[2 * np + 1], ah, b[2], b[3]);
        }
      }
    }
    if (tile + 1 < n_tiles) stash(1 - buf);
    __syncthreads();
  }
  if (sj == 0) lsum[sh] = l_run;
  __syncthreads();
  const int pos = src.pos(t);
#pragma unroll
  for (int rh = 0; rh < 2; ++rh) {  // the lane's rows gq and gq + 8 of its head tile
    const int hl = 16 * mi + gq + 8 * rh, h = h0 + hl;
    const float inv = 1.0f / lsum[hl];
    float* const orow = out_all + t * out_stride + int64_t{h} * kHd;
#pragma unroll
    for (int n = 0; n < kFlNTiles; ++n) {
      const int d = kFlDimsPerWarp * dq + 8 * n + 2 * tq;
      float pair[2] = {o[n][2 * rh] * inv, o[n][2 * rh + 1] * inv};
      if (d >= kNope) {  // inverse RoPE of pair (d, d + 1): the sine negated
        float c, sn;
        rope_angle(rope.inv_freq, (d - kNope) / 2, pos, &sn, &c);
        rope_rotate(pair, 0, c, -sn);
      }
      if (h < g.n_head) *reinterpret_cast<float2*>(orow + d) = make_float2(pair[0], pair[1]);
    }
  }
}

template <bool kSplitRows>
void launch_flash(const float* q, int64_t q_stride, const AttentionGeometry& g, const OneRun& src,
                  int n, const float* sinks, const RopeArg& rope, float* out, int64_t out_stride,
                  cudaStream_t s) {
  static const bool smem_set = [] {  // once per kernel (steps may be recorded meanwhile)
    DS4_CUDA_CHECK(cudaFuncSetAttribute(attention_flash_kernel<kSplitRows>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kFlSmem)));
    return true;
  }();
  (void)smem_set;
  launch(attention_flash_kernel<kSplitRows>, dim3((g.n_head + kFlHeads - 1) / kFlHeads, n),
         kFlThreads, kFlSmem, s, q, q_stride, g, src, sinks, rope, out, out_stride);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool attention_flash_fits(const float* q, int64_t q_stride, const float* ring, const float* comp,
                          const float* out, int64_t out_stride) {
  return aligned16(q) && q_stride % 4 == 0 && aligned16(ring) && aligned16(comp) &&
         aligned16(out) && out_stride % 2 == 0;
}

void launch_attention_flash(const float* q, int64_t q_stride, const AttentionGeometry& g,
                            const float* ring, const float* comp, const int32_t* visible,
                            const float* sinks, const RopeArg& rope, RowSpan rows, float* out,
                            int64_t out_stride, cudaStream_t s) {
  DS4_CHECK(g.ring_cap >= g.raw_cap + rows.n - 1 && g.raw_cap > 0);
  DS4_CHECK_MSG(rows.n >= 0 && rows.n <= kMaxGridYZ, "flash attention: %d rows", rows.n);
  DS4_CHECK_MSG(attention_flash_fits(q, q_stride, ring, comp, out, out_stride),
                "flash attention: rows not 16-byte aligned");
  if (rows.n == 0) return;
  const OneRun src{ring, comp, visible, rows.p0};
  if (g.f16_values) {
    launch_flash<false>(q, q_stride, g, src, rows.n, sinks, rope, out, out_stride, s);
  } else {
    launch_flash<true>(q, q_stride, g, src, rows.n, sinks, rope, out, out_stride, s);
  }
}

}  // namespace ds4::backend::cuda
