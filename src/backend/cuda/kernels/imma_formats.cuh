// src/backend/cuda/kernels/imma_formats.cuh: the host+device pieces of the tensor-core planar
// kernel (matmul_imma.cu): how a weight block of the planar layout becomes int8 operands whose
// plain dot products with the activation codes are the reference's exact integer block sums, the
// Q2_K min sums, and where each lane's mma.sync fragments sit in the kernel's shared-memory tiles.
//   Q8_0:    the codes as they are (one K = 32 product per block);
//   Q2_K:    each 2-bit code times its sub-block's 4-bit scale (at most 45, so int8), so the sum
//            of the block's products is isum; summs = sum of bsums times the 4-bit mins, apart;
//   IQ2_XXS: the signed codebook magnitudes (at most 43); the odd group scale 2s + 1 (up to 31)
//            would overflow int8, so it stays apart and multiplies each group's int32 sum.
// The float terms come from planar_formats.cuh (Fmt*::from_sums), so both planar kernels form them
// with the same expressions. imma_formats_test checks these functions on the host against the CPU
// reference, and the fragment addressing against the PTX ISA's m16n8k32 layouts.
// Owns: the int8 decodes, the min sums, the fragment addressing. Does not own: the planar layout
// (matmul_planar.cuh) or the kernel's tiling (matmul_imma.cu).
#pragma once

#include <bit>
#include <cstdint>

#include "backend/cuda/kernels/planar_formats.cuh"

namespace ds4::backend::cuda::imma {

// c + a.h0 * b.byte0 + a.h1 * b.byte1 (lo) or c + a.h0 * b.byte2 + a.h1 * b.byte3 (hi): two signed
// 16-bit values of a against two signed bytes of b (the device's dp2a).
DS4_PF_HD inline int dp2a_lo(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp2a_lo(a, b, c);
#else
  const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  return c + static_cast<int16_t>(ua & 0xffffu) * static_cast<int8_t>(ub & 0xffu) +
         static_cast<int16_t>(ua >> 16) * static_cast<int8_t>((ub >> 8) & 0xffu);
#endif
}
DS4_PF_HD inline int dp2a_hi(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp2a_hi(a, b, c);
#else
  const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  return c + static_cast<int16_t>(ua & 0xffffu) * static_cast<int8_t>((ub >> 16) & 0xffu) +
         static_cast<int16_t>(ua >> 16) * static_cast<int8_t>(ub >> 24);
#endif
}

// ---- int8 decodes: out[i] holds elements 4 i .. 4 i + 3 of the decoded range, byte j element
// 4 i + j (the order of the activation codes) ----

// The sign pattern of a 7-bit IQ2_XXS sign index without the table (quant kIq2Signs): the index,
// and on top the bit that makes the number of set bits even.
DS4_PF_HD inline uint32_t iq2_sign_bits(uint32_t idx) {
#if defined(__CUDA_ARCH__)
  return idx | ((static_cast<uint32_t>(__popc(idx)) & 1u) << 7);
#else
  return idx | ((static_cast<uint32_t>(std::popcount(idx)) & 1u) << 7);
#endif
}

// IQ2_XXS, half h of a block (groups 4 h .. 4 h + 3, elements 128 h ..): in = body words
// 8 h .. 8 h + 7 (per group a word of four codebook indices, then a word of four 7-bit sign
// indices with the 4-bit scale s on top). Returns the four group multipliers 2 s + 1, group
// 4 h + i in byte i. grid: the codebook (quant kIq2xxsGrid); the sign patterns come from
// iq2_sign_bits, not the sign table.
DS4_PF_HD inline uint32_t iq2xxs_decode_half(const uint32_t in[8], const uint64_t* grid,
                                             uint32_t out[32]) {
  uint32_t scales = 0;
  DS4_PF_UNROLL
  for (int g = 0; g < 4; ++g) {
    const uint32_t a = in[2 * g], s = in[2 * g + 1];
    DS4_PF_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint64_t v = grid[(a >> (8 * k)) & 255u];
      const uint32_t idx = (s >> (7 * k)) & 127u;
      const uint32_t signs = iq2_sign_bits(idx);
      out[8 * g + 2 * k] =
          static_cast<uint32_t>(planar::apply_signs(static_cast<uint32_t>(v), signs & 15u));
      out[8 * g + 2 * k + 1] =
          static_cast<uint32_t>(planar::apply_signs(static_cast<uint32_t>(v >> 32), signs >> 4));
    }
    scales |= (2u * (s >> 28) + 1u) << (8 * g);
  }
  return scales;
}

// Q2_K, half h of a block (sub-blocks 8 h .. 8 h + 7, elements 128 h ..): q = the half's 32 code
// bytes (qs bytes 32 h ..) as 8 words, sc = its 8 scale bytes (scales bytes 8 h ..) as 2 words.
// Element 128 h + 4 m + j is bits 2 (m / 8) of code byte 4 (m % 8) + j (quant::q2_k_position),
// times the low nibble of scale byte m / 4; the products (<= 45) cannot carry into the next byte.
// mins[i] = the high nibbles (4-bit mins) of scale word i, one per byte.
DS4_PF_HD inline void q2k_decode_half(const uint32_t q[8], const uint32_t sc[2], uint32_t out[32],
                                      uint32_t mins[2]) {
  DS4_PF_UNROLL
  for (int m = 0; m < 32; ++m) {
    const uint32_t codes = (q[m % 8] >> (2 * (m / 8))) & 0x03030303u;
    const uint32_t scale = (sc[m / 16] >> (8 * ((m / 4) % 4))) & 15u;
    out[m] = codes * scale;
  }
  mins[0] = (sc[0] >> 4) & 0x0f0f0f0fu;
  mins[1] = (sc[1] >> 4) & 0x0f0f0f0fu;
}

// Q2_K summs = sum over the 16 sub-blocks of bsums[s] * min[s]: mins as 16 bytes (4 words, from
// q2k_decode_half), bsums as the activation block's 16 int16 (8 words). Exact in any order.
DS4_PF_HD inline int q2k_summs(const uint32_t mins[4], const uint32_t bsums[8]) {
  int s = 0;
  DS4_PF_UNROLL
  for (int i = 0; i < 4; ++i) {
    s = dp2a_lo(static_cast<int>(bsums[2 * i]), static_cast<int>(mins[i]), s);
    s = dp2a_hi(static_cast<int>(bsums[2 * i + 1]), static_cast<int>(mins[i]), s);
  }
  return s;
}

// ---- mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 fragments (PTX ISA, "Matrix Fragments for
// mma.m16n8k32"), with g = lane / 4 and t = lane % 4:
//   A (16 x 32 s8, row-major): register r (four s8) = row g + 8 (r % 2), columns
//                              16 (r / 2) + 4 t .. + 3;
//   B (32 x 8 s8, column-major): register r = column g, rows 16 r + 4 t .. + 3;
//   C, D (16 x 8 s32): element i = row g + 8 (i / 2), column 2 t + i % 2.
// The kernel's tiles keep each A row and each B column (one slot's codes) as consecutive bytes,
// K innermost, `pitch` 32-bit words apart, so every fragment register is one aligned word. ----

// Words per staged row of the kernel's tiles: 256 int8 of K plus 16 bytes, so that the 8 rows x
// 4 words of a fragment load fall in 32 different banks (an odd number of 16-byte units).
inline constexpr int kTilePitch = 256 / 4 + 4;

// Word offset of A register r (0..3) of `lane` from the tile's (row 0, K 0) word.
DS4_PF_HD constexpr int frag_a_word(int lane, int r, int pitch) {
  return (lane / 4 + 8 * (r % 2)) * pitch + 4 * (r / 2) + lane % 4;
}
// Word offset of B register r (0..1) of `lane` from the tile's (slot 0, K 0) word.
DS4_PF_HD constexpr int frag_b_word(int lane, int r, int pitch) {
  return (lane / 4) * pitch + 4 * r + lane % 4;
}
// Row (weight row in the tile) and column (slot in the tile) of C element i (0..3) of `lane`.
DS4_PF_HD constexpr int frag_c_row(int lane, int i) { return lane / 4 + 8 * (i / 2); }
DS4_PF_HD constexpr int frag_c_col(int lane, int i) { return 2 * (lane % 4) + i % 2; }

}  // namespace ds4::backend::cuda::imma
