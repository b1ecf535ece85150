// src/backend/cuda/kernels/f16_split.cuh: float rows -> two F16 rows whose sum is the float value
// to ~2^-22 relative (hi = f16(x), lo = f16(x - hi)), the inputs of the cuBLAS F16 products
// (blas_products.h): W . x = W . hi + W . lo, each product on the F16 tensor cores with FP32
// accumulation. Values must be finite and within F16 range (|x| < 65504): the products' inputs
// are normalised rows (RMSNorm outputs times their weights), far below it.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace ds4::backend::cuda {

// hi[i] = f16(x[i]); lo[i] = f16(x[i] - hi[i]); i < n (a multiple of 4; x 16-byte aligned).
void launch_f16_split(const float* x, int64_t n, __half* hi, __half* lo, cudaStream_t s);

}  // namespace ds4::backend::cuda
