// src/backend/cuda/kernels/attention.cu: batched attention kernels and their launchers (contract
// in attention.cuh). Every kernel takes the batch's first position p0 and derives each row's
// position p0 + t (t = its row in the batch) and everything that follows from it. Built with
// -fmad=false; each row's float operations are those of backend/cpu/attention.cpp, in its order.
// The attention itself runs in attention_split.cu (decode rows) and attention_flash.cu (batches).
#include "backend/cuda/check.h"
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/attention_flash.cuh"
#include "backend/cuda/kernels/attention_rows.cuh"
#include "backend/cuda/kernels/attention_split.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/lane_rules.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"

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
  const void* ape;  // null: the gate rows are scores already (a rewind's logged rows)
  bool ape_f16;
  int p0, n;
  // While the sequence is marked (CompressorLane::mark): where the batch keeps what a rewind needs.
  float* save_kv;
  float* save_score;
  float* log_kv;
  float* log_score;
  int mark;
};

// The lanes a launch serves: kN == 1, one sequence's batch (blockIdx.z 0); else one lane per
// blockIdx.z, each a sequence's own (a batched decode step, launch_compressor_seqs); n of them.
// dst: where the lane's emitted rows go. Passed as a __grid_constant__ parameter and read in
// place.
template <int kN>
struct LaneTable {
  int n;
  LaneArgs a[kN];
  float* dst[kN];
  __device__ const LaneArgs& args() const { return a[kN == 1 ? 0 : blockIdx.z]; }
  __device__ float* out() const { return dst[kN == 1 ? 0 : blockIdx.z]; }
};

// The (kv, score) a frontier row holds for position q, column col: from the batch when q >= p0
// (score = gate + ape[q % ratio], as the row-by-row store forms it), else from the frontier as it
// was before the batch: for ratio 4 the current window [w0, w0 + 4) in rows 4.., the previous one
// in rows 0..3 (positions before 0 read the empty rows of a fresh frontier); for ratio 128 row
// q - w0. w0 = the start of the window that was open when the batch began.
__device__ void lane_source(const LaneArgs& a, int q, int col, float* kv, float* score) {
  if (q >= a.p0) {
    const int64_t t = q - a.p0;
    *kv = a.kvc[t * a.kvc_stride + col];
    *score = a.gate[t * a.gate_stride + col];
    if (a.ape == nullptr) return;
    const int64_t ai = int64_t{q % a.ratio} * a.width + col;
    *score += a.ape_f16 ? __half2float(static_cast<const __half*>(a.ape)[ai])
                        : static_cast<const float*>(a.ape)[ai];
    return;
  }
  const int row = lane_rules::state_row(a.p0, a.ratio, q);
  *kv = a.st_kv[int64_t{row} * a.width + col];
  *score = a.st_score[int64_t{row} * a.width + col];
}

// Window w of the batch (the w-th that ends in it, at position pe) pooled into dst + w * hd:
// softmax-gated sum, model.md §4.7 step 5, in the CPU's order.
template <int kN>
__global__ void lane_pool_kernel(const __grid_constant__ LaneTable<kN> t) {
  kernel_begin();
  const LaneArgs& a = t.args();
  float* dst = t.out();
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int w = static_cast<int>(blockIdx.y);
  if (j >= a.hd || w >= lane_rules::emitted(a.p0, a.n, a.ratio)) return;
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
// 2048-row chunk: a long serial launch).
constexpr int kPoolRatio = 128, kPoolCols = 32, kPoolThreads = 256;
template <int kN>
__global__ void __launch_bounds__(kPoolThreads)
    lane_pool128_kernel(const __grid_constant__ LaneTable<kN> t) {
  kernel_begin();
  const LaneArgs& a = t.args();
  float* dst = t.out();
  if (static_cast<int>(blockIdx.y) >= lane_rules::emitted(a.p0, a.n, a.ratio)) return;
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
// before anything is written. Ratio 128's rows are shared out as rows y0, y0 + ny, ...
__device__ void store_frontier_column(const LaneArgs& a, int col, int y0, int ny) {
  const int end = a.p0 + a.n;  // the first position after the batch
  auto last_with_residue = [&](int r) { return lane_rules::last_with_residue(end, a.ratio, r); };
  if (a.ratio == 4) {
    if (y0 != 0) return;  // one row of CTAs (ratio 4 launches one)
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
    for (int i = y0; i < lane_rules::rewritten_rows(a.n, a.ratio); i += ny) {
      const int q = end - 1 - i;
      const int s = q % a.ratio;
      float kv, score;
      lane_source(a, q, col, &kv, &score);
      a.st_kv[int64_t{s} * a.width + col] = kv;
      a.st_score[int64_t{s} * a.width + col] = score;
    }
  }
}

// A marked sequence's batch keeps, in column col, what lane_rewind_kernel needs: the (kv, score)
// of its positions in log row q - mark, and the frontier rows it is about to overwrite as they
// were at the mark (ratio 4: all 8, saved by the first batch after the mark; ratio 128: the rows
// of its positions, which no earlier batch since the mark wrote, the positions since the mark
// being fewer than 128). Each (row, column) is saved by the thread that overwrites it.
__device__ void keep_for_rewind(const LaneArgs& a, int col, int y0, int ny) {
  auto copy_row = [&](int r) {
    a.save_kv[int64_t{r} * a.width + col] = a.st_kv[int64_t{r} * a.width + col];
    a.save_score[int64_t{r} * a.width + col] = a.st_score[int64_t{r} * a.width + col];
  };
  if (y0 == 0) {
    for (int t = 0; t < a.n; ++t) {
      const int64_t at = int64_t{a.p0 + t - a.mark} * a.width + col;
      lane_source(a, a.p0 + t, col, &a.log_kv[at], &a.log_score[at]);
    }
    if (a.ratio == 4 && a.p0 == a.mark) {
      for (int r = 0; r < 8; ++r) copy_row(r);
    }
  }
  if (a.ratio != 4) {
    for (int i = y0; i < lane_rules::rewritten_rows(a.n, a.ratio); i += ny)
      copy_row((a.p0 + a.n - 1 - i) % a.ratio);
  }
}

template <int kN>
__global__ void lane_state_kernel(const __grid_constant__ LaneTable<kN> t) {
  kernel_begin();
  const LaneArgs& a = t.args();
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= a.width) return;
  const int y0 = static_cast<int>(blockIdx.y), ny = static_cast<int>(gridDim.y);
  if (a.log_kv != nullptr) keep_for_rewind(a, col, y0, ny);
  store_frontier_column(a, col, y0, ny);
}

// The frontier of a lane taken back to position a.p0 + a.n, with rows [a.p0, end) stored since
// the mark a.p0: the rows saved at the mark are put back, then the logged positions up to the
// new end are stored again, as the batch that stored them did. One thread per column does both,
// in order.
__global__ void lane_rewind_kernel(LaneArgs a, int end) {
  kernel_begin();
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= a.width) return;
  auto restore_row = [&](int r) {
    a.st_kv[int64_t{r} * a.width + col] = a.save_kv[int64_t{r} * a.width + col];
    a.st_score[int64_t{r} * a.width + col] = a.save_score[int64_t{r} * a.width + col];
  };
  if (a.ratio == 4) {
    for (int r = 0; r < 8; ++r) restore_row(r);
  } else {
    for (int q = a.p0; q < end; ++q) restore_row(q % a.ratio);
  }
  if (a.n > 0) store_frontier_column(a, col, 0, 1);
}

// Norm, RoPE at the window start, simulation and f16 rounding of pooled row blockIdx.x (the
// window of the batch's blockIdx.x-th boundary), in place.
template <int kN>
__global__ void finish_rows_kernel(const __grid_constant__ LaneTable<kN> t, const float* norm,
                                   RopeArg rope, bool indexer_lane, bool qat, bool f16_rows) {
  kernel_begin();
  __shared__ float x[kHd];
  __shared__ double part[32];
  const LaneArgs& a = t.args();
  const int w = static_cast<int>(blockIdx.x);
  if (w >= lane_rules::emitted(a.p0, a.n, a.ratio)) return;
  float* rows = t.out();
  const int hd = a.hd, p0 = a.p0, ratio = a.ratio;
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

// The fewest rows that take the batch kernel: below it the rows are decode rows, whose few CTAs
// the split kernels spread over the cached rows instead.
constexpr int kFlashBatchRows = 16;

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

namespace {

// The arguments that name a lane's frontier.
LaneArgs frontier_args(const CompressorLane& lane) {
  LaneArgs a{};
  a.ratio = lane.ratio;
  a.hd = lane.hd;
  a.width = (lane.ratio == 4 ? 2 : 1) * lane.hd;
  a.st_kv = lane.st_kv;
  a.st_score = lane.st_score;
  return a;
}

}  // namespace

namespace {

void check_lane(const CompressorLane& lane) {
  DS4_CHECK(lane.ratio == 4 || lane.ratio == 128);
  DS4_CHECK(lane.hd == kHd || lane.hd == kIhd);
  DS4_CHECK(lane.ape_type == gguf::GgufType::kF16 || lane.ape_type == gguf::GgufType::kF32);
}

// A lane's kernel arguments for rows (the lane checked by the caller).
LaneArgs lane_args(const CompressorLane& lane, RowSpan rows) {
  LaneArgs a = frontier_args(lane);
  a.kvc = lane.kvc;
  a.kvc_stride = lane.kvc_stride;
  a.gate = lane.gate;
  a.gate_stride = lane.gate_stride;
  a.ape = lane.ape;
  a.ape_f16 = lane.ape_type == gguf::GgufType::kF16;
  a.p0 = rows.p0;
  a.n = rows.n;
  if (lane.mark >= 0) {
    DS4_CHECK(lane.save_kv && lane.save_score && lane.log_kv && lane.log_score);
    DS4_CHECK(rows.p0 >= lane.mark && rows.p0 + rows.n - lane.mark <= lane.log_rows);
    a.save_kv = lane.save_kv;
    a.save_score = lane.save_score;
    a.log_kv = lane.log_kv;
    a.log_score = lane.log_score;
    a.mark = lane.mark;
  }
  return a;
}

// The pooling of t's lanes, up to emit_rows windows each (what each emits; pooling reads the
// frontier as it was before the batch), then those rows' norm, RoPE and rounding. `like`: the
// lanes' shared shape (ratio, hd, norm, indexer_lane).
template <int kN>
void launch_pool(const LaneTable<kN>& t, const CompressorLane& like, int emit_rows,
                 const RopeArg& rope, bool qat, bool f16_rows, cudaStream_t s) {
  if (t.n == 0 || emit_rows == 0) return;
  const auto z = static_cast<unsigned>(t.n), y = static_cast<unsigned>(emit_rows);
  if (like.ratio == kPoolRatio) {
    launch(lane_pool128_kernel<kN>, dim3((like.hd + kPoolCols - 1) / kPoolCols, y, z), kPoolThreads,
           0, s, t);
  } else {
    launch(lane_pool_kernel<kN>, dim3((like.hd + 127) / 128, y, z), 128, 0, s, t);
  }
  DS4_CUDA_CHECK_LAUNCH();
  launch(finish_rows_kernel<kN>, dim3(y, 1, z), 256, 0, s, t, like.norm, rope, like.indexer_lane,
         qat, f16_rows);
  DS4_CUDA_CHECK_LAUNCH();
}

// The frontier update of t's lanes (ratio 128: up to state_rows rewritten rows each, side by
// side; each is written once, from the batch only).
template <int kN>
void launch_state(const LaneTable<kN>& t, int state_rows, cudaStream_t s) {
  launch(lane_state_kernel<kN>,
         dim3((t.a[0].width + 127) / 128, static_cast<unsigned>(state_rows),
              static_cast<unsigned>(t.n)),
         128, 0, s, t);
  DS4_CUDA_CHECK_LAUNCH();
}

int state_rows(int n, int ratio) { return ratio == 4 ? 1 : lane_rules::rewritten_rows(n, ratio); }

}  // namespace

int launch_compressor(const CompressorLane& lane, RowSpan rows, const RopeArg& rope, bool qat,
                      bool f16_rows, float* dst, cudaStream_t s) {
  check_lane(lane);
  if (rows.n == 0) return 0;
  LaneTable<1> t{};
  t.n = 1;
  t.a[0] = lane_args(lane, rows);
  t.dst[0] = dst;
  const int emitted = lane_rules::emitted(rows.p0, rows.n, lane.ratio);
  launch_pool(t, lane, emitted, rope, qat, f16_rows, s);
  launch_state(t, state_rows(rows.n, lane.ratio), s);
  return emitted;
}

void launch_compressor_seqs(const CompressorSeqs& seqs, const RopeArg& rope, bool qat,
                            bool f16_rows, int* emitted, cudaStream_t s) {
  DS4_CHECK(seqs.n >= 0 && seqs.n <= kMaxSeqRows);
  if (seqs.n == 0) return;
  const CompressorLane& like = seqs.lane[0];
  check_lane(like);  // the others are checked alike to it
  LaneTable<kMaxSeqRows> all{}, emit{};
  for (int i = 0; i < seqs.n; ++i) {
    const CompressorLane& lane = seqs.lane[i];
    DS4_CHECK(lane.ratio == like.ratio && lane.hd == like.hd && lane.ape == like.ape &&
              lane.ape_type == like.ape_type && lane.norm == like.norm &&
              lane.indexer_lane == like.indexer_lane);
    all.a[i] = lane_args(lane, RowSpan{seqs.pos[i], 1});
    all.dst[i] = seqs.dst[i];
    emitted[i] = lane_rules::emitted(seqs.pos[i], 1, lane.ratio);
    if (emitted[i] > 0) {
      emit.a[emit.n] = all.a[i];
      emit.dst[emit.n++] = seqs.dst[i];
    }
  }
  all.n = seqs.n;
  launch_pool(emit, like, 1, rope, qat, f16_rows, s);
  launch_state(all, state_rows(1, like.ratio), s);
}

void launch_lane_rewind(const CompressorLane& lane, int to, int end, cudaStream_t s) {
  DS4_CHECK(lane.ratio == 4 || lane.ratio == 128);
  DS4_CHECK(lane.mark >= 0 && lane.mark <= to && to <= end && end - lane.mark <= lane.log_rows);
  if (to == end) return;
  LaneArgs a = frontier_args(lane);
  a.kvc = lane.log_kv;  // the logged rows are (kv, score) pairs already: no ape
  a.kvc_stride = a.width;
  a.gate = lane.log_score;
  a.gate_stride = a.width;
  a.p0 = lane.mark;
  a.n = to - lane.mark;
  a.save_kv = lane.save_kv;
  a.save_score = lane.save_score;
  launch(lane_rewind_kernel, dim3((a.width + 127) / 128), 128, 0, s, a, end);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_indexer_query(float* iq, int64_t stride, int n_ih, const RopeArg& rope, RowSpan rows,
                          bool qat, cudaStream_t s) {
  if (rows.n == 0) return;
  launch(indexer_query_kernel, dim3(n_ih, rows.n), 128, 0, s, iq, stride, rope, rows.p0, qat);
  DS4_CUDA_CHECK_LAUNCH();
}

int64_t attention_scratch_floats(int n_head, int max_rows, int n) {
  // Decode rows: the spans' partial sums; batches (attention_flash.cu) need none.
  return n < kFlashBatchRows ? attention_split_scratch_floats(n_head, max_rows, n) : 0;
}

int64_t attention_seqs_scratch_floats(int n_head, int max_rows, int n) {
  DS4_CHECK(n >= 0 && n <= kMaxSeqRows);
  return attention_split_scratch_floats(n_head, max_rows, n);
}

void launch_attention(const float* q, int64_t q_stride, const AttentionGeometry& g,
                      const float* ring, const float* comp, const int32_t* visible,
                      const float* sinks, const RopeArg& rope, RowSpan rows, float* scratch,
                      int64_t scratch_floats, float* out, int64_t out_stride, cudaStream_t s) {
  DS4_CHECK(g.ring_cap >= g.raw_cap + rows.n - 1 && g.raw_cap > 0);
  if (rows.n == 0) return;
  DS4_CHECK_MSG(rows.n <= kMaxGridYZ, "attention: %d rows in one launch", rows.n);
  const int64_t need = attention_scratch_floats(g.n_head, g.max_rows, rows.n);
  DS4_CHECK_MSG(scratch_floats >= need && (need == 0 || scratch != nullptr),
                "attention: %lld scratch floats for %d rows, %lld needed",
                static_cast<long long>(scratch_floats), rows.n, static_cast<long long>(need));
  if (rows.n < kFlashBatchRows) {  // decode: split over the cached rows
    launch_attention_split(q, q_stride, g, OneRun{ring, comp, visible, rows.p0}, rows.n, sinks,
                           rope, scratch, out, out_stride, s);
    return;
  }
  // Batches on the f16 tensor cores (they prefilled Flash q2 faster on the H200 than the exact
  // FP64-scores / float-sum kernels they replaced).
  launch_attention_flash(q, q_stride, g, ring, comp, visible, sinks, rope, rows, out, out_stride,
                         s);
}

void launch_attention_seqs(const float* q, int64_t q_stride, const AttentionGeometry& g,
                           const SeqRows& rows, const float* sinks, const RopeArg& rope,
                           float* scratch, int64_t scratch_floats, float* out, int64_t out_stride,
                           cudaStream_t s) {
  DS4_CHECK(g.ring_cap >= g.raw_cap && g.raw_cap > 0);
  DS4_CHECK(rows.n >= 0 && rows.n <= kMaxSeqRows);
  if (rows.n == 0) return;
  const int64_t need = attention_seqs_scratch_floats(g.n_head, g.max_rows, rows.n);
  DS4_CHECK_MSG(scratch_floats >= need && scratch != nullptr,
                "attention: %lld scratch floats for %d sequences' rows, %lld needed",
                static_cast<long long>(scratch_floats), rows.n, static_cast<long long>(need));
  launch_attention_split(q, q_stride, g, SeqTable{rows}, rows.n, sinks, rope, scratch, out,
                         out_stride, s);
}

}  // namespace ds4::backend::cuda
