// src/quant/lowp_sim.h: the low-precision simulations that are part of DeepSeek V4's trained
// function (model.md §3.4, semantics-diff.md §C.2 item 2): FP8 (e4m3) rounding of cached KV rows
// and Walsh-Hadamard + FP4 (e2m1) rounding of indexer queries and keys. The values stay float32;
// only their precision is reduced, exactly as the official kernels do. Owns: the e4m3/e2m1
// round-to-nearest-even grids, the power-of-two block scales (from the float exponent bits of
// amax/448 resp. amax/6), and the natural-order Hadamard transform. Does not own: where the model
// applies them (model/ and the backends) or the switch that turns them off to match Hugging Face
// (an engine option).
#pragma once

#include <cstdint>
#include <span>

namespace ds4::quant {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE2m1Max = 6.0f;

// Nearest e4m3 (FN: finite-only, max 448) value to `v`, ties to the even code; |v| > 448 clamps.
// The sign is kept, including for zero.
float e4m3_round(float v);
// Nearest e2m1 value ({0, .5, 1, 1.5, 2, 3, 4, 6} with sign) to `v`, ties to the even code;
// |v| > 6 clamps.
float e2m1_round(float v);

// Power-of-two scale of a block: 2^(e - 127 + (m != 0)) where e, m are the exponent and mantissa
// bits of amax * (float)(1 / format_max) -- i.e. 2^ceil(log2(amax / format_max)) computed from
// float bits, as the official kernels do. `amax` must be positive and finite.
float block_scale_pow2(float amax, float inv_format_max);

// FP8 KV simulation of one 512-wide KV row: dims [0, 448) in 7 blocks of 64, each with
// amax = max(max|x|, 1e-4); the 64 RoPE dims [448, 512) are untouched.
inline constexpr int kKvRowDims = 512;
inline constexpr int kKvNopeDims = 448;
void fp8_kv_simulate(std::span<float> row);

// Indexer QAT of one 128-wide vector: Walsh-Hadamard transform in natural (Sylvester) order, times
// 1/sqrt(128), then FP4 simulation in 4 blocks of 32 with amax = max(max|x|, 6 * 2^-126).
inline constexpr int kIndexerDims = 128;
void hadamard128(std::span<float> x);  // unnormalised butterflies, then the 1/sqrt(128) factor
void indexer_fp4_simulate(std::span<float> x);

}  // namespace ds4::quant
