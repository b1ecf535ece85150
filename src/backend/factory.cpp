// src/backend/factory.cpp: make_backend.
#include "backend/factory.h"

#include "backend/cpu/cpu_backend.h"
#if defined(DS4_WITH_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace ds4::backend {

Result<std::unique_ptr<Backend>> make_backend(BackendKind kind, const BackendOptions& options) {
  switch (kind) {
    case BackendKind::kCpu: return std::unique_ptr<Backend>(cpu::make_cpu_backend(options));
    case BackendKind::kCuda: {
#if defined(DS4_WITH_CUDA)
      Backend* b = cuda::make_cuda_backend(options);
      if (b == nullptr)
        return Status::unavailable("no CUDA device is available; use --backend cpu");
      return std::unique_ptr<Backend>(b);
#else
      return Status::unavailable(
          "this build has no CUDA backend (nvcc was not found); use --backend cpu");
#endif
    }
  }
  return Status::invalid_argument("unknown backend kind");
}

}  // namespace ds4::backend
