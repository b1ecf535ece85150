// src/backend/cuda/blas_products.cpp: cuBLAS products of F16 / F32 weights (blas_products.h).
#include "backend/cuda/blas_products.h"

#include <cuda_fp16.h>

#include "backend/cuda/check.h"
#include "backend/cuda/kernels/f16_split.cuh"
#include "backend/cuda/kernels/launch_limits.h"
#include "base/check.h"

#define DS4_CUBLAS_CHECK(expr)                                        \
  do {                                                                \
    const cublasStatus_t ds4_blas_st_ = (expr);                       \
    if (ds4_blas_st_ != CUBLAS_STATUS_SUCCESS)                        \
      ::ds4::base::check_failed(__FILE__, __LINE__, #expr, "%s",      \
                                cublasGetStatusString(ds4_blas_st_)); \
  } while (0)

namespace ds4::backend::cuda {

BlasProducts::BlasProducts() {
  DS4_CUBLAS_CHECK(cublasCreate(&handle_));
  // Reductions in FP32 throughout (no reduced-precision split-K reductions).
  DS4_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
}

BlasProducts::~BlasProducts() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

bool BlasProducts::applies(const Weight& w, const int32_t* experts, const int32_t* rows, int groups,
                           int64_t n_slots, const float* x) {
  const bool float_type = w.type == gguf::GgufType::kF16 || w.type == gguf::GgufType::kF32;
  return float_type && w.layout == 0 && w.ne[2] == 1 && experts == nullptr && rows == nullptr &&
         groups == 1 && n_slots >= kMinRows && w.ne[0] % 8 == 0 && aligned16(x);
}

int64_t BlasProducts::scratch_bytes(const Weight& w, int64_t n_rows) const {
  if (w.type != gguf::GgufType::kF16) return 0;
  return 2 * n_rows * w.ne[0] * static_cast<int64_t>(sizeof(__half));
}

void BlasProducts::run(const Weight& w, const float* x, int64_t n_rows, float* y, void* scratch,
                       cudaStream_t s) {
  const int64_t cols = w.ne[0], out = w.ne[1];
  DS4_CHECK_MSG(cols <= INT32_MAX && out <= INT32_MAX && n_rows <= INT32_MAX,
                "blas product of %lld x %lld by %lld rows", static_cast<long long>(out),
                static_cast<long long>(cols), static_cast<long long>(n_rows));
  DS4_CUBLAS_CHECK(cublasSetStream(handle_, s));
  const int m = static_cast<int>(out), n = static_cast<int>(n_rows), k = static_cast<int>(cols);
  // Column-major view: W is k x m (lda k), x is k x n (ldb k), y is m x n (ldc m); y = W^T x.
  const float one = 1.0f, zero = 0.0f;
  if (w.type == gguf::GgufType::kF32) {
    DS4_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w.data,
                                  CUDA_R_32F, k, x, CUDA_R_32F, k, &zero, y, CUDA_R_32F, m,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  DS4_CHECK(w.type == gguf::GgufType::kF16 && scratch != nullptr);
  auto* hi = static_cast<__half*>(scratch);
  __half* lo = hi + n_rows * cols;
  launch_f16_split(x, n_rows * cols, hi, lo, s);
  DS4_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w.data,
                                CUDA_R_16F, k, hi, CUDA_R_16F, k, &zero, y, CUDA_R_32F, m,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  DS4_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w.data,
                                CUDA_R_16F, k, lo, CUDA_R_16F, k, &one, y, CUDA_R_32F, m,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ds4::backend::cuda
