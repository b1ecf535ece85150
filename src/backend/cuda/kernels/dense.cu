// src/backend/cuda/kernels/dense.cu: the row-wise kernels and their launchers.
#include <algorithm>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/dense.cuh"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) { return (n + kThreads - 1) / kThreads; }

// Elementwise kernels over rows x cols: thread blockIdx.x * blockDim.x + threadIdx.x owns a
// column, blockIdx.y is its first row (rows past 65,535 by a stride of gridDim.y), and blockIdx.z
// a third index where a kernel has one. No thread divides a 64-bit index: that is a subroutine of
// ~100 instructions on the GPU, and hc_post, whose thread per output took three of them, ran at
// a fraction of the H200's memory bandwidth.
dim3 grid_rows(int64_t rows, int64_t cols, int z = 1) {
  return dim3(static_cast<unsigned>(blocks_for(cols)), grid_y_for(rows), static_cast<unsigned>(z));
}
__device__ __forceinline__ int64_t grid_col() {
  return blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
}

__global__ void embed_kernel(const void* table, bool f16, int64_t n_embd, const int32_t* tokens,
                             int64_t rows, int copies, float* out) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= n_embd) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t src = int64_t{tokens[r]} * n_embd + d;
    const float v = f16 ? __half2float(static_cast<const __half*>(table)[src])
                        : static_cast<const float*>(table)[src];
    for (int c = 0; c < copies; ++c) out[(r * copies + c) * n_embd + d] = v;
  }
}

__global__ void rms_norm_kernel(const float* x, int64_t cols, int64_t segment, const float* w,
                                float* y) {
  kernel_begin();
  __shared__ double part[32];
  const int64_t seg_per_row = cols / segment;
  const int64_t row = blockIdx.x / seg_per_row, seg = blockIdx.x % seg_per_row;
  const float* xs = x + row * cols + seg * segment;
  float* ys = y + row * cols + seg * segment;
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < segment; i += blockDim.x)
    ss = add_product(ss, double(xs[i]), double(xs[i]));
  ss = block_sum_double(ss, part);
  const float scale = rms_scale(ss, segment);
  __syncthreads();  // every thread read xs before anyone overwrites it (in-place use)
  for (int64_t i = threadIdx.x; i < segment; i += blockDim.x) {
    ys[i] = w != nullptr ? (xs[i] * scale) * w[i] : xs[i] * scale;
  }
}

// The same norm for segments of kThreads * kPer values, held in registers: thread i loads values
// i + kThreads k (k < kPer) all at once, adds their squares in k order (the kernel above's order,
// with the same reduction, so the same bits) and scales them from its registers. The kernel above
// waited on one load at a time and read every value twice (the HC norm's 16,384-wide rows moved
// ~1.3 TB/s there).
template <int kPer>
__global__ void __launch_bounds__(kThreads)
    rms_norm_held_kernel(const float* x, int64_t cols, const float* w, float* y) {
  kernel_begin();
  __shared__ double part[32];
  constexpr int kSegment = kThreads * kPer;
  const int64_t seg_per_row = cols / kSegment;
  const int64_t row = blockIdx.x / seg_per_row, seg = blockIdx.x % seg_per_row;
  const int tid = static_cast<int>(threadIdx.x);
  const float* xs = x + row * cols + seg * kSegment + tid;
  float* ys = y + row * cols + seg * kSegment + tid;
  float v[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) v[k] = xs[k * kThreads];
  double ss = 0.0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) ss = add_product(ss, double(v[k]), double(v[k]));
  ss = block_sum_double(ss, part);
  const float scale = rms_scale(ss, kSegment);
  if (w != nullptr) w += tid;  // one weight per position of the segment, as above
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    ys[k * kThreads] = w != nullptr ? (v[k] * scale) * w[k * kThreads] : v[k] * scale;
}

// The HC mix of one row, in place on m (2n + n^2 floats), with the CPU reference's operations
// in its order. Instantiated for the model's n = 4 with m in registers (a version working on
// global memory was bound by its dependent loads and stores), and for any n on memory.
template <int kN>
__device__ __forceinline__ void hc_mix_row(float* m, int n_rt, const float* scale,
                                           const float* base, int iters) {
  const int n = kN > 0 ? kN : n_rt;
  float* pre = m;
  float* post = m + n;
  float* comb = m + 2 * n;
#pragma unroll
  for (int i = 0; i < n; ++i) {
    pre[i] = 1.0f / (1.0f + detmath::expf(-(pre[i] * scale[0] + base[i]))) + kEps;
    post[i] = 2.0f / (1.0f + detmath::expf(-(post[i] * scale[1] + base[n + i])));
  }
#pragma unroll
  for (int k = 0; k < n * n; ++k) comb[k] = comb[k] * scale[2] + base[2 * n + k];
#pragma unroll
  for (int a = 0; a < n; ++a) {
    float* row = comb + a * n;
    float mx = kNegInf;
#pragma unroll
    for (int b = 0; b < n; ++b) mx = fmaxf(mx, row[b]);
    float sum = 0.0f;
#pragma unroll
    for (int b = 0; b < n; ++b) sum += (row[b] = detmath::expf(row[b] - mx));
    const float inv = 1.0f / sum;
#pragma unroll
    for (int b = 0; b < n; ++b) row[b] = row[b] * inv + kEps;
  }
  for (int it = 0; it < iters; ++it) {
    if (it > 0) {
#pragma unroll
      for (int a = 0; a < n; ++a) {
        float t = 0.0f;
#pragma unroll
        for (int b = 0; b < n; ++b) t += comb[a * n + b];
        const float inv = 1.0f / (t + kEps);
#pragma unroll
        for (int b = 0; b < n; ++b) comb[a * n + b] *= inv;
      }
    }
#pragma unroll
    for (int b = 0; b < n; ++b) {
      float t = 0.0f;
#pragma unroll
      for (int a = 0; a < n; ++a) t += comb[a * n + b];
      const float inv = 1.0f / (t + kEps);
#pragma unroll
      for (int a = 0; a < n; ++a) comb[a * n + b] *= inv;
    }
  }
}

__global__ void hc_mix_kernel(float* mix, int64_t rows, int n, const float* scale,
                              const float* base, int iters) {
  kernel_begin();
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  float* m = mix + r * (2 * n + n * n);
  if (n == 4) {
    constexpr int kLen = 2 * 4 + 4 * 4;
    float v[kLen];
#pragma unroll
    for (int i = 0; i < kLen; ++i) v[i] = m[i];
    hc_mix_row<4>(v, 4, scale, base, iters);
#pragma unroll
    for (int i = 0; i < kLen; ++i) m[i] = v[i];
  } else {
    hc_mix_row<0>(m, n, scale, base, iters);
  }
}

__global__ void hc_collapse_kernel(const float* x, const float* mix, int64_t rows, int n,
                                   int64_t n_embd, float* cur) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= n_embd) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* pre = mix + r * (2 * n + n * n);
    float acc = 0.0f;
    for (int h = 0; h < n; ++h) acc += x[(r * n + h) * n_embd + d] * pre[h];
    cur[r * n_embd + d] = acc;
  }
}

// blockIdx.z: the HC copy b of the output.
__global__ void hc_post_kernel(const float* x, const float* f, const float* mix, int64_t rows,
                               int n, int64_t n_embd, float* y) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= n_embd) return;
  const int b = static_cast<int>(blockIdx.z);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* post = mix + r * (2 * n + n * n) + n;
    const float* comb = post + n;
    float acc = f[r * n_embd + d] * post[b];
    for (int a = 0; a < n; ++a) acc += comb[a * n + b] * x[(r * n + a) * n_embd + d];
    y[(r * n + b) * n_embd + d] = acc;
  }
}

// The same for kN copies known at compile time: a thread forms every copy of its (row, dim) from
// one read of the row's kN streams and f (the kernel above, with a CTA per copy in z, read each
// stream value n times, mostly from device memory: the copies' CTAs run one after another).
template <int kN>
__global__ void hc_post_all_kernel(const float* x, const float* f, const float* mix, int64_t rows,
                                   int64_t n_embd, float* y) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= n_embd) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* post = mix + r * (2 * kN + kN * kN) + kN;
    const float* comb = post + kN;
    float xv[kN];
#pragma unroll
    for (int a = 0; a < kN; ++a) xv[a] = x[(r * kN + a) * n_embd + d];
    const float fv = f[r * n_embd + d];
#pragma unroll
    for (int b = 0; b < kN; ++b) {
      float acc = fv * post[b];
#pragma unroll
      for (int a = 0; a < kN; ++a) acc += comb[a * kN + b] * xv[a];
      y[(r * kN + b) * n_embd + d] = acc;
    }
  }
}

__global__ void head_collapse_kernel(const float* x, const float* pre, const float* scale,
                                     const float* base, int64_t rows, int n, int64_t n_embd,
                                     float* e) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= n_embd) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    float acc = 0.0f;
    for (int h = 0; h < n; ++h) {
      const float w = sigmoid_stable(pre[r * n + h] * scale[0] + base[h]) + kEps;
      acc += x[(r * n + h) * n_embd + d] * w;
    }
    e[r * n_embd + d] = acc;
  }
}

__global__ void swiglu_kernel(const float* g, const float* u, const float* weights, int64_t rows,
                              int64_t cols, float* out) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t i = r * cols + d;
    out[i] = swiglu_value(g[i], u[i], weights != nullptr ? weights + r : nullptr);
  }
}

__global__ void sum_slots_kernel(const float* slots, int k, const float* shared, int64_t rows,
                                 int64_t cols, float* out) {
  kernel_begin();
  const int64_t d = grid_col();
  if (d >= cols) return;
  for (int64_t t = blockIdx.y; t < rows; t += gridDim.y) {
    float acc = 0.0f;
    for (int s = 0; s < k; ++s) acc += slots[(t * k + s) * cols + d];
    out[t * cols + d] = acc + shared[t * cols + d];
  }
}

}  // namespace

void launch_embed(const void* table, gguf::GgufType type, int64_t n_embd, const int32_t* tokens,
                  int64_t rows, int copies, float* out, cudaStream_t s) {
  DS4_CHECK(type == gguf::GgufType::kF16 || type == gguf::GgufType::kF32);
  if (rows == 0 || n_embd == 0) return;
  launch(embed_kernel, grid_rows(rows, n_embd), kThreads, 0, s, table, type == gguf::GgufType::kF16,
         n_embd, tokens, rows, copies, out);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_rms_norm(const float* x, int64_t rows, int64_t cols, int64_t segment, const float* w,
                     float* y, cudaStream_t s) {
  if (rows == 0) return;
  // Few long segments (a decode row's HC norm: one 16,384-wide segment) get a CTA of 1,024
  // threads: a 256-thread CTA was bound by its 64 dependent additions per thread.
  const int64_t ctas = rows * (cols / segment);
  const int threads = ctas < 64 && segment >= 4096 ? 1024 : kThreads;
  // The model's segments (512, 1,024, 4,096 and 16,384 values) on 256-thread CTAs hold their
  // values in registers.
  const int64_t per = threads == kThreads && segment % kThreads == 0 ? segment / kThreads : 0;
  switch (per) {
    case 2: launch(rms_norm_held_kernel<2>, ctas, kThreads, 0, s, x, cols, w, y); break;
    case 4: launch(rms_norm_held_kernel<4>, ctas, kThreads, 0, s, x, cols, w, y); break;
    case 16: launch(rms_norm_held_kernel<16>, ctas, kThreads, 0, s, x, cols, w, y); break;
    case 64: launch(rms_norm_held_kernel<64>, ctas, kThreads, 0, s, x, cols, w, y); break;
    default: launch(rms_norm_kernel, ctas, threads, 0, s, x, cols, segment, w, y); break;
  }
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_hc_mix(float* mix, int64_t rows, int n_hc, const float* scale, const float* base,
                   int iters, cudaStream_t s) {
  launch(hc_mix_kernel, blocks_for(rows), kThreads, 0, s, mix, rows, n_hc, scale, base, iters);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_hc_collapse(const float* x, const float* mix, int64_t rows, int n_hc, int64_t n_embd,
                        float* cur, cudaStream_t s) {
  if (rows == 0 || n_embd == 0) return;
  launch(hc_collapse_kernel, grid_rows(rows, n_embd), kThreads, 0, s, x, mix, rows, n_hc, n_embd,
         cur);
  DS4_CUDA_CHECK_LAUNCH();
}

__global__ void add_kernel(const float* a, const float* b, int64_t n, float* y) {
  kernel_begin();
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = a[i] + b[i];
}

namespace {
// One CTA per row: dot = d . y[row] in double (a fixed order, so a row's result does not depend
// on the batch), then y[row] -= s * dot * d; s is scales[row], or `scale` without the array.
__global__ void steer_kernel(const float* d, const float* scales, float scale, int64_t cols,
                             float* y) {
  kernel_begin();
  __shared__ double part[32];
  const int64_t row = blockIdx.x;
  const float s = scales != nullptr ? scales[row] : scale;
  if (s == 0.0f) return;  // the whole CTA alike
  float* v = y + row * cols;
  double dot = 0.0;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
    dot = add_product(dot, double(d[i]), double(v[i]));
  dot = block_sum_double(dot, part);
  const auto k = static_cast<float>(double(s) * dot);
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) v[i] -= k * d[i];
}
}  // namespace

void launch_steer(const float* direction, const float* scales, float scale, int64_t rows,
                  int64_t cols, float* y, cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  launch(steer_kernel, dim3(static_cast<unsigned>(rows)), kThreads, 0, s, direction, scales, scale,
         cols, y);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_add(const float* a, const float* b, int64_t n, float* y, cudaStream_t s) {
  if (n == 0) return;
  const int64_t ctas = std::min<int64_t>((n + kThreads - 1) / kThreads, 1024);
  launch(add_kernel, dim3(static_cast<unsigned>(ctas)), kThreads, 0, s, a, b, n, y);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_hc_post(const float* x, const float* f, const float* mix, int64_t rows, int n_hc,
                    int64_t n_embd, float* y, cudaStream_t s) {
  if (rows == 0 || n_embd == 0) return;
  DS4_CHECK(n_hc > 0 && n_hc <= 64);
  if (n_hc == 4) {  // the model's streams (the CTA-per-copy kernel serves any other count)
    launch(hc_post_all_kernel<4>, grid_rows(rows, n_embd), kThreads, 0, s, x, f, mix, rows, n_embd,
           y);
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
  launch(hc_post_kernel, grid_rows(rows, n_embd, n_hc), kThreads, 0, s, x, f, mix, rows, n_hc,
         n_embd, y);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_head_collapse(const float* x, const float* pre, const float* scale, const float* base,
                          int64_t rows, int n_hc, int64_t n_embd, float* e, cudaStream_t s) {
  if (rows == 0 || n_embd == 0) return;
  launch(head_collapse_kernel, grid_rows(rows, n_embd), kThreads, 0, s, x, pre, scale, base, rows,
         n_hc, n_embd, e);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_swiglu(const float* g, const float* u, const float* weights, int64_t rows, int64_t cols,
                   float* out, cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  launch(swiglu_kernel, grid_rows(rows, cols), kThreads, 0, s, g, u, weights, rows, cols, out);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_sum_slots(const float* slots, int k, const float* shared, int64_t rows, int64_t cols,
                      float* out, cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  launch(sum_slots_kernel, grid_rows(rows, cols), kThreads, 0, s, slots, k, shared, rows, cols,
         out);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
