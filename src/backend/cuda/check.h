// src/backend/cuda/check.h: CUDA call checking. A failing CUDA call is a broken invariant (bad
// launch, device lost): it aborts with the call, file, line and CUDA's message.
#pragma once

#include <cuda_runtime.h>

#include "base/check.h"

#define DS4_CUDA_CHECK(expr)                                        \
  do {                                                              \
    const cudaError_t ds4_cuda_err_ = (expr);                       \
    if (ds4_cuda_err_ != cudaSuccess)                               \
      ::ds4::base::check_failed(__FILE__, __LINE__, #expr, "%s",    \
                                cudaGetErrorString(ds4_cuda_err_)); \
  } while (0)

// After a launch: the launch itself must have been accepted.
#define DS4_CUDA_CHECK_LAUNCH() DS4_CUDA_CHECK(cudaGetLastError())
