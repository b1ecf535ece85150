// src/backend/cpu/axpy.cpp: the scalar fused axpy and the kernel choice.
#include "backend/cpu/axpy.h"

#include <cmath>

#include "base/cpu_features.h"

namespace ds4::backend::cpu {

#if defined(DS4_BACKEND_HAVE_AVX2)
void axpy_fma_avx2_impl(float a, const float* x, float* y, int n);
#endif

void axpy_fma_ref(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

AxpyFn axpy_fma_avx2() {
#if defined(DS4_BACKEND_HAVE_AVX2)
  const auto& f = base::cpu_features();
  return f.avx2 && f.fma ? &axpy_fma_avx2_impl : nullptr;
#else
  return nullptr;
#endif
}

AxpyFn best_axpy_fma() {
  static const AxpyFn kAvx2 = axpy_fma_avx2();
  return kAvx2 != nullptr ? kAvx2 : &axpy_fma_ref;
}

}  // namespace ds4::backend::cpu
