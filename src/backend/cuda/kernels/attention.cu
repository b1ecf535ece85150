// src/backend/cuda/kernels/attention.cu: batched attention kernels and their launchers (contract
// in attention.cuh). Every kernel takes the batch's first position p0 and derives each row's
// position p0 + t (t = its row in the batch) and everything that follows from it. Built with
// -fmad=false; each row's float operations are those of backend/cpu/attention.cpp, in its order,
// but for the batches and decode rows handed to attention_flash.cu and attention_split.cu.
#include <algorithm>

#include "backend/cuda/check.h"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/attention_flash.cuh"
#include "backend/cuda/kernels/attention_rows.cuh"
#include "backend/cuda/kernels/attention_split.cuh"
#include "backend/cuda/kernels/attention_sum_tile.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/lane_rules.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "backend/cuda/kernels/topk.cuh"

namespace ds4::backend::cuda {
namespace {

constexpr int kIhd = 128;

// One warp simulates FP8 on a block of 64 values (amax floor 1e-4, power-of-two scale).
__device__ void fp8_block_warp(float* x) {
  const int lane = threadIdx.x % 32;
  float a = fmaxf(fabsf(x[lane]), fabsf(x[lane + 32]));
  for (int off = 16; off > 0; off /= 2) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, off));
  const float scale = block_scale_pow2(fmaxf(a, 1e-4f), 1.0f / 448.0f);
  for (int i = lane; i < 64; i += 32) {
    x[i] = e4m3_round(fminf(fmaxf(x[i] / scale, -448.0f), 448.0f)) * scale;
  }
}

// Hadamard (natural order, 1/sqrt(128)) + FP4 in blocks of 32 of a 128-wide vector in shared
// memory, by a block of at least 64 threads.
__device__ void hadamard_fp4(float* x) {
  for (int stride = 1; stride < kIhd; stride *= 2) {
    __syncthreads();
    if (threadIdx.x < kIhd / 2) {
      const int i = threadIdx.x % stride, base = (threadIdx.x / stride) * 2 * stride;
      const float a = x[base + i], b = x[base + stride + i];
      x[base + i] = a + b;
      x[base + stride + i] = a - b;
    }
  }
  __syncthreads();
  if (threadIdx.x < kIhd) x[threadIdx.x] *= 0.08838834764831845f;
  __syncthreads();
  if (threadIdx.x < kIhd) {  // 4 warps, one per block of 32
    const int lane = threadIdx.x % 32;
    float* blk = x + (threadIdx.x / 32) * 32;
    float a = fabsf(blk[lane]);
    for (int off = 16; off > 0; off /= 2) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, off));
    const float scale = block_scale_pow2(fmaxf(a, 6.0f * ldexpf(1.0f, -126)), 1.0f / 6.0f);
    blk[lane] = e2m1_round(fminf(fmaxf(blk[lane] / scale, -6.0f), 6.0f)) * scale;
  }
  __syncthreads();
}

// ---- RoPE + FP8 + raw store: one CTA per row ----

// The rows the store writes: n consecutive positions of one sequence from p0 into one ring
// (or SeqTable: each row its own).
struct StoreRun {
  float* ring;
  int p0;
  __device__ int pos(int t) const { return p0 + t; }
  __device__ float* ring_of(int) const { return ring; }
};

template <class Src>
__global__ void rope_qkv_store_kernel(float* q_all, int64_t q_stride, int n_head, float* kv_all,
                                      int64_t kv_stride, RopeArg rope,
                                      const __grid_constant__ Src src, bool qat, bool f16_rows,
                                      int ring_cap) {
  kernel_begin();
  const int t = static_cast<int>(blockIdx.x);
  const int pos = src.pos(t);
  float* q = q_all + t * q_stride;
  float* kv = kv_all + t * kv_stride;
  float* raw_slot = src.ring_of(t) + int64_t{pos % ring_cap} * kHd;
  // The row's 32 angles once (every head and the kv row share them), then the rotations.
  __shared__ float cs[32], sn[32];
  if (threadIdx.x < 32)
    rope_angle(rope.inv_freq, threadIdx.x, pos, &sn[threadIdx.x], &cs[threadIdx.x]);
  __syncthreads();
  for (int i = threadIdx.x; i < n_head * 32; i += blockDim.x)
    rope_rotate(q + (i / 32) * kHd + kNope, i % 32, cs[i % 32], sn[i % 32]);
  if (threadIdx.x < 32) rope_rotate(kv + kNope, threadIdx.x, cs[threadIdx.x], sn[threadIdx.x]);
  if (qat && threadIdx.x / 32 < 7) fp8_block_warp(kv + (threadIdx.x / 32) * 64);
  __syncthreads();
  for (int i = threadIdx.x; i < kHd; i += blockDim.x) {
    const float v = f16_rows ? f16_round(kv[i]) : kv[i];
    kv[i] = v;
    raw_slot[i] = v;
  }
}

// ---- compressor lane over a batch ----

struct LaneArgs {
  int ratio, hd, width;
  float* st_kv;
  float* st_score;
  const float* kvc;
  int64_t kvc_stride;
  const float* gate;
  int64_t gate_stride;
  const void* ape;
  bool ape_f16;
  int p0, n;
};

// The (kv, score) a frontier row holds for position q, column col: from the batch when q >= p0
// (score = gate + ape[q % ratio], as the row-by-row store forms it), else from the frontier as it
// was before the batch: for ratio 4 the current window [w0, w0 + 4) in rows 4.., the previous one
// in rows 0..3 (positions before 0 read the empty rows of a fresh frontier); for ratio 128 row
// q - w0. w0 = the start of the window that was open when the batch began.
__device__ void lane_source(const LaneArgs& a, int q, int col, float* kv, float* score) {
  if (q >= a.p0) {
    const int64_t t = q - a.p0;
    const int64_t ai = int64_t{q % a.ratio} * a.width + col;
    const float bias = a.ape_f16 ? __half2float(static_cast<const __half*>(a.ape)[ai])
                                 : static_cast<const float*>(a.ape)[ai];
    *kv = a.kvc[t * a.kvc_stride + col];
    *score = a.gate[t * a.gate_stride + col] + bias;
    return;
  }
  const int row = lane_rules::state_row(a.p0, a.ratio, q);
  *kv = a.st_kv[int64_t{row} * a.width + col];
  *score = a.st_score[int64_t{row} * a.width + col];
}

// Window w of the batch (the w-th that ends in it, at position pe) pooled into dst + w * hd:
// softmax-gated sum, model.md §4.7 step 5, in the CPU's order.
__global__ void lane_pool_kernel(LaneArgs a, float* dst) {
  kernel_begin();
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= a.hd) return;
  const int w = static_cast<int>(blockIdx.y);
  const int pe = lane_rules::window_end(a.p0, a.ratio, w);
  float* out = dst + int64_t{w} * a.hd + j;
  float m = kNegInf;
  float den = 0.0f, sum = 0.0f;
  if (a.ratio == 4) {
    float pk[4], ps[4], ck[4], cs[4];
    for (int r = 0; r < 4; ++r) {
      lane_source(a, pe - 7 + r, j, &pk[r], &ps[r]);         // previous window, first half
      lane_source(a, pe - 3 + r, a.hd + j, &ck[r], &cs[r]);  // current window, second half
    }
    for (int r = 0; r < 4; ++r) {
      m = fmaxf(m, ps[r]);
      m = fmaxf(m, cs[r]);
    }
    if (m <= kEmptyBelow) {
      *out = 0.0f;
      return;
    }
    for (int r = 0; r < 4; ++r) {
      const float wp = detmath::expf(ps[r] - m), wc = detmath::expf(cs[r] - m);
      den += wp + wc;
      sum += wp * pk[r];
      sum += wc * ck[r];
    }
  } else {
    const int first = pe - a.ratio + 1;
    for (int r = 0; r < a.ratio; ++r) {
      float kv, score;
      lane_source(a, first + r, j, &kv, &score);
      m = fmaxf(m, score);
    }
    if (m <= kEmptyBelow) {
      *out = 0.0f;
      return;
    }
    for (int r = 0; r < a.ratio; ++r) {
      float kv, score;
      lane_source(a, first + r, j, &kv, &score);
      const float wt = detmath::expf(score - m);
      den += wt;
      sum += wt * kv;
    }
  }
  *out = den > 0.0f ? sum / den : 0.0f;
}

// Ratio 128, batches: the same pooling with the window's 128 (kv, score) pairs of kPoolCols
// columns staged in shared memory by the whole CTA, the maxima and the exponentials formed in
// parallel (the maximum is order-free; each weight is the same function of the same inputs),
// and one thread per column adding den and sum in row order, as lane_pool_kernel does. That
// kernel's thread per column walked its 256 dependent loads alone (16 CTAs of 128 threads for a
// 2048-row chunk: ~146 us per launch on the H200).
constexpr int kPoolRatio = 128, kPoolCols = 32, kPoolThreads = 256;
__global__ void __launch_bounds__(kPoolThreads) lane_pool128_kernel(LaneArgs a, float* dst) {
  kernel_begin();
  __shared__ float kv_s[kPoolRatio][kPoolCols + 1];
  __shared__ float wt_s[kPoolRatio][kPoolCols + 1];  // scores, then weights
  __shared__ float m_s[kPoolCols];
  const int tid = static_cast<int>(threadIdx.x);
  const int j0 = static_cast<int>(blockIdx.x) * kPoolCols;
  const int w = static_cast<int>(blockIdx.y);
  const int first = lane_rules::window_end(a.p0, kPoolRatio, w) - kPoolRatio + 1;
  const int n_cols = min(kPoolCols, a.hd - j0);
  for (int i = tid; i < kPoolRatio * kPoolCols; i += kPoolThreads) {
    const int r = i / kPoolCols, c = i % kPoolCols;
    if (c < n_cols) lane_source(a, first + r, j0 + c, &kv_s[r][c], &wt_s[r][c]);
  }
  __syncthreads();
  // The maximum of column c: 8 threads of 16 rows each, then their lanes combined.
  const int c = tid % kPoolCols, part = tid / kPoolCols;
  constexpr int kParts = kPoolThreads / kPoolCols, kPartRows = kPoolRatio / kParts;
  float m = kNegInf;
  if (c < n_cols) {
    for (int r = part * kPartRows; r < (part + 1) * kPartRows; ++r) m = fmaxf(m, wt_s[r][c]);
  }
  __shared__ float m_part[kParts][kPoolCols];
  m_part[part][c] = m;
  __syncthreads();
  if (tid < kPoolCols) {
    float mc = kNegInf;
    for (int p = 0; p < kParts; ++p) mc = fmaxf(mc, m_part[p][tid]);
    m_s[tid] = mc;
  }
  __syncthreads();
  for (int i = tid; i < kPoolRatio * kPoolCols; i += kPoolThreads) {
    const int r = i / kPoolCols, cc = i % kPoolCols;
    if (cc < n_cols && m_s[cc] > kEmptyBelow) wt_s[r][cc] = detmath::expf(wt_s[r][cc] - m_s[cc]);
  }
  __syncthreads();
  if (tid >= n_cols) return;
  float* out = dst + int64_t{w} * a.hd + j0 + tid;
  if (m_s[tid] <= kEmptyBelow) {
    *out = 0.0f;
    return;
  }
  float den = 0.0f, sum = 0.0f;
  for (int r = 0; r < kPoolRatio; ++r) {
    const float wt = wt_s[r][tid];
    den += wt;
    sum += wt * kv_s[r][tid];
  }
  *out = den > 0.0f ? sum / den : 0.0f;
}

// The frontier after the batch, column col of every row: each row holds the last position
// stored into it (ratio 4: row 4 + q % 4; ratio 128: row q % 128), and for ratio 4 rows 0..3 hold
// the window completed at the batch's last boundary, when there is one. Old values are read
// before anything is written.
__global__ void lane_state_kernel(LaneArgs a) {
  kernel_begin();
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= a.width) return;
  const int end = a.p0 + a.n;  // the first position after the batch
  auto last_with_residue = [&](int r) { return lane_rules::last_with_residue(end, a.ratio, r); };
  if (a.ratio == 4) {
    if (blockIdx.y != 0) return;  // one row of CTAs (ratio 4 launches one)
    const int b = lane_rules::last_boundary(end);
    const bool new_prev = b >= a.p0;
    float pk[4], ps[4], ck[4], cs[4];
    bool new_cur[4];
    for (int s = 0; s < 4; ++s) {
      if (new_prev) lane_source(a, b - 3 + s, col, &pk[s], &ps[s]);
      const int q = last_with_residue(s);
      new_cur[s] = q >= a.p0;
      if (new_cur[s]) lane_source(a, q, col, &ck[s], &cs[s]);
    }
    for (int s = 0; s < 4; ++s) {
      if (new_prev) {
        a.st_kv[int64_t{s} * a.width + col] = pk[s];
        a.st_score[int64_t{s} * a.width + col] = ps[s];
      }
      if (new_cur[s]) {
        a.st_kv[int64_t{4 + s} * a.width + col] = ck[s];
        a.st_score[int64_t{4 + s} * a.width + col] = cs[s];
      }
    }
  } else {
    // Row s holds the last position with residue s (lane_rules::rewritten_rows; each row once,
    // reading only the batch, so the order is free: rows blockIdx.y, blockIdx.y + gridDim.y, ..).
    for (int i = static_cast<int>(blockIdx.y); i < lane_rules::rewritten_rows(a.n, a.ratio);
         i += static_cast<int>(gridDim.y)) {
      const int q = end - 1 - i;
      const int s = q % a.ratio;
      float kv, score;
      lane_source(a, q, col, &kv, &score);
      a.st_kv[int64_t{s} * a.width + col] = kv;
      a.st_score[int64_t{s} * a.width + col] = score;
    }
  }
}

// Norm, RoPE at the window start, simulation and f16 rounding of pooled row blockIdx.x (the
// window of the batch's blockIdx.x-th boundary), in place.
__global__ void finish_rows_kernel(float* rows, int hd, const float* norm, RopeArg rope, int p0,
                                   int ratio, bool indexer_lane, bool qat, bool f16_rows) {
  kernel_begin();
  __shared__ float x[kHd];
  __shared__ double part[32];
  const int w = static_cast<int>(blockIdx.x);
  float* row = rows + int64_t{w} * hd;
  const int pos_start = lane_rules::window_start(p0, ratio, w);
  double ss = 0.0;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    x[i] = row[i];
    ss = add_product(ss, double(x[i]), double(x[i]));
  }
  ss = block_sum_double(ss, part);
  const float scale = rms_scale(ss, hd);
  for (int i = threadIdx.x; i < hd; i += blockDim.x) x[i] = (x[i] * scale) * norm[i];
  __syncthreads();
  if (threadIdx.x < 32) rope_pair(x + hd - 64, rope.inv_freq, threadIdx.x, pos_start, false);
  __syncthreads();
  if (qat) {
    if (indexer_lane) {
      hadamard_fp4(x);
    } else if (threadIdx.x / 32 < 7) {
      fp8_block_warp(x + (threadIdx.x / 32) * 64);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < hd; i += blockDim.x) row[i] = f16_rows ? f16_round(x[i]) : x[i];
}

// ---- indexer ----

// Head blockIdx.x of row blockIdx.y.
__global__ void indexer_query_kernel(float* iq_all, int64_t stride, RopeArg rope, int p0,
                                     bool qat) {
  kernel_begin();
  __shared__ float x[kIhd];
  const int t = static_cast<int>(blockIdx.y);
  float* head = iq_all + t * stride + blockIdx.x * kIhd;
  for (int i = threadIdx.x; i < kIhd; i += blockDim.x) x[i] = head[i];
  __syncthreads();
  if (threadIdx.x < 32) rope_pair(x + 64, rope.inv_freq, threadIdx.x, p0 + t, false);
  __syncthreads();
  if (qat) hadamard_fp4(x);
  for (int i = threadIdx.x; i < kIhd; i += blockDim.x) head[i] = x[i];
}

// ---- sink attention of a batch (prefill), in two kernels ----
//
// A single KV head serves all query heads, so a kernel that gave each head its own CTA read
// every cached row once per head (84 MB from L2 per layer at 2k context). Here the scores kernel
// has a CTA per (tile of cached rows, group of heads) and the weighted-sum kernel a CTA per
// (group of heads, range of dims): each cached value reaches a CTA once for several heads.
// Decode rows (fewer than kSumBatchRows) take attention_split.cu's kernels.

constexpr int kSumDims = 64;      // dims per weighted-sum CTA
constexpr int kSumRows = 32;      // cached rows per round of the weighted sum
constexpr int kSumThreads = 256;  // thread (g, dim): heads g, g + 4, .. of the CTA at one dim
constexpr int kSumGroups = kSumThreads / kSumDims;
constexpr int kSumLoads = kSumRows * kSumDims / 4 / kSumThreads;  // float4 per thread per round
static_assert(kSumThreads % kSumDims == 0 && kSumLoads >= 1, "weighted sum: whole float4 loads");
// Heads per weighted-sum CTA, and the fewest rows that take these kernels.
constexpr int kSumHeadsBatch = 16, kSumBatchRows = 16;

// ---- prefill scores on the FP64 tensor cores ----
// A CTA computes the scores of kDmHeads heads (all of them in the model's shape) against
// kDmRows cached rows of one batch row, as a (heads x 512) x (512 x rows) product in double:
// mma.m8n8k4.f64, warp (wm, wn) owning heads 16 wm .. (two m8 tiles) and rows 32 wn .. (four n8
// tiles). The query and row values are widened to double in shared memory, 32 dims at a time,
// the next 32 loaded into registers meanwhile. Every product of two floats is exact in double,
// so the scores are exact products summed in double in another order, then rounded to float:
// the contract of the per-warp kernel above (and of the CPU's f32 dot). Batches only; the
// per-warp kernel serves decode, whose one row gives few CTAs here.
constexpr int kDmHeads = 64, kDmRows = 64, kDmChunk = 32, kDmThreads = 256;
constexpr int kDmPitch = kDmChunk + 4;  // doubles: a fragment's 8 x 4 reads hit distinct banks
constexpr int kDmLoads = kDmHeads * kDmChunk / kDmThreads;
static_assert(kDmRows * kDmChunk / kDmThreads == kDmLoads &&
                  kDmThreads / kDmChunk * kDmLoads == kDmHeads,
              "a thread stages kDmLoads query and row values per chunk");

__global__ void __launch_bounds__(kDmThreads)
    attention_scores_dmma_kernel(const float* q_all, int64_t q_stride, AttentionGeometry g,
                                 OneRun src, float* scratch, uint32_t* maxima) {
  kernel_begin();
  __shared__ double qs[kDmHeads][kDmPitch];
  __shared__ double ks[kDmRows][kDmPitch];
  __shared__ float tile_max[kDmRows / 32][kDmHeads];  // per warp column: its 32 rows' maxima
  const int t = static_cast<int>(blockIdx.z);
  const RowGeometry rg(g, src, t);
  const int i0 = static_cast<int>(blockIdx.x) * kDmRows;
  if (i0 >= rg.n_rows) return;  // uniform per CTA
  const int hbase = static_cast<int>(blockIdx.y) * kDmHeads;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int wm = warp % 4, wn = warp / 4;
  const int gq = lane / 4, tq = lane % 4;
  // Staging: value m of this thread is tile row (tid / 32) + 8 m, dim (tid % 32) of the chunk.
  const int srow = tid / kDmChunk, sdim = tid % kDmChunk;
  const float* qt = q_all + t * q_stride;
  const float* rows[kDmLoads];
#pragma unroll
  for (int m = 0; m < kDmLoads; ++m) {
    const int i = i0 + srow + 8 * m;
    rows[m] = i < rg.n_rows ? rg.row(i) : nullptr;
  }
  float qn[kDmLoads], kn[kDmLoads];
  const auto fetch = [&](int c) {
#pragma unroll
    for (int m = 0; m < kDmLoads; ++m) {
      const int h = hbase + srow + 8 * m, d = c * kDmChunk + sdim;
      qn[m] = h < g.n_head ? qt[int64_t{h} * kHd + d] : 0.0f;
      kn[m] = rows[m] != nullptr ? rows[m][d] : 0.0f;
    }
  };
  double acc[2][4][2] = {};
  fetch(0);
  for (int c = 0; c < kHd / kDmChunk; ++c) {
#pragma unroll
    for (int m = 0; m < kDmLoads; ++m) {
      qs[srow + 8 * m][sdim] = static_cast<double>(qn[m]);
      ks[srow + 8 * m][sdim] = static_cast<double>(kn[m]);
    }
    __syncthreads();
    if (c + 1 < kHd / kDmChunk) fetch(c + 1);
#pragma unroll
    for (int kk = 0; kk < kDmChunk / 4; ++kk) {
      double a[2], b[4];
#pragma unroll
      for (int i = 0; i < 2; ++i) a[i] = qs[16 * wm + 8 * i + gq][4 * kk + tq];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = ks[32 * wn + 8 * j + gq][4 * kk + tq];
      mma_f64_tiles(acc, a, b);
    }
    __syncthreads();
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(kHd));
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int h = hbase + 16 * wm + 8 * i + gq;
    float m = __int_as_float(0xff800000u);  // -inf: the maximum of this lane's stored scores
    float* sc = scratch + (int64_t{t} * g.n_head + min(h, g.n_head - 1)) * g.max_rows;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int r = i0 + 32 * wn + 8 * j + 2 * tq + e;
        const float v = static_cast<float>(acc[i][j][e]) * scale;
        if (r < rg.n_rows && h < g.n_head) {
          sc[r] = v;
          if (v == v) m = fmaxf(m, v);  // NaN is skipped, as the maxima over stored scores do
        }
      }
    }
    if (maxima != nullptr) {
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      if (tq == 0) tile_max[wn][16 * wm + 8 * i + gq] = m;
    }
  }
  if (maxima == nullptr) return;  // uniform per launch
  __syncthreads();
  // One atomic maximum per head and CTA, on keys that order as the floats do.
  if (tid < kDmHeads && hbase + tid < g.n_head) {
    float m = tile_max[0][tid];
#pragma unroll
    for (int w = 1; w < kDmRows / 32; ++w) m = fmaxf(m, tile_max[w][tid]);
    atomicMax(maxima + int64_t{t} * g.n_head + hbase + tid, ordered_key(m));
  }
}

// The softmax with sink and the weighted sum for heads blockIdx.x * kSumHeads .., dims
// blockIdx.y * kCtaDims .. (kCtaDims = 64 kDims), of batch row blockIdx.z, then inverse RoPE (the
// rotated tail, dims 448..511, lies in one dim range). Each (head, dim) output adds the rows in
// order, each weight x value with one fused multiply-add (the CPU's axpy_fma), and forms its
// denominator the same way as the CPU (plain adds, the sink term first); the
// exponentials are recomputed by each CTA (the same function of the same inputs). Rows come
// through shared memory in rounds of kSumRows, the next round's loads in flight meanwhile. A
// thread serves kSumHeadsPerThread heads at kDims adjacent dims, so each staged value is read once
// for them and each staged weight once for its dims, and their sums are independent chains (with
// a thread per (head, dim), a CTA of 4 heads re-read every cached row 16 times per query row, and
// each thread's adds were one dependent chain). kDims = 4 (batches): a quarter of the CTAs per
// row, so of the exponentials, and fewer loads per float operation (a 16-byte value load and a
// 16-byte weight load feed 64 float operations). The outputs are staged where the values were,
// once the rows are done. Thread k < kSumHeads alone adds head k's denominator (the same adds in
// the same order), instead of every thread of the CTA for its heads, and the weights of 4 rows
// come in one 16-byte load (a third of the float operations and most of the shared loads of the
// inner loop).
template <class Src, int kSumHeads, int kDims>
__global__ void __launch_bounds__(kSumThreads)
    attention_sum_kernel(AttentionGeometry g, const __grid_constant__ Src src, const float* sinks,
                         RopeArg rope, const float* scratch, float* out_all, int64_t out_stride) {
  kernel_begin();
  static_assert(kSumHeads % kSumGroups == 0, "whole head groups per thread");
  static_assert(kDims == 1 || kDims == 4, "one or four dims per thread");
  static_assert(kSumHeads <= kSumRows, "the outputs fit where the values were staged");
  constexpr int kSumHeadsPerThread = kSumHeads / kSumGroups;
  constexpr int kCtaDims = kSumDims * kDims;
  constexpr int kLoads = kSumLoads * kDims;  // float4 per thread per round
  static_assert(kHd % kCtaDims == 0 && kNope % kCtaDims + (kHd - kNope) <= kCtaDims,
                "the rotated tail lies in one dim range");
  __shared__ __align__(16) float vrows[kSumRows * kCtaDims];
  __shared__ __align__(16) float wts[kSumHeads][kSumRows];
  __shared__ float mx[kSumHeads];
  __shared__ float den_sh[kSumHeads];
  float(*const o)[kCtaDims] = reinterpret_cast<float(*)[kCtaDims]>(vrows);  // after the rows
  const int t = static_cast<int>(blockIdx.z);
  const int pos = src.pos(t);
  const RowGeometry rg(g, src, t);
  const int h0 = static_cast<int>(blockIdx.x) * kSumHeads;
  const int d0 = static_cast<int>(blockIdx.y) * kCtaDims;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  // heads hg + kSumGroups k, dims kDims dd ..
  const int hg = tid / kSumDims, dd = tid % kSumDims;
  // Head h0 + k's scores (heads past the last one repeat it; their results are not stored).
  auto scores_of = [&](int k) {
    return scratch + (int64_t{t} * g.n_head + min(h0 + k, g.n_head - 1)) * g.max_rows;
  };
  for (int k = warp; k < kSumHeads; k += kSumThreads / 32) {  // the maximum over sink and scores
    const float m = head_max(scores_of(k), rg.n_rows, sinks[min(h0 + k, g.n_head - 1)], lane);
    if (lane == 0) mx[k] = m;
  }
  __syncthreads();
  // Head hl's denominator starts from its sink term.
  const auto sink_term = [&](int hl) {
    return detmath::expf(sinks[min(h0 + hl, g.n_head - 1)] - mx[hl]);
  };
  float acc[kSumHeadsPerThread][kDims];
#pragma unroll
  for (int k = 0; k < kSumHeadsPerThread; ++k) {
#pragma unroll
    for (int e = 0; e < kDims; ++e) acc[k][e] = 0.0f;
  }
  const bool den_thread = tid < kSumHeads;  // adds head tid's denominator
  float my_den = den_thread ? sink_term(tid) : 0.0f;
  // The kDims values of staged row r at this thread's dims.
  const auto values = [&](int r, float(&v)[kDims]) {
    if constexpr (kDims == 4) {
      const float4 p = reinterpret_cast<const float4*>(vrows + r * kCtaDims)[dd];
      v[0] = p.x, v[1] = p.y, v[2] = p.z, v[3] = p.w;
    } else {
      v[0] = vrows[r * kCtaDims + dd];
    }
  };
  float4 next[kLoads];
  auto fetch = [&](int i0) {
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      const int idx = tid + k * kSumThreads, r = idx / (kCtaDims / 4), q4 = idx % (kCtaDims / 4);
      next[k] = i0 + r < rg.n_rows ? reinterpret_cast<const float4*>(rg.row(i0 + r) + d0)[q4]
                                   : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  };
  fetch(0);
  for (int i0 = 0; i0 < rg.n_rows; i0 += kSumRows) {
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      reinterpret_cast<float4*>(vrows)[tid + k * kSumThreads] = next[k];
    for (int k = tid; k < kSumHeads * kSumRows; k += kSumThreads) {
      const int kh = k / kSumRows, r = k % kSumRows;
      wts[kh][r] = i0 + r < rg.n_rows ? detmath::expf(scores_of(kh)[i0 + r] - mx[kh]) : 0.0f;
    }
    __syncthreads();
    if (i0 + kSumRows < rg.n_rows) fetch(i0 + kSumRows);
    const int nr = min(kSumRows, rg.n_rows - i0);
    int r = 0;
    if (den_thread) {
      for (int i = 0; i < nr; ++i) my_den += wts[tid][i];
    }
    for (; r + 4 <= nr; r += 4) {
      float v[4][kDims];
#pragma unroll
      for (int j = 0; j < 4; ++j) values(r + j, v[j]);
#pragma unroll
      for (int k = 0; k < kSumHeadsPerThread; ++k) {
        const float4 w = *reinterpret_cast<const float4*>(&wts[hg + kSumGroups * k][r]);
#pragma unroll
        for (int e = 0; e < kDims; ++e) {
          acc[k][e] = fmaf(w.x, v[0][e], acc[k][e]);
          acc[k][e] = fmaf(w.y, v[1][e], acc[k][e]);
          acc[k][e] = fmaf(w.z, v[2][e], acc[k][e]);
          acc[k][e] = fmaf(w.w, v[3][e], acc[k][e]);
        }
      }
    }
    for (; r < nr; ++r) {
      float v[kDims];
      values(r, v);
#pragma unroll
      for (int k = 0; k < kSumHeadsPerThread; ++k) {
        const float w = wts[hg + kSumGroups * k][r];
#pragma unroll
        for (int e = 0; e < kDims; ++e) acc[k][e] = fmaf(w, v[e], acc[k][e]);
      }
    }
    __syncthreads();
  }
  if (den_thread) den_sh[tid] = my_den;
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kSumHeadsPerThread; ++k) {
    const float inv = 1.0f / den_sh[hg + kSumGroups * k];
#pragma unroll
    for (int e = 0; e < kDims; ++e) o[hg + kSumGroups * k][kDims * dd + e] = acc[k][e] * inv;
  }
  __syncthreads();
  if (d0 + kCtaDims > kNope) {  // the rotated tail: 32 pairs per head
    for (int i = tid; i < kSumHeads * 32; i += kSumThreads)
      rope_pair(o[i / 32] + (kNope - d0), rope.inv_freq, i % 32, pos, true);
  }
  __syncthreads();
  for (int i = tid; i < kSumHeads * kCtaDims; i += kSumThreads) {
    const int hl = i / kCtaDims, d = i % kCtaDims;
    if (h0 + hl < g.n_head) out_all[t * out_stride + int64_t{h0 + hl} * kHd + d0 + d] = o[hl][d];
  }
}

// The weighted sum's grid: heads, dims per CTA as the kernel's, one z per batch row.
dim3 sum_grid(const AttentionGeometry& g, int heads, int dims, int n) {
  return dim3((g.n_head + heads - 1) / heads, kHd / (dims * kSumDims), n);
}

}  // namespace

void launch_rope_qkv_store(float* q, int64_t q_stride, int n_head, float* kv, int64_t kv_stride,
                           const RopeArg& rope, RowSpan rows, bool qat, bool f16_rows, float* ring,
                           int ring_cap, cudaStream_t s) {
  if (rows.n == 0) return;
  launch(rope_qkv_store_kernel<StoreRun>, rows.n, 256, 0, s, q, q_stride, n_head, kv, kv_stride,
         rope, StoreRun{ring, rows.p0}, qat, f16_rows, ring_cap);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_rope_qkv_store_seqs(float* q, int64_t q_stride, int n_head, float* kv,
                                int64_t kv_stride, const RopeArg& rope, const SeqRows& rows,
                                bool qat, bool f16_rows, int ring_cap, cudaStream_t s) {
  DS4_CHECK(rows.n >= 0 && rows.n <= kMaxSeqRows);
  if (rows.n == 0) return;
  launch(rope_qkv_store_kernel<SeqTable>, rows.n, 256, 0, s, q, q_stride, n_head, kv, kv_stride,
         rope, SeqTable{rows}, qat, f16_rows, ring_cap);
  DS4_CUDA_CHECK_LAUNCH();
}

int launch_compressor(const CompressorLane& lane, RowSpan rows, const RopeArg& rope, bool qat,
                      bool f16_rows, float* dst, cudaStream_t s) {
  DS4_CHECK(lane.ratio == 4 || lane.ratio == 128);
  DS4_CHECK(lane.hd == kHd || lane.hd == kIhd);
  DS4_CHECK(lane.ape_type == gguf::GgufType::kF16 || lane.ape_type == gguf::GgufType::kF32);
  if (rows.n == 0) return 0;
  LaneArgs a{};
  a.ratio = lane.ratio;
  a.hd = lane.hd;
  a.width = (lane.ratio == 4 ? 2 : 1) * lane.hd;
  a.st_kv = lane.st_kv;
  a.st_score = lane.st_score;
  a.kvc = lane.kvc;
  a.kvc_stride = lane.kvc_stride;
  a.gate = lane.gate;
  a.gate_stride = lane.gate_stride;
  a.ape = lane.ape;
  a.ape_f16 = lane.ape_type == gguf::GgufType::kF16;
  a.p0 = rows.p0;
  a.n = rows.n;
  const int emitted = lane_rules::emitted(rows.p0, rows.n, lane.ratio);
  if (emitted > 0) {  // pooling reads the frontier as it was before the batch
    if (lane.ratio == kPoolRatio) {
      launch(lane_pool128_kernel, dim3((lane.hd + kPoolCols - 1) / kPoolCols, emitted),
             kPoolThreads, 0, s, a, dst);
    } else {
      launch(lane_pool_kernel, dim3((lane.hd + 127) / 128, emitted), 128, 0, s, a, dst);
    }
    DS4_CUDA_CHECK_LAUNCH();
    launch(finish_rows_kernel, emitted, 256, 0, s, dst, lane.hd, lane.norm, rope, rows.p0,
           lane.ratio, lane.indexer_lane, qat, f16_rows);
    DS4_CUDA_CHECK_LAUNCH();
  }
  // Ratio 128: the rewritten rows side by side (each is written once, from the batch only).
  const int state_rows = lane.ratio == 4 ? 1 : lane_rules::rewritten_rows(rows.n, lane.ratio);
  launch(lane_state_kernel, dim3((a.width + 127) / 128, state_rows), 128, 0, s, a);
  DS4_CUDA_CHECK_LAUNCH();
  return emitted;
}

void launch_indexer_query(float* iq, int64_t stride, int n_ih, const RopeArg& rope, RowSpan rows,
                          bool qat, cudaStream_t s) {
  if (rows.n == 0) return;
  launch(indexer_query_kernel, dim3(n_ih, rows.n), 128, 0, s, iq, stride, rope, rows.p0, qat);
  DS4_CUDA_CHECK_LAUNCH();
}

int64_t attention_scratch_floats(int n_head, int max_rows, int n) {
  // Batches: the scores and, past them, each (row, head)'s maximum; decode rows: the spans' sums.
  if (n < kSumBatchRows) return attention_split_scratch_floats(n_head, max_rows, n);
  return int64_t{n} * n_head * (int64_t{max_rows} + 1);
}

void launch_attention(const float* q, int64_t q_stride, const AttentionGeometry& g,
                      const float* ring, const float* comp, const int32_t* visible,
                      const float* sinks, const RopeArg& rope, RowSpan rows, float* scratch,
                      float* out, int64_t out_stride, cudaStream_t s) {
  DS4_CHECK(g.ring_cap >= g.raw_cap + rows.n - 1 && g.raw_cap > 0);
  static_assert(kHd - kNope == kSumDims, "the rotated tail must be one dim range");
  if (rows.n == 0) return;
  DS4_CHECK_MSG(rows.n <= kMaxGridYZ, "attention: %d rows in one launch", rows.n);
  const OneRun src{ring, comp, visible, rows.p0};
  // (32 heads x 128 dims per CTA, which reads each cached row from L2 half as often, measured 3%
  // slower on the H200 and was removed: bench/h200.md.)
  const bool batch = rows.n >= kSumBatchRows;
  // Batches take the register-tiled kernel (attention_sum_tile.cu) where the rows are 16-byte
  // aligned (attention_sum_tile_fits); the 16-head kernel below is their fallback.
  const bool tile = batch && attention_sum_tile_fits(ring, comp, out, out_stride);
  // For the tiled sum the batch scores kernel also leaves each (row, head)'s maximum, as ordered
  // keys in the scratch's last n x n_head floats (on the H200, prefill at 8k 2,578 -> 2,586
  // tokens/s).
  uint32_t* maxima = nullptr;
  if (!batch) {  // decode: split over the cached rows
    launch_attention_split(q, q_stride, g, src, rows.n, sinks, rope, scratch, out, out_stride, s);
    return;
  }
  // Batches on the f16 tensor cores (attention_flash.cu): Flash q2 prefill 3,163 / 3,128 ->
  // 3,566 / 3,677 tokens/s at 2k / 8k (H200, 2026-12-02); DS4_CUDA_ATTN_FLASH=0 keeps the exact
  // kernels below until they are deleted.
  static const bool flash = env_switch("DS4_CUDA_ATTN_FLASH", true);
  if (flash && attention_flash_fits(q, q_stride, ring, comp, out, out_stride)) {
    launch_attention_flash(q, q_stride, g, ring, comp, visible, sinks, rope, rows, out, out_stride,
                           s);
    return;
  }
  if (tile) {  // batches: the FP64 tensor cores
    maxima = reinterpret_cast<uint32_t*>(scratch + int64_t{rows.n} * g.n_head * g.max_rows);
    DS4_CUDA_CHECK(cudaMemsetAsync(maxima, 0, sizeof(uint32_t) * rows.n * g.n_head, s));
  }
  const dim3 grid((g.max_rows + kDmRows - 1) / kDmRows, (g.n_head + kDmHeads - 1) / kDmHeads,
                  rows.n);
  launch(attention_scores_dmma_kernel, grid, kDmThreads, 0, s, q, q_stride, g, src, scratch,
         maxima);
  DS4_CUDA_CHECK_LAUNCH();
  if (tile) {
    launch_attention_sum_tile(g, ring, comp, visible, sinks, rope, rows, scratch, maxima, out,
                              out_stride, s);
    return;
  }
  launch(attention_sum_kernel<OneRun, kSumHeadsBatch, 4>, sum_grid(g, kSumHeadsBatch, 4, rows.n),
         kSumThreads, 0, s, g, src, sinks, rope, scratch, out, out_stride);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_attention_seqs(const float* q, int64_t q_stride, const AttentionGeometry& g,
                           const SeqRows& rows, const float* sinks, const RopeArg& rope,
                           float* scratch, float* out, int64_t out_stride, cudaStream_t s) {
  DS4_CHECK(g.ring_cap >= g.raw_cap && g.raw_cap > 0);
  DS4_CHECK(rows.n >= 0 && rows.n <= kMaxSeqRows);
  if (rows.n == 0) return;
  launch_attention_split(q, q_stride, g, SeqTable{rows}, rows.n, sinks, rope, scratch, out,
                         out_stride, s);
}

}  // namespace ds4::backend::cuda
