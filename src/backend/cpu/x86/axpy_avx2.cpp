// src/backend/cpu/x86/axpy_avx2.cpp: AVX2+FMA fused axpy, 8 elements per instruction (each lane
// one fused multiply-add, as std::fma), the tail element by element with the scalar FMA
// instruction (not std::fma: an inline function of a shared header must not be compiled for this
// ISA, see quant/x86/dot_avx2.cpp). Built with -mavx2 -mfma.
#include <immintrin.h>

#include "backend/cpu/axpy.h"

namespace ds4::backend::cpu {

void axpy_fma_avx2_impl(float a, const float* x, float* y, int n) {
  const __m256 av = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) {
    y[i] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(x[i]), _mm_set_ss(y[i])));
  }
}

}  // namespace ds4::backend::cpu
