// src/quant/x86/dot_avx2.h: entry point of the AVX2+FMA+F16C dot kernels.
// Owns: the declaration only; dot_avx2.cpp is the one file built with -mavx2 -mfma -mf16c.
// Does not own: the CPU feature check (dot_select.cpp, baseline ISA) -- calling this table's
//   kernels on a CPU without AVX2/FMA/F16C is undefined.
#pragma once

#include "quant/dot.h"

namespace ds4::quant::x86 {

const DotKernels& avx2_kernels_unchecked();

}  // namespace ds4::quant::x86
