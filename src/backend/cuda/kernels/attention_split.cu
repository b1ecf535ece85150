// src/backend/cuda/kernels/attention_split.cu: decode sink attention split over the cached rows
// (contract in attention_split.cuh). Built with -fmad=false: every fused multiply-add is written.
//
// Why: the two-kernel decode path it replaced (a scores kernel with a warp per head, then a
// weighted sum walking a row's cached rows one round at a time in 128 CTAs per batch row) cost
// the same per kernel whatever the row count, a fifth of a decoded token over 43 layers. Here the
// rows are cut into up to kMaxSpans spans, each its own CTA for 16 heads, so a batch row's work
// runs side by side and a CTA does one to a few rounds: Flash q2 decode and batched decode steps
// both got faster on the H200.
//
// Split kernel, CTA (span, head group, batch row): q of its 16 heads (32 KB) and each round's 32
// cached rows (66 KB, row pitch 516 floats: the 16-byte loads of 32 lanes at 32 rows fall in
// distinct banks per quarter warp) go to shared memory. Warp w scores heads 2w and 2w + 1, a lane
// per cached row (four partial sums per head, so four short fma chains), then keeps those heads'
// running maximum m and sum l (online softmax): the round's weights exp(s - m_new) go to shared
// memory and the earlier sums are rescaled by exp(m_old - m_new). Thread (g, d4) then adds the
// round's weighted rows into 8 heads x 4 dims (heads 8g.., dims 4 d4..). At the end the span
// leaves its unnormalized sums, m and l. Merge kernel, CTA (head, batch row): the maximum over the
// sink and the spans' m, the denominator exp(sink - M) + sum l exp(m - M), the sums rescaled and
// added, divided, inverse RoPE on the tail.
#include "backend/cuda/check.h"
#include "backend/cuda/kernels/attention_rows.cuh"
#include "backend/cuda/kernels/attention_split.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "base/check.h"
#include "base/det_math.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kSpHeads = 16;       // heads per split CTA
constexpr int kSpRows = 32;        // cached rows per round (a lane each in the scores)
constexpr int kSpThreads = 256;    // 8 warps: 2 heads each in the scores
constexpr int kSpPitch = kHd + 4;  // floats per staged cached row
constexpr int kMaxSpans = 32;      // spans per batch row at most
// The weighted sum: thread (g, d4) adds heads 8 g .. 8 g + 7 at dims 4 d4 .. 4 d4 + 3.
constexpr int kSpHeadsPerThread = 8;
constexpr int kSpDimThreads = kHd / 4;
static_assert(kSpThreads == (kSpHeads / kSpHeadsPerThread) * kSpDimThreads, "sum threads");
static_assert(kSpThreads / 32 * 2 == kSpHeads, "two heads per warp in the scores");
constexpr size_t kSpSmem = sizeof(float) * (size_t{kSpHeads} * kHd + size_t{kSpRows} * kSpPitch +
                                            kSpHeads * kSpRows + kSpHeads);
constexpr int kPartFloats = kHd + 4;  // one (span, head): the sums, m and l (16-byte rows)

// Rows per span for a batch row of n cached rows: whole rounds, at most kMaxSpans spans. It
// depends on the row's own count only, so a row gets the same spans alone or in any batch.
__host__ __device__ inline int span_rows(int n) {
  const int rounds = (n + kSpRows - 1) / kSpRows;
  return kSpRows * ((rounds + kMaxSpans - 1) / kMaxSpans);
}
int max_spans(int max_rows) {
  return std::min(kMaxSpans, (std::max(max_rows, 1) + kSpRows - 1) / kSpRows);
}

__device__ inline float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// q . row over 512 dims from shared memory, four fma chains of 128.
__device__ inline float dot512(const float4* q, const float4* row) {
  float a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
#pragma unroll 8
  for (int k = 0; k < kHd / 4; ++k) {
    const float4 x = q[k], y = row[k];
    a = fmaf(x.x, y.x, a);
    b = fmaf(x.y, y.y, b);
    c = fmaf(x.z, y.z, c);
    d = fmaf(x.w, y.w, d);
  }
  return (a + b) + (c + d);
}

template <class Src>
__global__ void __launch_bounds__(kSpThreads, 2)
    attention_split_kernel(const float* q_all, int64_t q_stride, AttentionGeometry g,
                           const __grid_constant__ Src src, int n_spans, float* part) {
  extern __shared__ __align__(16) float sp_smem[];
  float* qs = sp_smem;                    // [kSpHeads][kHd]
  float* rs = qs + kSpHeads * kHd;        // [kSpRows][kSpPitch]
  float* ps = rs + kSpRows * kSpPitch;    // [kSpHeads][kSpRows]: the round's weights
  float* corr = ps + kSpHeads * kSpRows;  // [kSpHeads]: the round's rescale of earlier sums
  kernel_begin();
  const int t = static_cast<int>(blockIdx.z);
  const RowGeometry rg(g, src, t);
  const int per_span = span_rows(rg.n_rows);
  const int i_begin = static_cast<int>(blockIdx.x) * per_span;
  if (i_begin >= rg.n_rows) return;  // uniform per CTA: this row has fewer spans
  const int i_end = min(i_begin + per_span, rg.n_rows);
  const int h0 = static_cast<int>(blockIdx.y) * kSpHeads;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  for (int i = tid; i < kSpHeads * (kHd / 4); i += kSpThreads) {
    const int hl = i / (kHd / 4), q4 = i % (kHd / 4);
    const int h = min(h0 + hl, g.n_head - 1);  // heads past the last repeat it, never stored
    reinterpret_cast<float4*>(qs)[i] =
        reinterpret_cast<const float4*>(q_all + t * q_stride + int64_t{h} * kHd)[q4];
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(kHd));
  const int ha = 2 * warp, hb = 2 * warp + 1;  // this warp's heads in the scores
  float ma = kNegInf, mb = kNegInf, la = 0.0f, lb = 0.0f;
  const int g8 = tid / kSpDimThreads, d4 = tid % kSpDimThreads;  // the weighted sum's thread
  float acc[kSpHeadsPerThread][4];
#pragma unroll
  for (int k = 0; k < kSpHeadsPerThread; ++k) acc[k][0] = acc[k][1] = acc[k][2] = acc[k][3] = 0.0f;
  for (int r0 = i_begin; r0 < i_end; r0 += kSpRows) {
    const int nr = min(kSpRows, i_end - r0);
    __syncthreads();  // the previous round's rows and weights are no longer read
    for (int i = tid; i < kSpRows * (kHd / 4); i += kSpThreads) {
      const int r = i / (kHd / 4), q4 = i % (kHd / 4);
      const float4 v = r < nr ? reinterpret_cast<const float4*>(rg.row(r0 + r))[q4]
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      reinterpret_cast<float4*>(rs + r * kSpPitch)[q4] = v;
    }
    __syncthreads();
    {
      const float4* row = reinterpret_cast<const float4*>(rs + lane * kSpPitch);
      const bool valid = lane < nr;
      const float sa =
          valid ? dot512(reinterpret_cast<const float4*>(qs + ha * kHd), row) * scale : kNegInf;
      const float sb =
          valid ? dot512(reinterpret_cast<const float4*>(qs + hb * kHd), row) * scale : kNegInf;
      const float na = fmaxf(ma, warp_max(sa)), nb = fmaxf(mb, warp_max(sb));  // finite: nr >= 1
      const float pa = valid ? detmath::expf(sa - na) : 0.0f;
      const float pb = valid ? detmath::expf(sb - nb) : 0.0f;
      const float ca = ma == kNegInf ? 0.0f : detmath::expf(ma - na);
      const float cb = mb == kNegInf ? 0.0f : detmath::expf(mb - nb);
      la = la * ca + warp_sum(pa);
      lb = lb * cb + warp_sum(pb);
      ma = na, mb = nb;
      ps[ha * kSpRows + lane] = pa;
      ps[hb * kSpRows + lane] = pb;
      if (lane == 0) corr[ha] = ca, corr[hb] = cb;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kSpHeadsPerThread; ++k) {
      const float c = corr[g8 * kSpHeadsPerThread + k];
      acc[k][0] *= c, acc[k][1] *= c, acc[k][2] *= c, acc[k][3] *= c;
    }
    // Rows past nr were staged as zeros with zero weights: every round adds kSpRows rows.
#pragma unroll 2
    for (int r = 0; r < kSpRows; r += 4) {
      float4 v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        v[j] = reinterpret_cast<const float4*>(rs + (r + j) * kSpPitch)[d4];
#pragma unroll
      for (int k = 0; k < kSpHeadsPerThread; ++k) {
        const float4 w =
            *reinterpret_cast<const float4*>(ps + (g8 * kSpHeadsPerThread + k) * kSpRows + r);
        const float wj[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc[k][0] = fmaf(wj[j], v[j].x, acc[k][0]);
          acc[k][1] = fmaf(wj[j], v[j].y, acc[k][1]);
          acc[k][2] = fmaf(wj[j], v[j].z, acc[k][2]);
          acc[k][3] = fmaf(wj[j], v[j].w, acc[k][3]);
        }
      }
    }
  }
  // part[((t * n_spans + span) * n_head + h) * kPartFloats ..]: the sums, then m, l.
  const int64_t base = (int64_t{t} * n_spans + blockIdx.x) * g.n_head;
#pragma unroll
  for (int k = 0; k < kSpHeadsPerThread; ++k) {
    const int h = h0 + g8 * kSpHeadsPerThread + k;
    if (h < g.n_head) {
      reinterpret_cast<float4*>(part + (base + h) * kPartFloats)[d4] =
          make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
    }
  }
  if (lane == 0) {
    if (h0 + ha < g.n_head) {
      part[(base + h0 + ha) * kPartFloats + kHd] = ma;
      part[(base + h0 + ha) * kPartFloats + kHd + 1] = la;
    }
    if (h0 + hb < g.n_head) {
      part[(base + h0 + hb) * kPartFloats + kHd] = mb;
      part[(base + h0 + hb) * kPartFloats + kHd + 1] = lb;
    }
  }
}

constexpr int kMergeThreads = kHd / 4;  // a float4 of dims each

// Head blockIdx.x of batch row blockIdx.y: the spans merged with the sink, then inverse RoPE.
template <class Src>
__global__ void __launch_bounds__(kMergeThreads)
    attention_merge_kernel(AttentionGeometry g, const __grid_constant__ Src src, const float* sinks,
                           RopeArg rope, int n_spans, const float* part, float* out_all,
                           int64_t out_stride) {
  __shared__ __align__(16) float o[kHd];
  kernel_begin();
  const int h = static_cast<int>(blockIdx.x), t = static_cast<int>(blockIdx.y);
  const int tid = static_cast<int>(threadIdx.x);
  const RowGeometry rg(g, src, t);
  const int per_span = span_rows(rg.n_rows);
  const int spans = (rg.n_rows + per_span - 1) / per_span;
  const float* p = part + (int64_t{t} * n_spans * g.n_head + h) * kPartFloats;
  const int64_t span_stride = int64_t{g.n_head} * kPartFloats;
  const float sink = sinks[h];
  float m = sink;
  for (int c = 0; c < spans; ++c) m = fmaxf(m, p[c * span_stride + kHd]);
  float den = detmath::expf(sink - m);
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int c = 0; c < spans; ++c) {
    const float* pc = p + c * span_stride;
    const float w = detmath::expf(pc[kHd] - m);
    den = fmaf(pc[kHd + 1], w, den);
    const float4 v = reinterpret_cast<const float4*>(pc)[tid];
    acc.x = fmaf(w, v.x, acc.x);
    acc.y = fmaf(w, v.y, acc.y);
    acc.z = fmaf(w, v.z, acc.z);
    acc.w = fmaf(w, v.w, acc.w);
  }
  const float inv = 1.0f / den;
  reinterpret_cast<float4*>(o)[tid] =
      make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
  __syncthreads();
  if (tid < (kHd - kNope) / 2) rope_pair(o + kNope, rope.inv_freq, tid, src.pos(t), true);
  __syncthreads();
  reinterpret_cast<float4*>(out_all + t * out_stride + int64_t{h} * kHd)[tid] =
      reinterpret_cast<const float4*>(o)[tid];
}

}  // namespace

int64_t attention_split_scratch_floats(int n_head, int max_rows, int n) {
  return int64_t{n} * max_spans(max_rows) * n_head * kPartFloats;
}

template <class Src>
void launch_attention_split(const float* q, int64_t q_stride, const AttentionGeometry& g,
                            const Src& src, int n, const float* sinks, const RopeArg& rope,
                            float* scratch, float* out, int64_t out_stride, cudaStream_t s) {
  DS4_CHECK_MSG(n > 0 && n <= kMaxGridYZ, "split attention: %d rows", n);
  DS4_CHECK_MSG(
      aligned_to(q, 16) && q_stride % 4 == 0 && aligned_to(out, 16) && out_stride % 4 == 0,
      "split attention: rows not 16-byte aligned");
  const int spans = max_spans(g.max_rows);
  // Once per kernel (a decode step may be recorded into a graph meanwhile).
  static const bool smem_set = [] {
    DS4_CUDA_CHECK(cudaFuncSetAttribute(attention_split_kernel<Src>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSpSmem)));
    return true;
  }();
  (void)smem_set;
  const dim3 grid(spans, (g.n_head + kSpHeads - 1) / kSpHeads, n);
  launch(attention_split_kernel<Src>, grid, kSpThreads, kSpSmem, s, q, q_stride, g, src, spans,
         scratch);
  DS4_CUDA_CHECK_LAUNCH();
  launch(attention_merge_kernel<Src>, dim3(g.n_head, n), kMergeThreads, 0, s, g, src, sinks, rope,
         spans, scratch, out, out_stride);
  DS4_CUDA_CHECK_LAUNCH();
}

template void launch_attention_split<OneRun>(const float*, int64_t, const AttentionGeometry&,
                                             const OneRun&, int, const float*, const RopeArg&,
                                             float*, float*, int64_t, cudaStream_t);
template void launch_attention_split<SeqTable>(const float*, int64_t, const AttentionGeometry&,
                                               const SeqTable&, int, const float*, const RopeArg&,
                                               float*, float*, int64_t, cudaStream_t);

}  // namespace ds4::backend::cuda
