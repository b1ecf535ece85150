// src/backend/cuda/kernels/f16_split.cu: float -> F16 hi / lo split (contract in f16_split.cuh).
#include <climits>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/device_math.cuh"
#include "backend/cuda/kernels/f16_split.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "base/check.h"

namespace ds4::backend::cuda {
namespace {

constexpr int kThreads = 256;

// Four values per thread: one 16-byte load, two 8-byte stores per output.
__global__ void f16_split_kernel(const float4* x, int64_t n4, __half2* hi, __half2* lo) {
  kernel_begin();
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  __half2 h[2], l[2];
  f16_split4(x[i], h, l);
  hi[2 * i] = h[0];
  hi[2 * i + 1] = h[1];
  lo[2 * i] = l[0];
  lo[2 * i + 1] = l[1];
}

}  // namespace

void launch_f16_split(const float* x, int64_t n, __half* hi, __half* lo, cudaStream_t s) {
  DS4_CHECK_MSG(n % 4 == 0, "f16 split: %lld values, not a multiple of 4",
                static_cast<long long>(n));
  if (n == 0) return;
  DS4_CHECK(hi != nullptr && lo != nullptr);
  const int64_t n4 = n / 4;
  const int64_t ctas = (n4 + kThreads - 1) / kThreads;
  DS4_CHECK_MSG(ctas <= INT_MAX, "f16 split: %lld values in one launch", static_cast<long long>(n));
  launch(f16_split_kernel, static_cast<unsigned>(ctas), kThreads, 0, s,
         reinterpret_cast<const float4*>(x), n4, reinterpret_cast<__half2*>(hi),
         reinterpret_cast<__half2*>(lo));
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::backend::cuda
