// src/backend/cuda/kernels/attention.cu: per-row attention kernels and their launchers.
#include "backend/cuda/check.h"
#include "backend/cuda/kernels/attention.cuh"
#include "backend/cuda/kernels/device_math.cuh"

namespace ds4::backend::cuda {
namespace {

constexpr int kHd = 512;
constexpr int kNope = 448;
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

__global__ void rope_qkv_store_kernel(float* q, int n_head, float* kv, RopeArg rope, int pos,
                                      bool qat, bool f16_rows, float* raw_slot) {
  for (int i = threadIdx.x; i < n_head * 32; i += blockDim.x) {
    rope_pair(q + (i / 32) * kHd + kNope, rope.inv_freq, i % 32, pos, false);
  }
  if (threadIdx.x < 32) rope_pair(kv + kNope, rope.inv_freq, threadIdx.x, pos, false);
  if (qat && threadIdx.x / 32 < 7) fp8_block_warp(kv + (threadIdx.x / 32) * 64);
  __syncthreads();
  for (int i = threadIdx.x; i < kHd; i += blockDim.x) {
    const float v = f16_rows ? f16_round(kv[i]) : kv[i];
    kv[i] = v;
    raw_slot[i] = v;
  }
}

__global__ void compressor_store_kernel(float* st_kv, float* st_score, int rho, int width,
                                        const float* kvc, const float* gate, const void* ape,
                                        bool ape_f16, int t) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= width) return;
  const int64_t a = int64_t{t} * width + j;
  const float bias = ape_f16 ? __half2float(static_cast<const __half*>(ape)[a])
                             : static_cast<const float*>(ape)[a];
  st_kv[int64_t{rho} * width + j] = kvc[j];
  st_score[int64_t{rho} * width + j] = gate[j] + bias;
}

__global__ void compressor_pool_kernel(const float* st_kv, const float* st_score, int ratio, int hd,
                                       float* dst) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= hd) return;
  const int width = (ratio == 4 ? 2 : 1) * hd;
  float m = kNegInf;
  if (ratio == 4) {
    for (int r = 0; r < 4; ++r) {
      m = fmaxf(m, st_score[r * width + j]);
      m = fmaxf(m, st_score[(4 + r) * width + hd + j]);
    }
  } else {
    for (int r = 0; r < ratio; ++r) m = fmaxf(m, st_score[r * width + j]);
  }
  if (m <= kEmptyBelow) {
    dst[j] = 0.0f;
    return;
  }
  float den = 0.0f, sum = 0.0f;
  if (ratio == 4) {
    for (int r = 0; r < 4; ++r) {
      const int p = r * width + j, c = (4 + r) * width + hd + j;
      const float wp = detmath::expf(st_score[p] - m), wc = detmath::expf(st_score[c] - m);
      den += wp + wc;
      sum += wp * st_kv[p];
      sum += wc * st_kv[c];
    }
  } else {
    for (int r = 0; r < ratio; ++r) {
      const float w = detmath::expf(st_score[r * width + j] - m);
      den += w;
      sum += w * st_kv[r * width + j];
    }
  }
  dst[j] = den > 0.0f ? sum / den : 0.0f;
}

__global__ void finish_row_kernel(float* row, int hd, const float* norm, RopeArg rope,
                                  int pos_start, bool indexer_lane, bool qat, bool f16_rows) {
  __shared__ float x[kHd];
  __shared__ double part[32];
  double ss = 0.0;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    x[i] = row[i];
    ss += double(x[i]) * double(x[i]);
  }
  ss = block_sum_double(ss, part);
  const float scale = 1.0f / sqrtf(static_cast<float>(ss / double(hd)) + kEps);
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

__global__ void indexer_query_kernel(float* iq, RopeArg rope, int pos, bool qat) {
  __shared__ float x[kIhd];
  float* head = iq + blockIdx.x * kIhd;
  for (int i = threadIdx.x; i < kIhd; i += blockDim.x) x[i] = head[i];
  __syncthreads();
  if (threadIdx.x < 32) rope_pair(x + 64, rope.inv_freq, threadIdx.x, pos, false);
  __syncthreads();
  if (qat) hadamard_fp4(x);
  for (int i = threadIdx.x; i < kIhd; i += blockDim.x) head[i] = x[i];
}

// One thread per compressed row, replicating the CPU's AVX2 kernel operation for operation
// (backend/cpu/x86/indexer_scores_avx2.cpp): per head a fused multiply-add chain over the 128
// dims, then per lane l of 8 a fused chain over heads 8j + l of relu(dot) * w, then the same
// horizontal sum. n_ih is a multiple of 8.
__global__ void indexer_scores_kernel(const float* keys, int n, const float* iq, const float* w,
                                      float wscale, int n_ih, float* scores) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= n) return;
  const float* key = keys + int64_t{c} * kIhd;
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < n_ih / 8; ++j) {
    for (int l = 0; l < 8; ++l) {
      const int h = 8 * j + l;
      const float* qh = iq + h * kIhd;
      float acc = 0.0f;
      for (int d = 0; d < kIhd; ++d) acc = fmaf(key[d], qh[d], acc);
      s[l] = fmaf(acc > 0.0f ? acc : 0.0f, w[h] * wscale, s[l]);
    }
  }
  const float t0 = s[0] + s[4], t1 = s[1] + s[5], t2 = s[2] + s[6], t3 = s[3] + s[7];
  scores[c] = (t0 + t2) + (t1 + t3);
}

__global__ void attention_kernel(const float* q, const float* raw, int raw_cap, int raw_head,
                                 int n_raw, const float* comp, const int32_t* visible, int n_comp,
                                 const float* sinks, RopeArg rope, int pos, float* scratch,
                                 float* out) {
  __shared__ float red[32];
  __shared__ float o[kHd];
  const int h = blockIdx.x;
  const int n_rows = n_raw + n_comp;
  const float* qh = q + int64_t{h} * kHd;
  float* sc = scratch + int64_t{h} * n_rows;
  auto row_ptr = [&](int i) -> const float* {
    if (i < n_raw) return raw + int64_t{(raw_head + i) % raw_cap} * kHd;
    const int c = i - n_raw;
    return comp + int64_t{visible != nullptr ? visible[c] : c} * kHd;
  };
  const float scale = 1.0f / sqrtf(static_cast<float>(kHd));
  float m = sinks[h];
  for (int i = threadIdx.x; i < n_rows; i += blockDim.x) {
    const float* r = row_ptr(i);
    double d = 0.0;  // exact products summed in double, like the CPU's f32 dot
    for (int k = 0; k < kHd; ++k) d += static_cast<double>(qh[k]) * static_cast<double>(r[k]);
    sc[i] = static_cast<float>(d) * scale;
    m = fmaxf(m, sc[i]);
  }
  m = block_max_float(m, red);
  for (int i = threadIdx.x; i < n_rows; i += blockDim.x) sc[i] = detmath::expf(sc[i] - m);
  __syncthreads();
  __shared__ float den_shared;
  if (threadIdx.x == 0) {  // the CPU's order: the sink term first, then the rows in order
    float den = detmath::expf(sinks[h] - m);
    for (int i = 0; i < n_rows; ++i) den += sc[i];
    den_shared = den;
  }
  __syncthreads();
  const float inv = 1.0f / den_shared;
  for (int d = threadIdx.x; d < kHd; d += blockDim.x) {
    float acc = 0.0f;
    for (int i = 0; i < n_rows; ++i) acc += sc[i] * row_ptr(i)[d];
    o[d] = acc * inv;
  }
  __syncthreads();
  if (threadIdx.x < 32) rope_pair(o + kNope, rope.inv_freq, threadIdx.x, pos, true);
  __syncthreads();
  for (int d = threadIdx.x; d < kHd; d += blockDim.x) out[int64_t{h} * kHd + d] = o[d];
}

}  // namespace

void launch_rope_qkv_store(float* q, int n_head, float* kv, const RopeArg& rope, int pos, bool qat,
                           bool f16_rows, float* raw_slot, cudaStream_t s) {
  rope_qkv_store_kernel<<<1, 256, 0, s>>>(q, n_head, kv, rope, pos, qat, f16_rows, raw_slot);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_compressor_store(float* st_kv, float* st_score, int rho, int width, const float* kvc,
                             const float* gate, const void* ape, gguf::GgufType ape_type, int t,
                             cudaStream_t s) {
  DS4_CHECK(ape_type == gguf::GgufType::kF16 || ape_type == gguf::GgufType::kF32);
  compressor_store_kernel<<<(width + 255) / 256, 256, 0, s>>>(
      st_kv, st_score, rho, width, kvc, gate, ape, ape_type == gguf::GgufType::kF16, t);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_compressor_pool(const float* st_kv, const float* st_score, int ratio, int hd,
                            float* dst, cudaStream_t s) {
  compressor_pool_kernel<<<(hd + 127) / 128, 128, 0, s>>>(st_kv, st_score, ratio, hd, dst);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_finish_row(float* row, int hd, const float* norm, const RopeArg& rope, int pos_start,
                       bool indexer_lane, bool qat, bool f16_rows, cudaStream_t s) {
  DS4_CHECK(hd == kHd || hd == kIhd);
  finish_row_kernel<<<1, 256, 0, s>>>(row, hd, norm, rope, pos_start, indexer_lane, qat, f16_rows);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_indexer_query(float* iq, int n_ih, const RopeArg& rope, int pos, bool qat,
                          cudaStream_t s) {
  indexer_query_kernel<<<n_ih, 128, 0, s>>>(iq, rope, pos, qat);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_indexer_scores(const float* keys, int n, const float* iq, const float* w, float wscale,
                           int n_ih, float* scores, cudaStream_t s) {
  if (n == 0) return;
  constexpr int kWarps = 8;
  indexer_scores_kernel<<<(n + kWarps - 1) / kWarps, 32 * kWarps, 0, s>>>(keys, n, iq, w, wscale,
                                                                          n_ih, scores);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_attention(const float* q, int n_head, const float* raw, int raw_cap, int raw_head,
                      int n_raw, const float* comp, const int32_t* visible, int n_comp,
                      const float* sinks, const RopeArg& rope, int pos, float* scratch, float* out,
                      cudaStream_t s) {
  attention_kernel<<<n_head, 256, 0, s>>>(q, raw, raw_cap, raw_head, n_raw, comp, visible, n_comp,
                                          sinks, rope, pos, scratch, out);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
