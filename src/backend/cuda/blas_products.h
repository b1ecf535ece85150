// src/backend/cuda/blas_products.h: products of F16 and F32 weights with many activation rows
// (prefill batches) on cuBLAS's GEMMs, for the compressors, the indexer, the router and the HC
// mixing weights (docs/dependencies.md says why cuBLAS: these are plain dense products, where its
// tensor-core kernels run near the chip's rate and a hand-written kernel gained nothing to show).
// F32 weights: one FP32 GEMM (CUBLAS_COMPUTE_32F, no TF32). F16 weights: the float rows split into
// F16 hi + lo parts (kernels/f16_split.cuh), W . x = W . hi + W . lo as two F16 tensor-core GEMMs
// with FP32 accumulation (~2^-22 relative input error; the hi part alone, ~2^-12, prefilled only
// marginally faster on the H200 and was removed). Not bit-identical to the CPU's dots; within the
// CUDA backend's tolerances (tests/model/cuda_gates_test.cpp). Owns: the cuBLAS handle.
// Does not own: the weights, activations or the scratch it is handed.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"

namespace ds4::backend::cuda {

class BlasProducts {
 public:
  // From this many activation rows a product goes to cuBLAS (below, the decode kernels).
  static constexpr int64_t kMinRows = 16;

  BlasProducts();
  ~BlasProducts();
  BlasProducts(const BlasProducts&) = delete;
  BlasProducts& operator=(const BlasProducts&) = delete;

  // Whether y = W x goes to cuBLAS: F16 / F32 weights in the GGUF layout, one matrix, one row
  // group, the slots the activation rows in order, at least kMinRows of them, x 16-byte aligned.
  static bool applies(const Weight& w, const int32_t* experts, const int32_t* rows, int groups,
                      int64_t n_slots, const float* x);
  // Device scratch bytes run() needs.
  int64_t scratch_bytes(const Weight& w, int64_t n_rows) const;
  // y[r * w.ne[1] + o] = dot(row o of W, x[r * w.ne[0] ..]) for r < n_rows, on stream s.
  void run(const Weight& w, const float* x, int64_t n_rows, float* y, void* scratch,
           cudaStream_t s);

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace ds4::backend::cuda
