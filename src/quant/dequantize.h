// src/quant/dequantize.h: scalar dequantizers, the numerical definition of every stored format.
// Owns: block -> float32 decoding for F32, F16, BF16, Q8_0, Q8_K, Q2_K, Q4_K and IQ2_XXS, written
//   as plain loops that follow model.md §3.2 term by term. Optimised kernels are tested against
//   these.
// Does not own: block layouts (blocks.h), encoding (quantize.h), dot products (dot.h).
#pragma once

#include <cstdint>

#include "ds4/status.h"
#include "gguf/types.h"
#include "quant/blocks.h"

namespace ds4::quant {

// Per-format row decoders. n counts values and must be a whole number of blocks (a bug otherwise).
void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n);
void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n);
void dequantize_row_q8_k(const BlockQ8_K* src, float* dst, int64_t n);
void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, int64_t n);
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n);
void dequantize_row_iq2_xxs(const BlockIQ2_XXS* src, float* dst, int64_t n);

// Decodes n values of type t stored at src. Errors: n negative or not a whole number of blocks
// (invalid_argument); a type without a decoder here (unimplemented).
Status dequantize(gguf::GgufType t, const void* src, float* dst, int64_t n);

// True when dequantize() supports t.
bool can_dequantize(gguf::GgufType t);

}  // namespace ds4::quant
