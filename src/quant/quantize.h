// src/quant/quantize.h: float32 -> stored block formats, row by row, importance-weighted.
// Owns: the encoders for F32, F16, BF16, Q8_0, Q2_K, Q4_K and IQ2_XXS weights (plus Q8_K, which
//   applies the activation rule and ignores importance). Each chooses scales, mins and codes to
//   minimise the importance-weighted squared error of the decoded row (dequantize.h decodes).
// Does not own: activation quantisation for the dots (activation.h; fixed rules, no search),
//   the imatrix collection, or GGUF writing.
//
// Algorithms and measured errors: docs/quant.md. The encoders are deterministic: the same input
// gives the same bytes on every machine (scalar float code without FMA contraction; rows are
// independent, so a thread pool changes nothing).
#pragma once

#include <cstdint>

#include "ds4/status.h"
#include "gguf/types.h"
#include "quant/blocks.h"

namespace ds4::base {
class ThreadPool;
}

namespace ds4::quant {

// importance: nullptr (uniform) or one finite, non-negative weight per column (imatrix), applied
// to the squared error of that column. Rows are quantised independently and may run on `pool`.
// Errors: a type without an encoder (unimplemented); n_cols not a whole number of blocks, negative
// sizes, or a negative / non-finite importance value (invalid_argument).
Status quantize_rows(gguf::GgufType t, const float* src, void* dst, int64_t n_rows, int64_t n_cols,
                     const float* importance, base::ThreadPool* pool = nullptr);

// True when quantize_rows() supports t.
bool can_quantize(gguf::GgufType t);

// Per-row encoders (n values, a whole number of blocks; importance as above, n values or nullptr).
void quantize_row_f16(const float* x, uint16_t* y, int64_t n);
void quantize_row_bf16(const float* x, uint16_t* y, int64_t n);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n, const float* importance);
void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t n, const float* importance);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n, const float* importance);
void quantize_row_iq2_xxs(const float* x, BlockIQ2_XXS* y, int64_t n, const float* importance);

}  // namespace ds4::quant
