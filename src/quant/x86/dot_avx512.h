// src/quant/x86/dot_avx512.h: entry point of the AVX-512 dot kernels.
// Owns: the declaration only; dot_avx512.cpp is the one file built with the AVX-512 flags
//   (F, BW, VL, VNNI, VBMI, BITALG; see src/quant/CMakeLists.txt).
// Does not own: the CPU feature check (dot_select.cpp, baseline ISA) -- calling this table's
//   kernels on a CPU without those extensions (or without OS support for ZMM state) is undefined.
#pragma once

#include "quant/dot.h"

namespace ds4::quant::x86 {

// "avx512": Q2_K, Q4_K and IQ2_XXS in AVX-512; Q8_0, F16 and F32 are the AVX2 kernels.
const DotKernels& avx512_kernels_unchecked();

}  // namespace ds4::quant::x86
