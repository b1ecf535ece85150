// src/backend/cuda/kernels/mma_s8.cuh: the int8 tensor-core product the kernels share,
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (fragment layouts: imma_formats.cuh), as an
// accumulating form and one with a zero accumulator. Device code only; sm_80 and later.
#pragma once

#include <cstdint>

namespace ds4::backend::cuda {

// d += A (16 x 32, s8) x B (32 x 8, s8) in int32.
__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                       uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // built for sm_90 only; int8 mma needs sm_80
#endif
}

// d = A x B with a zero accumulator: the zeros come as one zero register operand (which ptxas may
// read as RZ) instead of four moves into d before an accumulating product.
__device__ __forceinline__ void mma_s8_fresh(int (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %10, %10, %10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
#else
  __trap();
#endif
}

}  // namespace ds4::backend::cuda
