// src/quant/x86/dot_avx2.cpp: AVX2 dot kernels (built with -mavx2 -mfma -mf16c, see CMakeLists).
// Owns: vectorised versions of the dot_ref.cpp kernels.
// Does not own: their definition (dot_ref.cpp) or the decision to run them (dot_select.cpp).
//
// How the quantised kernels stay bit-identical to the reference: every integer sum inside a block
// is exact whatever the order, so only the float steps matter. Those are formed per block with the
// same IEEE operations as the reference (an exact f16 decode, one float multiply per factor, one
// int->float conversion), possibly eight blocks at a time in one vector, and then added to the
// accumulator one block at a time, in block order. The only FMA is Q8_0's, where the reference
// has one too (std::fma there, the scalar instruction here: the same correctly rounded result).
//
// Linkage hygiene: this translation unit is built for a newer ISA than the rest of the program, so
// it calls no inline function from a shared header (f16_to_f32, q4_k_scale_min, std::array, ...).
// The linker could otherwise keep this file's AVX2 copy of such a function for every caller.
// Everything here has internal linkage except avx2_kernels_unchecked().
//
// Range precondition: activation qs in [-127, 127] (see dot.h). _mm256_sign_epi8 cannot negate
// -128, and _mm256_maddubs_epi16 saturates int16 pair sums; with |q8| <= 127 neither happens
// (largest pair: 2 * 128 * 127 = 32512 for Q8_0 weights of -128).
#include "quant/x86/dot_avx2.h"

#include <immintrin.h>

#include <cstring>

#include "quant/iq2_tables.h"

namespace ds4::quant::x86 {
namespace {

// Exact f16 -> f32 (hardware F16C; same value as ds4::f16_to_f32).
float f16_value(uint16_t h) { return _cvtsh_ss(h); }

// a * b + c rounded once (the FMA instruction; std::fma's value).
float fused(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

__m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 8 int32 partial sums of w . x over 32 int8 pairs (x in [-127, 127]).
__m256i q8_block_dot(const int8_t* w, const int8_t* x) {
  const __m256i qw = load256(w);
  const __m256i qx = load256(x);
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_abs_epi8(qw), _mm256_sign_epi8(qx, qw));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// Integer sums of 8 consecutive Q8_0 blocks, lane i = block i. Written out (no arrays) so the
// partial vectors stay in registers.
__m256i q8_0_isums8(const BlockQ8_0* w, const ActQ8_0* x) {
  const __m256i h01 =
      _mm256_hadd_epi32(q8_block_dot(w[0].qs, x[0].qs), q8_block_dot(w[1].qs, x[1].qs));
  const __m256i h23 =
      _mm256_hadd_epi32(q8_block_dot(w[2].qs, x[2].qs), q8_block_dot(w[3].qs, x[3].qs));
  const __m256i h45 =
      _mm256_hadd_epi32(q8_block_dot(w[4].qs, x[4].qs), q8_block_dot(w[5].qs, x[5].qs));
  const __m256i h67 =
      _mm256_hadd_epi32(q8_block_dot(w[6].qs, x[6].qs), q8_block_dot(w[7].qs, x[7].qs));
  // After two rounds of hadd each 128-bit lane holds 4 partial block sums; add the lanes.
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

float dot_q8_0_avx2(const BlockQ8_0* w, const ActQ8_0* x, int64_t n_blocks) {
  float acc = 0.0f;
  int64_t b = 0;
  alignas(32) int32_t isums[8];
  for (; b + 8 <= n_blocks; b += 8) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(isums), q8_0_isums8(w + b, x + b));
    for (int i = 0; i < 8; ++i) {  // block order, as the reference
      const float scale = f16_value(w[b + i].d) * x[b + i].d;
      acc = fused(scale, static_cast<float>(isums[i]), acc);
    }
  }
  for (; b < n_blocks; ++b) {
    const int32_t isum = hsum_i32(q8_block_dot(w[b].qs, x[b].qs));
    const float scale = f16_value(w[b].d) * x[b].d;
    acc = fused(scale, static_cast<float>(isum), acc);
  }
  return acc;
}

// Byte-shuffle masks that spread two bytes of a broadcast 16-byte table into int16 lanes: for
// chunk c, the low 128-bit lane gets byte 2c and the high lane byte 2c + 1 (0x80 zeroes the upper
// byte of each int16). Used to give each 16-value Q2_K sub-block its scale.
struct SpreadMasks {
  alignas(32) uint8_t bytes[8][32];
};
constexpr SpreadMasks make_spread_masks() {
  SpreadMasks m{};
  for (int c = 0; c < 8; ++c) {
    for (int i = 0; i < 16; i += 2) {
      m.bytes[c][i] = static_cast<uint8_t>(2 * c);
      m.bytes[c][i + 1] = 0x80;
      m.bytes[c][16 + i] = static_cast<uint8_t>(2 * c + 1);
      m.bytes[c][16 + i + 1] = 0x80;
    }
  }
  return m;
}
constexpr SpreadMasks kSpreadMasks = make_spread_masks();

// One 32-value chunk of a Q2_K block: codes at bit offset kShift of `bits`, times q8, times the
// sub-block scales, as 8 int32 partial sums.
template <int kChunk, int kShift>
__m256i q2_k_chunk(__m256i bits, const int8_t* q8, __m256i scales) {
  const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(bits, kShift), _mm256_set1_epi8(3));
  const __m256i p16 = _mm256_maddubs_epi16(q2, load256(q8 + 32 * kChunk));
  const __m256i sc = _mm256_shuffle_epi8(scales, load256(kSpreadMasks.bytes[kChunk]));
  return _mm256_madd_epi16(p16, sc);
}

float dot_q2_k_avx2(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  const __m128i mask15 = _mm_set1_epi8(15);
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ2_K& wb = w[b];
    const BlockQ8_K& xb = x[b];
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
    const __m128i mins8 = _mm_and_si128(_mm_srli_epi16(raw, 4), mask15);
    const __m256i bsums = load256(xb.bsums);
    const int32_t summs = hsum_i32(_mm256_madd_epi16(bsums, _mm256_cvtepu8_epi16(mins8)));
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_and_si128(raw, mask15));
    const __m256i lo = load256(wb.qs);       // elements 0..127
    const __m256i hi = load256(wb.qs + 32);  // elements 128..255
    __m256i acc0 = q2_k_chunk<0, 0>(lo, xb.qs, scales);
    __m256i acc1 = q2_k_chunk<1, 2>(lo, xb.qs, scales);
    acc0 = _mm256_add_epi32(acc0, q2_k_chunk<2, 4>(lo, xb.qs, scales));
    acc1 = _mm256_add_epi32(acc1, q2_k_chunk<3, 6>(lo, xb.qs, scales));
    acc0 = _mm256_add_epi32(acc0, q2_k_chunk<4, 0>(hi, xb.qs, scales));
    acc1 = _mm256_add_epi32(acc1, q2_k_chunk<5, 2>(hi, xb.qs, scales));
    acc0 = _mm256_add_epi32(acc0, q2_k_chunk<6, 4>(hi, xb.qs, scales));
    acc1 = _mm256_add_epi32(acc1, q2_k_chunk<7, 6>(hi, xb.qs, scales));
    const int32_t isum = hsum_i32(_mm256_add_epi32(acc0, acc1));
    const float dall = xb.d * f16_value(wb.d);
    const float dmin = xb.d * f16_value(wb.dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// Same unpacking as q4_k_scale_min() in blocks.h, kept local (see "Linkage hygiene").
void q4_k_scales_mins(const uint8_t* s, uint8_t sc[8], uint8_t m[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    m[j] = s[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0F) | ((s[j] >> 6) << 4));
    m[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

float dot_q4_k_avx2(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  const __m256i mask15 = _mm256_set1_epi8(15);
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ4_K& wb = w[b];
    const BlockQ8_K& xb = x[b];
    uint8_t sc[8];
    uint8_t m[8];
    q4_k_scales_mins(wb.scales, sc, m);
    __m256i acc = _mm256_setzero_si256();
    int32_t summs = 0;
    for (int pair = 0; pair < 4; ++pair) {
      const __m256i bits = load256(wb.qs + 32 * pair);
      const __m256i lo = _mm256_and_si256(bits, mask15);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), mask15);
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load256(xb.qs + 64 * pair));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load256(xb.qs + 64 * pair + 32));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(sc[2 * pair])));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(sc[2 * pair + 1])));
      summs += m[2 * pair] * (int32_t{xb.bsums[4 * pair]} + int32_t{xb.bsums[4 * pair + 1]});
      summs +=
          m[2 * pair + 1] * (int32_t{xb.bsums[4 * pair + 2]} + int32_t{xb.bsums[4 * pair + 3]});
    }
    const int32_t isum = hsum_i32(acc);
    const float dall = xb.d * f16_value(wb.d);
    const float dmin = xb.d * f16_value(wb.dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// Sign pattern i of kIq2Signs as eight bytes: 0xFF (-1) where the element is negative, 0x01
// elsewhere, ready for _mm256_sign_epi8.
struct SignBytes {
  uint64_t v[kIq2SignCount];
};
constexpr SignBytes make_sign_bytes() {
  SignBytes out{};
  for (int i = 0; i < kIq2SignCount; ++i) {
    for (int j = 0; j < 8; ++j) {
      out.v[i] |= uint64_t{((kIq2Signs[i] >> j) & 1) ? 0xFFu : 0x01u} << (8 * j);
    }
  }
  return out;
}
constexpr SignBytes kSignBytes = make_sign_bytes();

float dot_iq2_xxs_avx2(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ8_K& xb = x[b];
    __m256i acc = _mm256_setzero_si256();
    for (int ib32 = 0; ib32 < 8; ++ib32) {
      uint32_t aux[2];
      std::memcpy(aux, &w[b].qs[4 * ib32], 8);
      const __m256i grid =
          _mm256_set_epi64x(static_cast<int64_t>(kIq2xxsGrid[aux[0] >> 24]),
                            static_cast<int64_t>(kIq2xxsGrid[(aux[0] >> 16) & 255]),
                            static_cast<int64_t>(kIq2xxsGrid[(aux[0] >> 8) & 255]),
                            static_cast<int64_t>(kIq2xxsGrid[aux[0] & 255]));
      const __m256i signs =
          _mm256_set_epi64x(static_cast<int64_t>(kSignBytes.v[(aux[1] >> 21) & 127]),
                            static_cast<int64_t>(kSignBytes.v[(aux[1] >> 14) & 127]),
                            static_cast<int64_t>(kSignBytes.v[(aux[1] >> 7) & 127]),
                            static_cast<int64_t>(kSignBytes.v[aux[1] & 127]));
      const __m256i q8 = _mm256_sign_epi8(load256(xb.qs + 32 * ib32), signs);
      const __m256i p16 = _mm256_maddubs_epi16(grid, q8);
      const int16_t ls = static_cast<int16_t>(2 * (aux[1] >> 28) + 1);
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(ls)));
    }
    const int32_t bsum = hsum_i32(acc);
    const float d = f16_value(w[b].d) * xb.d;
    sumf += d * static_cast<float>(bsum);
  }
  return 0.125f * sumf;
}

__m256 f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

__m256d f32x4_as_f64(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }

// Double accumulation of the exact products f16(w) * x in four 4-lane accumulators (like the F32
// kernel): only the order of the double adds differs from the reference.
float dot_f16_avx2(const uint16_t* w, const float* x, int64_t n) {
  __m256d acc0 = _mm256_setzero_pd();
  __m256d acc1 = _mm256_setzero_pd();
  __m256d acc2 = _mm256_setzero_pd();
  __m256d acc3 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = f16x8(w + i), w1 = f16x8(w + i + 8);
    acc0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(w0)), f32x4_as_f64(x + i), acc0);
    acc1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(w0, 1)), f32x4_as_f64(x + i + 4),
                           acc1);
    acc2 =
        _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(w1)), f32x4_as_f64(x + i + 8), acc2);
    acc3 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(w1, 1)), f32x4_as_f64(x + i + 12),
                           acc3);
  }
  const __m256d acc = _mm256_add_pd(_mm256_add_pd(acc0, acc1), _mm256_add_pd(acc2, acc3));
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(acc), _mm256_extractf128_pd(acc, 1));
  double sum = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  for (; i < n; ++i) sum += static_cast<double>(f16_value(w[i])) * static_cast<double>(x[i]);
  return static_cast<float>(sum);
}

// Double accumulation in four 4-lane accumulators. A product of two floats is exact in double, so
// only the order of the double adds differs from the reference.
float dot_f32_avx2(const float* w, const float* x, int64_t n) {
  __m256d acc0 = _mm256_setzero_pd();
  __m256d acc1 = _mm256_setzero_pd();
  __m256d acc2 = _mm256_setzero_pd();
  __m256d acc3 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_pd(f32x4_as_f64(w + i), f32x4_as_f64(x + i), acc0);
    acc1 = _mm256_fmadd_pd(f32x4_as_f64(w + i + 4), f32x4_as_f64(x + i + 4), acc1);
    acc2 = _mm256_fmadd_pd(f32x4_as_f64(w + i + 8), f32x4_as_f64(x + i + 8), acc2);
    acc3 = _mm256_fmadd_pd(f32x4_as_f64(w + i + 12), f32x4_as_f64(x + i + 12), acc3);
  }
  const __m256d a = _mm256_add_pd(_mm256_add_pd(acc0, acc1), _mm256_add_pd(acc2, acc3));
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  double sum = _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  for (; i < n; ++i) sum += static_cast<double>(w[i]) * static_cast<double>(x[i]);
  return static_cast<float>(sum);
}

}  // namespace

const DotKernels& avx2_kernels_unchecked() {
  static const DotKernels kAvx2{
      .name = "avx2",
      .q8_0 = dot_q8_0_avx2,
      .q2_k = dot_q2_k_avx2,
      .q4_k = dot_q4_k_avx2,
      .iq2_xxs = dot_iq2_xxs_avx2,
      .q2_k_rows = rows_one_by_one<BlockQ2_K, dot_q2_k_avx2>,
      .q4_k_rows = rows_one_by_one<BlockQ4_K, dot_q4_k_avx2>,
      .iq2_xxs_rows = rows_one_by_one<BlockIQ2_XXS, dot_iq2_xxs_avx2>,
      .f16 = dot_f16_avx2,
      .f32 = dot_f32_avx2,
  };
  return kAvx2;
}

}  // namespace ds4::quant::x86
