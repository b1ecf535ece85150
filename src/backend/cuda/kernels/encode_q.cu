// src/backend/cuda/kernels/encode_q.cu: the activation encoders (contract in encode_q.cuh),
// bit-identical to quant/activation.cpp: one warp per block, the block's largest magnitude by a
// warp reduction (order-free), each value rounded on its own. Compiled without fast-math and with
// -fmad=false (src/backend/CMakeLists.txt), as matmul_q.cu.
#include <climits>
#include <cstdint>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/encode_q.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "base/check.h"
#include "quant/blocks.h"

namespace ds4::backend::cuda {
namespace {

using gguf::GgufType;
using quant::ActQ8_0;
using quant::BlockQ8_K;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;
constexpr int kWarpsPerCta = 8;
constexpr int kCtaThreads = kWarpSize * kWarpsPerCta;
constexpr int kQ8_0Elems = quant::kQ8_0BlockElems;
constexpr int kSuperElems = quant::kSuperBlockElems;

// std::lrintf followed by activation.cpp's clamp_to_i8, as on x86-64: round to nearest, ties to
// even; NaN and values outside long's range give LONG_MIN (cvtss2si's "integer indefinite"),
// which clamps to -128. Within +-2^63, __float2int_rn saturates at int's range, which clamps the
// same way as the long result.
__device__ __forceinline__ int8_t round_clamp_i8(float v) {
  if (!(fabsf(v) < 9223372036854775808.0f)) return -128;
  const int r = __float2int_rn(v);
  return static_cast<int8_t>(r < -128 ? -128 : (r > 127 ? 127 : r));
}

// Encoder grids: warp w of CTA (x, y) encodes block 8 x + w of row y (rows past 65,535 by a
// stride of gridDim.y), so no thread divides a 64-bit block index (a subroutine of ~100
// instructions on the GPU: with a warp per block, the Q8_0 encoder spent most of its time there).
dim3 encode_grid(int64_t n_rows, int64_t nb) {
  return dim3(static_cast<unsigned>((nb + kWarpsPerCta - 1) / kWarpsPerCta), grid_y_for(n_rows));
}
__device__ __forceinline__ int encode_block() {
  return static_cast<int>(blockIdx.x) * kWarpsPerCta + static_cast<int>(threadIdx.x / kWarpSize);
}

// Where the encoders' values come from: rows of floats (x, stride), or the SwiGLU of gate and up
// rows (cols values each, times the row's routing weight when weights is set), formed as
// launch_swiglu forms them (device_math.cuh, swiglu_value) without storing them.
struct FloatRows {
  const float* x;
  int64_t stride;
  __device__ float operator()(int64_t r, int64_t i) const { return x[r * stride + i]; }
};
struct SwigluRows {
  const float* g;
  const float* u;
  const float* weights;
  int64_t cols;
  __device__ float operator()(int64_t r, int64_t i) const {
    const int64_t k = r * cols + i;
    return swiglu_value(g[k], u[k], weights != nullptr ? weights + r : nullptr);
  }
};

// One warp per 32-value block; lane i encodes value i (quantize_act_q8_0).
template <class Src>
__global__ void __launch_bounds__(kCtaThreads)
    encode_q8_0_kernel(Src src, int64_t n_rows, int nb, ActQ8_0* out) {
  kernel_begin();
  const int b = encode_block();
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  if (b >= nb) return;  // uniform per warp
  for (int64_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
    const float v = src(r, int64_t{b} * kQ8_0Elems + lane);
    // fmax ignores NaN, as std::fmax does; the maximum does not depend on the order.
    float amax = fmaxf(0.0f, fabsf(v));
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off >>= 1)
      amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, off));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ActQ8_0& o = out[r * nb + b];
    o.qs[lane] = round_clamp_i8(v * id);
    if (lane == 0) o.d = d;
  }
}

// quantize_act_q8_k of one block (values base .. base + 255 of row r) into o, on a warp (lane =
// the lane).
template <class Src>
__device__ void encode_q8_k_block(const Src& src, int64_t r, int64_t base, int lane, BlockQ8_K& o) {
  // First element of largest magnitude: per lane in index order with a strict >, then across
  // lanes by (larger magnitude, smaller index), a total order, so every lane ends with the same
  // winner. NaN never compares greater, so it is skipped as on the CPU.
  float v[8];
  float amax = 0.0f;
  float maxv = 0.0f;
  int idx = kSuperElems;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    v[k] = src(r, base + lane + kWarpSize * k);
    const float ax = fabsf(v[k]);
    if (ax > amax) {
      amax = ax;
      maxv = v[k];
      idx = lane + kWarpSize * k;
    }
  }
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off >>= 1) {
    const float o_amax = __shfl_xor_sync(kFullMask, amax, off);
    const float o_maxv = __shfl_xor_sync(kFullMask, maxv, off);
    const int o_idx = __shfl_xor_sync(kFullMask, idx, off);
    if (o_amax > amax || (o_amax == amax && o_idx < idx)) {
      amax = o_amax;
      maxv = o_maxv;
      idx = o_idx;
    }
  }

  if (amax == 0.0f) {  // uniform: every lane holds the same amax
#pragma unroll
    for (int k = 0; k < 8; ++k) o.qs[lane + kWarpSize * k] = 0;
    if (lane < 16) o.bsums[lane] = 0;
    if (lane == 0) o.d = 0.0f;
    return;
  }
  const float iscale = -127.0f / maxv;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int8_t q = round_clamp_i8(iscale * v[k]);
    o.qs[lane + kWarpSize * k] = q;
    // Values 32k .. 32k+15 (lanes 0-15) form bsums group 2k, lanes 16-31 group 2k+1.
    const int s = group_sum<16>(q);
    if (lane % 16 == 0) o.bsums[2 * k + lane / 16] = static_cast<int16_t>(s);
  }
  if (lane == 0) o.d = 1.0f / iscale;
}

// One warp per 256-value block; lane i holds values i + 32k, k < 8 (quantize_act_q8_k).
template <class Src>
__global__ void __launch_bounds__(kCtaThreads)
    encode_q8_k_kernel(Src src, int64_t n_rows, int nb, BlockQ8_K* out) {
  kernel_begin();
  const int b = encode_block();
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  if (b >= nb) return;  // uniform per warp
  for (int64_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
    encode_q8_k_block(src, r, int64_t{b} * kSuperElems, lane, out[r * nb + b]);
  }
}

// The block encoders of weight type t (Q8_0 or a Q8_K type) over n_rows rows of cols values.
template <class Src>
void launch_encode_blocks(GgufType t, Src src, int64_t n_rows, int64_t cols, void* out,
                          cudaStream_t stream) {
  if (t == GgufType::kQ8_0) {
    const int64_t nb = cols / kQ8_0Elems;
    DS4_CHECK(nb <= INT_MAX);
    launch(encode_q8_0_kernel<Src>, encode_grid(n_rows, nb), kCtaThreads, 0, stream, src, n_rows,
           static_cast<int>(nb), static_cast<ActQ8_0*>(out));
  } else {  // Q2_K, Q4_K, IQ2_XXS: Q8_K activations
    const int64_t nb = cols / kSuperElems;
    DS4_CHECK(nb <= INT_MAX);
    launch(encode_q8_k_kernel<Src>, encode_grid(n_rows, nb), kCtaThreads, 0, stream, src, n_rows,
           static_cast<int>(nb), static_cast<BlockQ8_K*>(out));
  }
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

int64_t encoded_row_bytes(gguf::GgufType t, int64_t cols) {
  DS4_CHECK_MSG(cols >= 0, "cols=%lld", static_cast<long long>(cols));
  switch (t) {
    case GgufType::kF32:
    case GgufType::kF16: return cols * static_cast<int64_t>(sizeof(float));
    case GgufType::kQ8_0:
      DS4_CHECK_MSG(cols % kQ8_0Elems == 0, "Q8_0 row of %lld values",
                    static_cast<long long>(cols));
      return cols / kQ8_0Elems * static_cast<int64_t>(sizeof(ActQ8_0));
    case GgufType::kQ2_K:
    case GgufType::kQ4_K:
    case GgufType::kIQ2_XXS:
      DS4_CHECK_MSG(cols % kSuperElems == 0, "%.*s row of %lld values",
                    static_cast<int>(gguf::to_string(t).size()), gguf::to_string(t).data(),
                    static_cast<long long>(cols));
      return cols / kSuperElems * static_cast<int64_t>(sizeof(BlockQ8_K));
    default: break;
  }
  DS4_CHECK_MSG(false, "matmul_q: unsupported weight type %.*s",
                static_cast<int>(gguf::to_string(t).size()), gguf::to_string(t).data());
  return 0;
}

void launch_encode_rows(gguf::GgufType t, const float* x, int64_t n_rows, int64_t cols,
                        int64_t stride, void* out, cudaStream_t stream) {
  DS4_CHECK_MSG(n_rows >= 0 && (n_rows <= 1 || stride >= cols),
                "encode: n_rows=%lld cols=%lld stride=%lld", static_cast<long long>(n_rows),
                static_cast<long long>(cols), static_cast<long long>(stride));
  const int64_t row_bytes = encoded_row_bytes(t, cols);  // checks t and cols
  if (n_rows == 0 || cols == 0) return;
  DS4_CHECK_MSG(x != nullptr && out != nullptr && aligned_to(x, 4) && aligned_to(out, 4),
                "encode: null or misaligned buffer");
  if (t == GgufType::kF32 || t == GgufType::kF16) {
    const int64_t src_pitch =
        n_rows == 1 ? row_bytes : stride * static_cast<int64_t>(sizeof(float));
    DS4_CUDA_CHECK(cudaMemcpy2DAsync(out, static_cast<size_t>(row_bytes), x,
                                     static_cast<size_t>(src_pitch), static_cast<size_t>(row_bytes),
                                     static_cast<size_t>(n_rows), cudaMemcpyDeviceToDevice,
                                     stream));
    return;
  }
  launch_encode_blocks(t, FloatRows{x, stride}, n_rows, cols, out, stream);
}

void launch_encode_swiglu_rows(gguf::GgufType t, const float* g, const float* u,
                               const float* weights, int64_t n_rows, int64_t cols, void* out,
                               cudaStream_t stream) {
  DS4_CHECK_MSG(t != GgufType::kF16 && t != GgufType::kF32 && n_rows >= 0,
                "encode swiglu: a block type and rows needed");
  encoded_row_bytes(t, cols);  // checks t and cols
  if (n_rows == 0 || cols == 0) return;
  DS4_CHECK_MSG(g != nullptr && u != nullptr && out != nullptr && aligned_to(out, 4),
                "encode swiglu: null or misaligned buffer");
  launch_encode_blocks(t, SwigluRows{g, u, weights, cols}, n_rows, cols, out, stream);
}

}  // namespace ds4::backend::cuda
