// src/quant/activation.h: quantisation of float activations for the integer dot products.
// Owns: the bit-exact Q8_0-activation and Q8_K encoders of model.md §3.3 (round half to even via
//   lrintf, first-occurrence maximum, bsums).
// Does not own: weight quantisation (quantize.h), which optimises error instead of following a
//   fixed rule.
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace ds4::quant {

// Per block of 32: amax = max|x|, d = amax / 127 (float32, not rounded to f16),
// q = clamp(lrintf(x / d), -128, 127) computed as x * (1/d); d = 0 gives q = 0.
// n must be a multiple of 32. The result's qs lie in [-127, 127] (the fast kernels rely on it).
void quantize_act_q8_0(const float* x, ActQ8_0* out, int64_t n);

// Per block of 256: the element of largest |x| (first one on ties) maps to -127:
// iscale = -127 / max, q = clamp(lrintf(iscale * x), -128, 127), d = 1 / iscale; an all-zero
// block gives d = 0, q = 0. bsums[g] = sum of q[16g..16g+15]. n must be a multiple of 256.
void quantize_act_q8_k(const float* x, BlockQ8_K* out, int64_t n);

}  // namespace ds4::quant
