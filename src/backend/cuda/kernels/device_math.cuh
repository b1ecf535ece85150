// src/backend/cuda/kernels/device_math.cuh: device twins of the scalar rules the CPU reference
// uses (backend/cpu/math.h, quant/lowp_sim.cpp): RMS scale, stable sigmoid, softplus, RoPE, the
// e4m3 / e2m1 grids with power-of-two block scales, f16 rounding. Same operation order; the
// simulations are exact (every step but the intended rounding is exact), so they agree with the
// CPU bit for bit.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "base/det_math.h"

namespace ds4::backend::cuda {

inline constexpr float kNegInf = -1.0e30f;
inline constexpr float kEmptyBelow = -5.0e29f;
inline constexpr float kEps = 1e-6f;

// f16 bits -> float (exact, subnormals included).
__device__ __forceinline__ float f16_bits_to_float(uint16_t h) {
  return __half2float(__ushort_as_half(h));
}

// RMSNorm's scale from a row's sum of squares (in double) over n values, as the CPU forms it:
// the mean rounded to float, plus eps, then 1 / sqrt in float. Every device RMSNorm uses this.
__device__ inline float rms_scale(double sum_sq, int64_t n) {
  return 1.0f / sqrtf(static_cast<float>(sum_sq / double(n)) + kEps);
}

__device__ inline float sigmoid_stable(float z) {
  if (z >= 0.0f) return 1.0f / (1.0f + detmath::expf(-z));
  const float e = detmath::expf(z);
  return e / (1.0f + e);
}

__device__ inline float silu(float g) { return g * sigmoid_stable(g); }

// The SwiGLU value of one element (dense.cuh, launch_swiglu): silu(min(g, 10)) * clamp(u, -10,
// 10), times the routing weight w when there is one. One function for the kernel that stores it
// and the encoder that quantizes it directly (matmul_q.cuh), so the two agree bit for bit.
__device__ inline float swiglu_value(float g, float u, const float* w) {
  const float gv = fminf(g, 10.0f);
  const float uv = fminf(fmaxf(u, -10.0f), 10.0f);
  float v = silu(gv) * uv;
  if (w != nullptr) v *= *w;
  return v;
}

__device__ inline float softplus(float z) {
  if (z > 20.0f) return z;
  if (z < -20.0f) return detmath::expf(z);
  return detmath::log1pf(detmath::expf(z));
}

__device__ inline float f16_round(float x) { return __half2float(__float2half_rn(x)); }

// Four floats as f16 pairs hi (round to nearest) and lo (the remainder, rounded): hi + lo is v
// within 2^-22 relative for magnitudes in f16's normal range.
__device__ inline void f16_split4(float4 v, __half2 (&hi)[2], __half2 (&lo)[2]) {
  hi[0] = __floats2half2_rn(v.x, v.y);
  hi[1] = __floats2half2_rn(v.z, v.w);
  const float2 f0 = __half22float2(hi[0]), f1 = __half22float2(hi[1]);
  lo[0] = __floats2half2_rn(v.x - f0.x, v.y - f0.y);
  lo[1] = __floats2half2_rn(v.z - f1.x, v.w - f1.y);
}

// |a| rounded to a grid with `mant_bits` mantissa bits and minimum normal exponent min_exp.
__device__ inline float round_to_grid(float a, int mant_bits, int min_exp) {
  if (a == 0.0f) return 0.0f;
  int e = 0;
  frexpf(a, &e);
  const int lead = max(e - 1, min_exp);
  const float quantum = ldexpf(1.0f, lead - mant_bits);
  return rintf(a / quantum) * quantum;
}

__device__ inline float e4m3_round(float v) {
  return copysignf(round_to_grid(fminf(fabsf(v), 448.0f), 3, -6), v);
}

__device__ inline float e2m1_round(float v) {
  return copysignf(round_to_grid(fminf(fabsf(v), 6.0f), 1, 0), v);
}

__device__ inline float block_scale_pow2(float amax, float inv_format_max) {
  const uint32_t bits = __float_as_uint(amax * inv_format_max);
  const int exponent =
      static_cast<int>((bits >> 23) & 0xff) - 127 + ((bits & 0x7fffff) != 0 ? 1 : 0);
  return ldexpf(1.0f, exponent);
}

// Pair p of tail rotated by the angle whose cosine and sine are c and s (rope_pair's step).
__device__ inline void rope_rotate(float* tail, int p, float c, float s) {
  const float x0 = tail[2 * p], x1 = tail[2 * p + 1];
  tail[2 * p] = x0 * c - x1 * s;
  tail[2 * p + 1] = x0 * s + x1 * c;
}
// The angle of pair p at position pos: its sine and cosine (rope_pair's).
__device__ inline void rope_angle(const float* inv_freq, int p, int pos, float* sn, float* c) {
  detmath::sincosf(static_cast<float>(pos) * inv_freq[p], sn, c);
}
// Rotates pair p of the 64-dim tail at `tail` by the angle float(pos * inv_freq[p]); inverse
// negates sin.
__device__ inline void rope_pair(float* tail, const float* inv_freq, int p, int pos, bool inverse) {
  float c, sn;
  rope_angle(inv_freq, p, pos, &sn, &c);
  rope_rotate(tail, p, c, inverse ? -sn : sn);
}

// acc + a * b where the product is exact in double (a and b are floats or f16 values widened:
// at most 24 + 24 significand bits): one fma, which rounds exactly as adding the separately
// formed product would (the files are built with -fmad=false, so a written a * b + acc stays a
// multiply and an add: two FP64 instructions instead of one).
__device__ __forceinline__ double add_product(double acc, double a, double b) {
  return fma(a, b, acc);
}

// d += A (8 x 4, f64) x B (4 x 8, f64) on the FP64 tensor cores. Fragments (PTX ISA, mma.m8n8k4
// with .f64): lane l holds A[l / 4][l % 4], B[l % 4][l / 4], and D[l / 4][2 (l % 4) + i] in d[i].
// With exact products (two floats, or f16 by float) the result is the products summed in double,
// in the unit's order.
__device__ __forceinline__ void mma_f64(double (&d)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a), "d"(b));
#else
  __trap();  // built for sm_90 only; f64 mma needs sm_80
#endif
}

// d[i][j] += A_i x B_j for every m8 tile i and n8 tile j of a warp (mma_f64's fragments: a[i]
// and b[j] are this lane's values of A_i and B_j).
template <int kM, int kN>
__device__ __forceinline__ void mma_f64_tiles(double (&d)[kM][kN][2], const double (&a)[kM],
                                              const double (&b)[kN]) {
#pragma unroll
  for (int i = 0; i < kM; ++i) {
#pragma unroll
    for (int j = 0; j < kN; ++j) mma_f64(d[i][j], a[i], b[j]);
  }
}

// Block-wide sum of squares in double (the CPU sums squares in double); every thread gets it.
// `shared` needs blockDim.x / 32 doubles.
__device__ inline double block_sum_double(double v, double* shared) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = (blockDim.x + 31) / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < n_warps; ++w) total += shared[w];
  return total;
}

__device__ inline float block_max_float(float v, float* shared) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = (blockDim.x + 31) / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = shared[0];
  for (int w = 1; w < n_warps; ++w) m = fmaxf(m, shared[w]);
  return m;
}

__device__ inline float block_sum_float(float v, float* shared) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = (blockDim.x + 31) / 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < n_warps; ++w) s += shared[w];
  return s;
}

// Exact integer sum over aligned groups of kWidth lanes (kWidth a power of two <= 32).
template <int kWidth>
__device__ __forceinline__ int group_sum(int v) {
#pragma unroll
  for (int off = kWidth / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

}  // namespace ds4::backend::cuda
