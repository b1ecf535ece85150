// src/backend/cuda/kernels/indexer_imma.cu: the lightning indexer's batch scores on the int8 tensor
// cores (contract and exactness in indexer_imma.cuh). Built with -fmad=false: the fused
// multiply-adds are written.
//
// Two steps. The encode kernel (a warp per 128-float vector, lanes 8 b .. 8 b + 7 on block b)
// turns every key and every query head into int8 codes and one float unit per 32-value block.
// The score kernel takes a tile of 128 keys (codes staged in shared memory) and 4 batch rows, one
// per warp. A warp holds its row's query codes as mma A fragments (4 m16 tiles of heads x 4
// k32 blocks) in registers; per n8 tile of keys it makes one fresh product per (head tile,
// block), so each int32 result is one block's exact dot, and folds it with the two units into the
// head's dot in block order. The C fragment gives thread (g, t) heads 8 j + g (j = 0 .. 7) of keys
// 2 t and 2 t + 1: exactly the CPU's chain for lane g of its 8 head lanes, which the thread runs
// in j order; three shuffles then add the lanes as the CPU's horizontal sum does.
#include <cstdint>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/indexer_imma.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/mma_s8.cuh"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kIhd = 128;                      // indexer head dim
constexpr int kBlock = 32;                     // values per FP4 block: one k32 product
constexpr int kBlocks = kIhd / kBlock;         // units per vector
constexpr int kVecBytes = kIhd + 4 * kBlocks;  // a vector's codes and units
constexpr int kMaxHeads = 64;
constexpr int kMTiles = kMaxHeads / 16;
constexpr int kTileKeys = 128;
constexpr int kNTiles = kTileKeys / 8;
constexpr int kWarps = 4;             // batch rows per CTA
constexpr int kKeyPitch = kIhd + 16;  // bytes: a B load's 8 keys x 4 words hit 32 banks
constexpr int kEncodeWarps = 8;
static_assert(kKeyPitch % 16 == 0 && (kKeyPitch / 4) % 32 == 4, "16-byte rows, 4 banks apart");

// float(d), exactly, for |d| < 2^22 (a block dot is at most 32 * 127 * 127): d is added to the
// mantissa of 1.5 * 2^23, whose unit is 1.
__device__ __forceinline__ float exact_float(int d) {
  return __int_as_float(d + 0x4B400000) - 12582912.0f;
}

__device__ __forceinline__ uint32_t code_byte(float x, int shift) {
  const int c = __float2int_rn(ldexpf(x, shift));
  return static_cast<uint32_t>(min(127, max(-127, c))) & 0xffu;
}

// Vector v at src + (v / per_row) * row_stride + (v % per_row) * 128: codes at codes + 128 v,
// units at units + 4 v. Unit of a block: 2^(E - 7) with amax = f * 2^E, f in [0.5, 1), so the
// codes lie in -127 .. 127 (0 and a zero unit for a block of zeros).
__global__ void __launch_bounds__(32 * kEncodeWarps)
    indexer_encode_kernel(const float* src, int64_t row_stride, int per_row, int n_vec,
                          int8_t* codes, float* units) {
  kernel_begin();
  const int v = static_cast<int>(blockIdx.x) * kEncodeWarps + static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (v >= n_vec) return;
  const float4 x = *reinterpret_cast<const float4*>(src + int64_t{v / per_row} * row_stride +
                                                    int64_t{v % per_row} * kIhd + 4 * lane);
  float amax = fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(x.z), fabsf(x.w)));
  for (int o = 1; o < kBlock / 4; o *= 2) amax = fmaxf(amax, __shfl_xor_sync(~0u, amax, o));
  int e = 0;
  frexpf(amax, &e);
  const int shift = 7 - e;
  const uint32_t word = code_byte(x.x, shift) | code_byte(x.y, shift) << 8 |
                        code_byte(x.z, shift) << 16 | code_byte(x.w, shift) << 24;
  reinterpret_cast<uint32_t*>(codes + int64_t{v} * kIhd)[lane] = word;
  if (lane % (kBlock / 4) == 0)
    units[int64_t{v} * kBlocks + lane / (kBlock / 4)] = amax > 0.0f ? ldexpf(1.0f, e - 7) : 0.0f;
}

// Keys blockIdx.x * 128 .. of batch rows blockIdx.y * 4 .. (one per warp); see the file comment.
__global__ void __launch_bounds__(32 * kWarps)
    indexer_scores_imma_kernel(const int8_t* kc, const float* ku, const int8_t* qc, const float* qu,
                               const float* w_all, int64_t w_stride, float wscale, int n_ih,
                               int top_k, int p0, int n_rows, int n_keys, int n_stride,
                               float* scores) {
  kernel_begin();
  __shared__ __align__(16) uint8_t ks[kTileKeys * kKeyPitch];
  __shared__ float4 kus[kTileKeys];
  const int c0 = static_cast<int>(blockIdx.x) * kTileKeys;
  const int t0 = static_cast<int>(blockIdx.y) * kWarps;
  const int n_hi = (p0 + min(t0 + kWarps, n_rows)) / 4;  // the CTA's last row sees the most keys
  if (n_hi <= top_k || c0 >= n_hi) return;               // uniform per CTA
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int tile = min(kTileKeys, n_keys - c0);
  constexpr int kQuads = kIhd / 16;  // 16-byte pieces of a key's codes
  const uint4* src = reinterpret_cast<const uint4*>(kc + int64_t{c0} * kIhd);
  for (int i = tid; i < kTileKeys * kQuads; i += 32 * kWarps) {
    const int k = i / kQuads;
    *reinterpret_cast<uint4*>(ks + k * kKeyPitch + 16 * (i % kQuads)) =
        k < tile ? src[i] : make_uint4(0, 0, 0, 0);
  }
  const float4* usrc = reinterpret_cast<const float4*>(ku) + c0;
  for (int i = tid; i < kTileKeys; i += 32 * kWarps)
    kus[i] = i < tile ? usrc[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  __syncthreads();
  const int t = t0 + warp;
  const int n_t = (p0 + t + 1) / 4;
  if (t >= n_rows || n_t <= top_k || c0 >= n_t) return;  // uniform per warp, after the only sync
  const int g = lane / 4, tq = lane % 4;

  // The row's query codes as A fragments (register r: head 16 m + g + 8 (r % 2), dims
  // 32 b + 16 (r / 2) + 4 tq ..), the units of those heads and their weights (head 16 m + 8 i + g
  // is the CPU's head 8 j + g with j = 2 m + i).
  uint32_t a[kMTiles][kBlocks][4];
  float uq[kMTiles][kBlocks][2];
  float wv[2 * kMTiles];
  const int8_t* q = qc + int64_t{t} * n_ih * kIhd;
  const float* q_units = qu + int64_t{t} * n_ih * kBlocks;
  const float* w = w_all + t * w_stride;
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int h = 16 * m + 8 * i + g;
      const bool live = h < n_ih;
      wv[2 * m + i] = live ? w[h] * wscale : 0.0f;
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        uq[m][b][i] = live ? q_units[h * kBlocks + b] : 0.0f;
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          a[m][b][i + 2 * hi] =
              live
                  ? *reinterpret_cast<const uint32_t*>(q + h * kIhd + kBlock * b + 16 * hi + 4 * tq)
                  : 0u;
        }
      }
    }
  }

  float* out = scores + int64_t{t} * n_stride + c0;
  const int n_here = n_t - c0;
#pragma unroll 1
  for (int nt = 0; nt < kNTiles && 8 * nt < n_here; ++nt) {
    // B fragments: key 8 nt + g, dims 32 b + 16 r + 4 tq ..; C element e: head 16 m + g +
    // 8 (e / 2), key 8 nt + 2 tq + e % 2.
    const uint8_t* kb = ks + (8 * nt + g) * kKeyPitch + 4 * tq;
    const float4 u0 = kus[8 * nt + 2 * tq], u1 = kus[8 * nt + 2 * tq + 1];
    const float uk[2][kBlocks] = {{u0.x, u0.y, u0.z, u0.w}, {u1.x, u1.y, u1.z, u1.w}};
    float dot[kMTiles][4] = {};
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
      const uint32_t b0 = *reinterpret_cast<const uint32_t*>(kb + kBlock * b);
      const uint32_t b1 = *reinterpret_cast<const uint32_t*>(kb + kBlock * b + 16);
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        if (16 * m >= n_ih) break;
        int d[4];
        mma_s8_fresh(d, a[m][b], b0, b1);
#pragma unroll
        for (int e = 0; e < 4; ++e)
          dot[m][e] = fmaf(exact_float(d[e]), uq[m][b][e / 2] * uk[e % 2][b], dot[m][e]);
      }
    }
    float s[2] = {0.0f, 0.0f};  // the CPU's head lane g, for keys 2 tq and 2 tq + 1
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if (16 * m + 8 * i >= n_ih) break;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const float v = dot[m][2 * i + k];
          s[k] = fmaf(v > 0.0f ? v : 0.0f, wv[2 * m + i], s[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      float x = s[k];
      x += __shfl_xor_sync(~0u, x, 16);  // lanes l and l + 4
      x += __shfl_xor_sync(~0u, x, 8);   // (t0 + t2), (t1 + t3)
      x += __shfl_xor_sync(~0u, x, 4);   // their sum
      const int c = 8 * nt + 2 * tq + k;
      if (g == 0 && c < n_here) out[c] = x;
    }
  }
}

}  // namespace

size_t indexer_code_bytes(int n_keys, int n_rows, int n_ih) {
  return size_t{kVecBytes} *
         (static_cast<size_t>(n_keys) + static_cast<size_t>(n_rows) * static_cast<size_t>(n_ih));
}

void launch_indexer_scores_imma(const float* keys, const float* iq, int64_t iq_stride,
                                const float* w, int64_t w_stride, float wscale, int n_ih, int top_k,
                                RowSpan rows, int n_stride, void* codes, float* scores,
                                cudaStream_t s) {
  DS4_CHECK(n_ih % 8 == 0 && n_ih <= kMaxHeads && iq_stride % 4 == 0);
  const int n_keys = (rows.p0 + rows.n) / 4;
  const int n_q = rows.n * n_ih;
  auto* base = static_cast<uint8_t*>(codes);
  auto* kc = reinterpret_cast<int8_t*>(base);
  auto* ku = reinterpret_cast<float*>(base + int64_t{n_keys} * kIhd);
  auto* qc = reinterpret_cast<int8_t*>(base + int64_t{n_keys} * kVecBytes);
  auto* qu = reinterpret_cast<float*>(base + int64_t{n_keys} * kVecBytes + int64_t{n_q} * kIhd);
  const int threads = 32 * kEncodeWarps;
  launch(indexer_encode_kernel, dim3((n_keys + kEncodeWarps - 1) / kEncodeWarps), threads, 0, s,
         keys, int64_t{kIhd}, 1, n_keys, kc, ku);
  launch(indexer_encode_kernel, dim3((n_q + kEncodeWarps - 1) / kEncodeWarps), threads, 0, s, iq,
         iq_stride, n_ih, n_q, qc, qu);
  launch(indexer_scores_imma_kernel,
         dim3((n_keys + kTileKeys - 1) / kTileKeys, (rows.n + kWarps - 1) / kWarps), 32 * kWarps, 0,
         s, kc, ku, qc, qu, w, w_stride, wscale, n_ih, top_k, rows.p0, rows.n, n_keys, n_stride,
         scores);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
