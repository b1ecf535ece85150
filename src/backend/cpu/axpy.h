// src/backend/cpu/axpy.h: y[i] = fma(a, x[i], y[i]) along a row, the step of the attention
// weighted sum (model.md §4.9: a head's output adds weight x cached row, row after row). One
// rounding per element, so every implementation (and the CUDA backend's fmaf) gives the same bits.
// Owns: the scalar definition (std::fma) and an AVX2+FMA version, chosen once per process.
#pragma once

namespace ds4::backend::cpu {

using AxpyFn = void (*)(float a, const float* x, float* y, int n);

void axpy_fma_ref(float a, const float* x, float* y, int n);
// nullptr when this build or CPU lacks AVX2+FMA.
AxpyFn axpy_fma_avx2();
// The fastest available (all give the same results).
AxpyFn best_axpy_fma();

}  // namespace ds4::backend::cpu
