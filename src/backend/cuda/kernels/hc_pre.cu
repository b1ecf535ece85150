// src/backend/cuda/kernels/hc_pre.cu: the hyper-connection pre-step of a sublayer (model.md §4.3)
// for four HC copies and F16 mixing weights, fused into one kernel: RMSNorm of the row, the
// 2n + n^2 mixing products, the sigmoid gates and Sinkhorn, and the collapse. It computes what
// rms_norm_kernel, the float-row product, hc_mix_kernel and hc_collapse_kernel compute one after
// the other (dense.cu, matmul_q.cu), operation for operation. For few rows (decode) a CTA per
// (mixing output, row) recomputes the row's norm and forms its product, and the last CTA of a row
// to finish (a ticket counter, reset by that CTA) runs the mix on one warp, the collapse and, when
// asked, the RMSNorm of the collapsed row (rms_norm_kernel's operations); for many rows (prefill)
// a CTA per row does all of it. Built with -fmad=false.
#include "backend/cuda/check.h"
#include "backend/cuda/kernels/dense.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kHc = 4;                     // HC copies
constexpr int kMix = 2 * kHc + kHc * kHc;  // mixing outputs: pre, post, comb
constexpr int kHcThreads = 1024;

// The mix (hc_mix_row's operations, same order) on one warp: lane l < kMix holds mix value l
// (pre 0..3, post 4..7, comb 8..23 row-major). Every sum a lane needs it gathers by shuffles and
// adds in the sequential order, so each lane's value equals the serial version's.
__device__ float hc_mix_warp(float v, const float* scale, const float* base, int iters) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const bool is_comb = lane >= 2 * kHc && lane < kMix;
  const int k = is_comb ? lane - 2 * kHc : 0;
  const int a = k / kHc, b = k % kHc;
  if (lane < kHc) {
    v = 1.0f / (1.0f + detmath::expf(-(v * scale[0] + base[lane]))) + kEps;
  } else if (lane < 2 * kHc) {
    v = 2.0f / (1.0f + detmath::expf(-(v * scale[1] + base[lane])));
  } else if (is_comb) {
    v = v * scale[2] + base[lane];
  }
  // Lane of comb[i][j] (for lanes outside comb: their own lane, so every shuffle is harmless).
  auto at = [&](int i, int j) { return is_comb ? 2 * kHc + i * kHc + j : lane; };
  float mx = kNegInf;
  for (int j = 0; j < kHc; ++j) mx = fmaxf(mx, __shfl_sync(0xffffffffu, v, at(a, j)));
  const float e = detmath::expf(v - mx);
  float sum = 0.0f;
  for (int j = 0; j < kHc; ++j) sum += __shfl_sync(0xffffffffu, e, at(a, j));
  const float inv0 = 1.0f / sum;
  if (is_comb) v = e * inv0 + kEps;
  for (int it = 0; it < iters; ++it) {
    if (it > 0) {
      float t = 0.0f;
      for (int j = 0; j < kHc; ++j) t += __shfl_sync(0xffffffffu, v, at(a, j));
      const float inv = 1.0f / (t + kEps);
      if (is_comb) v *= inv;
    }
    float t = 0.0f;
    for (int i = 0; i < kHc; ++i) t += __shfl_sync(0xffffffffu, v, at(i, b));
    const float inv = 1.0f / (t + kEps);
    if (is_comb) v *= inv;
  }
  return v;
}

// rms_norm_kernel's scale of row xr (no weight): the sum of squares in double, in its order.
__device__ float hc_row_rms(const float* xr, int64_t width, double* part) {
  const int tid = static_cast<int>(threadIdx.x);
  double ss = 0.0;
#pragma unroll 4
  for (int64_t i = tid; i < width; i += kHcThreads)
    ss = add_product(ss, double(xr[i]), double(xr[i]));
  ss = block_sum_double(ss, part);
  return rms_scale(ss, width);
}

// The end of the pre-step for row r, once its mix is in m (2n + n^2 floats, in place): the mix on
// one warp, the collapse into cur and the optional norm of the collapsed row. Every thread of the
// CTA calls it.
__device__ void hc_finish_row(const HcPreArgs& a, int64_t r, const float* xr, float* m,
                              double* part) {
  __shared__ float pre[kHc];
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t n_embd = a.n_embd;
  if (tid < 32) {
    const float v = hc_mix_warp(tid < kMix ? __ldcg(m + tid) : 0.0f, a.scale, a.base, a.iters);
    if (tid < kMix) m[tid] = v;
    if (tid < kHc) pre[tid] = v;
  }
  __syncthreads();
  float* cur = a.cur + r * n_embd;
  double css = 0.0;  // the optional norm's sum of squares, in rms_norm_kernel's order
  for (int64_t d = tid; d < n_embd; d += kHcThreads) {
    float c = 0.0f;
    for (int h = 0; h < kHc; ++h) c += xr[h * n_embd + d] * pre[h];
    cur[d] = c;
    css = add_product(css, double(c), double(c));
  }
  if (a.norm == nullptr) return;  // uniform per CTA
  css = block_sum_double(css, part);
  const float scale = rms_scale(css, n_embd);
  float* normed = a.normed + r * n_embd;
  for (int64_t d = tid; d < n_embd; d += kHcThreads) normed[d] = (cur[d] * scale) * a.norm[d];
}

// Few rows (decode): a CTA per (mixing product, row), the row's last CTA finishing it. (A CTA
// per 1,024-element chunk of the row with float sums, the last CTA adding the chunks and running
// the Sinkhorn warp beside the collapse, decoded Flash q2 more slowly on the H200: removed.)
__global__ void __launch_bounds__(kHcThreads) hc_pre_kernel(const HcPreArgs a) {
  __shared__ double part[32];
  __shared__ bool last;
  const int64_t width = kHc * a.n_embd;
  const int64_t r = blockIdx.y;
  const int o = static_cast<int>(blockIdx.x);
  const int tid = static_cast<int>(threadIdx.x);
  const uint16_t* w = static_cast<const uint16_t*>(a.fn) + o * width;
  prefetch_l2(w, width * static_cast<int64_t>(sizeof(uint16_t)));  // before the wait (launch.cuh)
  kernel_begin();
  const float* xr = a.x + r * width;
  double acc = 0.0;
  // rms_norm_kernel's scale (no weight), then the row product of the normed row. (The product in
  // the pass that sums the squares, rms times sum w x, was no faster on the H200: removed.)
  const float rms = hc_row_rms(xr, width, part);
#pragma unroll 8
  for (int64_t i = tid; i < width; i += kHcThreads) {
    acc = add_product(acc, static_cast<double>(f16_bits_to_float(w[i])),
                      static_cast<double>(xr[i] * rms));
  }
  acc = block_sum_double(acc, part);
  float* m = a.mix + r * kMix;
  if (tid == 0) {
    m[o] = static_cast<float>(acc);
    __threadfence();  // the product is visible before the ticket is taken
    last = atomicAdd(&a.tickets[r], 1u) == kMix - 1;
  }
  __syncthreads();
  if (!last) return;
  // The row's last CTA: every product is in memory (read past the L1 cache).
  __threadfence();
  if (tid == 0) a.tickets[r] = 0;  // ready for the next launch
  hc_finish_row(a, r, xr, m, part);
}

// Many rows (prefill): a CTA per row forms all kMix products itself, kBatch at a time, then
// finishes the row. The row is normed and read once per batch instead of once per product, and
// no ticket is needed. Each product is summed exactly as hc_pre_kernel sums it (the same elements
// per thread in the same order, the same butterfly within a warp, then the warps in order), so
// the two kernels agree bit for bit.
constexpr int kBatch = 8;
static_assert(kMix % kBatch == 0, "whole batches of products");
__global__ void __launch_bounds__(kHcThreads) hc_pre_rows_kernel(const HcPreArgs a) {
  kernel_begin();
  __shared__ double part[32];
  __shared__ double batch_part[kHcThreads / 32][kBatch];
  const int64_t width = kHc * a.n_embd;
  const int64_t r = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const float* xr = a.x + r * width;
  const float rms = hc_row_rms(xr, width, part);
  const uint16_t* fn = static_cast<const uint16_t*>(a.fn);
  float* m = a.mix + r * kMix;
  for (int o0 = 0; o0 < kMix; o0 += kBatch) {
    double acc[kBatch] = {};
#pragma unroll 4
    for (int64_t i = tid; i < width; i += kHcThreads) {
      const double xn = static_cast<double>(xr[i] * rms);
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        acc[j] = add_product(acc[j],
                             static_cast<double>(f16_bits_to_float(fn[(o0 + j) * width + i])), xn);
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      for (int off = 16; off > 0; off /= 2) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
      if (lane == 0) batch_part[warp][j] = acc[j];
    }
    __syncthreads();
    if (tid < kBatch) {
      double total = 0.0;
      for (int w = 0; w < kHcThreads / 32; ++w) total += batch_part[w][tid];
      m[o0 + tid] = static_cast<float>(total);
    }
    __syncthreads();
  }
  hc_finish_row(a, r, xr, m, part);
}

}  // namespace

bool hc_pre_fusable(int n_hc, gguf::GgufType fn_type, int64_t fn_rows) {
  return n_hc == kHc && fn_type == gguf::GgufType::kF16 && fn_rows == kMix;
}

void launch_hc_pre(const HcPreArgs& a, cudaStream_t s) {
  DS4_CHECK_MSG(a.rows <= kMaxGridYZ, "hc pre: %lld rows in one launch",
                static_cast<long long>(a.rows));
  DS4_CHECK(a.norm == nullptr || a.normed != nullptr);
  if (a.rows == 0) return;
  // kHcPreBatchRows: a guess between decode's one row and prefill's 512, not yet tuned on the
  // device (kMix CTAs per row fill the GPU below it).
  if (a.rows >= kHcPreBatchRows) {
    launch(hc_pre_rows_kernel, static_cast<unsigned>(a.rows), kHcThreads, 0, s, a);
  } else {
    launch(hc_pre_kernel, dim3(kMix, static_cast<unsigned>(a.rows)), kHcThreads, 0, s, a);
  }
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
