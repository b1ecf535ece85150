// src/quant/x86/dot_avx512.cpp: AVX-512 dot kernels for the 256-value formats (Q2_K, Q4_K,
// IQ2_XXS), built with -mavx512{f,bw,vl,vnni,vbmi,bitalg} (see src/quant/CMakeLists.txt).
// Owns: the vectorised Q2_K, Q4_K and IQ2_XXS dots of the "avx512" table (single-row and
//   multi-row), and that table (whose Q8_0, F16 and F32 entries are the AVX2 kernels).
// Does not own: their definition (dot_ref.cpp) or the decision to run them (dot_select.cpp, which
//   checks every extension used here, and the OS's ZMM state support, before handing them out).
//
// Exactness (same contract as dot_avx2.cpp): every integer sum inside a block is exact whatever
// its order, so only the float steps matter. Those are formed per block with the reference's IEEE
// operations (exact f16 decode, the same multiplies and subtraction in the same order, one
// int->float conversion), sixteen blocks at a time in one vector, and then added to the
// accumulator one block at a time, in block order. The module is built with -ffp-contract=off.
//
// Structure of every kernel: a block is turned into one vector of 16 int32 partial sums (for the
// K-quants: 8 partials of the scale sum in the low half, 8 of the min sum in the high half);
// sixteen such vectors are reduced together by a transposed tree of in-lane unpacks and 128-bit
// lane shuffles (about 3 operations per block instead of a full horizontal sum each), and the
// block terms are formed and added in order. Short tails use the same path with zero vectors.
// The multi-row entries run the same pipeline over the blocks of all their rows as one stream
// (each row's terms still added in its own block order from 0), so rows shorter than a batch
// no longer pay a batch each.
//
// Integer core:
// * Q2_K / Q4_K: the packed codes of 64 activations are isolated with per-half variable shifts
//   of a 256-bit broadcast and a mask; vpmaddubsw multiplies them with the activations (pair sums,
//   no saturation: 2*15*127 < 2^15), and vpdpwssd multiplies the pairs by the sub-block scales,
//   spread to 16-bit lanes by one zero-masked vpermb, accumulating in int32. The low half of the
//   block vector is that sum folded to 8 lanes; the high half is the mins times the activation
//   bsums (one 256-bit vpmaddwd).
// * IQ2_XXS: one vpmultishiftqb + one vpermb turn the 64 index bytes of a block into 32 words
//   (codebook index in the low byte, 7-bit sign index in the high byte), ordered so that qword
//   lane j holds the sub-groups j, 8+j, 16+j, 24+j. The codebook is kept in 8 ZMM registers as
//   256 16-bit codes (2 bits per value: 0, 1, 2 for 8, 25, 43) and read with four vpermt2w plus
//   two blends; each output vector of 64 magnitudes is then one vpmultishiftqb (its 2-bit field
//   into each byte) and one vpermb (field -> magnitude). The sign table is read for all 32
//   sub-groups with one vpermi2b, and vpshufbitqmb turns its bytes straight into a 64-bit mask
//   per output vector; the activations are negated under that mask (exact: |q8| <= 127), so
//   vpmaddubsw sees unsigned magnitudes and signed activations (pairs <= 2*43*127 < 2^15).
//   The group multipliers 2s+1 come from one 64-bit shift ((qword >> 59) | 1) and are applied
//   with vpdpwssd as for the K-quants. The weight-only decode of block i + 1 is issued before
//   the activation half of block i (software pipelining), so their dependency chains overlap.
//
// Cost model behind these choices (Zen 4, measured): 512-bit integer operations issue at about
// two per cycle in total; multiplies, vpmultishiftqb, vpshufbitqmb and mask-producing compares
// share one pair of pipes (one per cycle), byte/word permutes and 256-bit broadcasts another
// (one per cycle), shifts a third; adds, logic and blends go anywhere. Gathers (about 10 cycles
// for 8 qwords) are far slower than in-register tables. IQ2_XXS needs about 50 such operations
// per block, Q2_K and Q4_K about 25; instruction count, not memory, bounds all three.
//
// Linkage hygiene (as dot_avx2.cpp): this translation unit calls no inline function of a shared
// header, so the linker cannot keep an AVX-512 copy of one for the rest of the program.
// Everything here has internal linkage except avx512_kernels_unchecked().
#include "quant/x86/dot_avx512.h"

// GCC 12 reports its own _mm512_undefined_*() placeholders (used by unpack, shuffle, broadcast
// and conversion intrinsics) as uninitialised reads (GCC PR 105593); the warnings point into the
// header, so they are silenced for the header only (GCC only: clang has no such warning group and
// rejects the unknown name under -Werror).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cstddef>
#include <cstdint>

#include "quant/iq2_tables.h"
#include "quant/x86/dot_avx2.h"

namespace ds4::quant::x86 {
namespace {

constexpr int kBatch = 16;  // blocks reduced together

// Software prefetch distance (bytes ahead of the block being multiplied). Rows of a matrix are
// contiguous, so this runs into the next rows; measured on the cold 4096 x 4096 matvecs, 2 KiB
// raises two-thread throughput by 15-20% over the hardware prefetchers alone (1 and 4 KiB: less
// or no better). A prefetch never faults, so reading past the matrix end is harmless.
constexpr int kPrefetchBytes = 2048;

// Prefetches the cache lines kPrefetchBytes ahead of block *p (one per 64 bytes of a block).
template <class Block>
[[gnu::always_inline]] inline void prefetch_ahead(const Block* p) {
  // Formed as an integer: the address may lie past the end of the row array.
  const auto a = reinterpret_cast<uintptr_t>(p) + kPrefetchBytes;
  for (size_t off = 0; off < sizeof(Block); off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(a + off), _MM_HINT_T0);
  }
}

// The helpers below are forced inline: their constants and table registers must stay in
// registers across a block loop, which GCC does not always see through a call.

[[gnu::always_inline]] inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

constexpr uint64_t bytes8(int b0, int b1, int b2, int b3, int b4, int b5, int b6, int b7) {
  const int b[8] = {b0, b1, b2, b3, b4, b5, b6, b7};
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[i] & 0xFF) << (8 * i);
  return v;
}

// ---- Transposed reduction --------------------------------------------------------------------
// fold32(a, b): per 128-bit lane [a0+a2, b0+b2, a1+a3, b1+b3].
[[gnu::always_inline]] inline __m512i fold32(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
// fold64(fold32(a, b), fold32(c, d)): per 128-bit lane, the sums of that lane of a, b, c, d.
[[gnu::always_inline]] inline __m512i fold64(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}
// Lanes [x0.l0 + x0.l1, x0.l2 + x0.l3, x1.l0 + x1.l1, x1.l2 + x1.l3].
[[gnu::always_inline]] inline __m512i fold_lanes(__m512i x0, __m512i x1) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(x0, x1, 0x88), _mm512_shuffle_i32x4(x0, x1, 0xDD));
}
[[gnu::always_inline]] inline __m512i quad(const __m512i* v) {
  return fold64(fold32(v[0], v[1]), fold32(v[2], v[3]));
}
// Eight vectors -> [halfsum 0..3 of v0..v3 (low 256 bits), high-256 sums of v0..v3, the same for
// v4..v7]: each 128-bit lane holds four consecutive blocks.
[[gnu::always_inline]] inline __m512i oct(const __m512i* v) {
  return fold_lanes(quad(v), quad(v + 4));
}

// Lane i = sum of the 16 lanes of v[i].
[[gnu::always_inline]] inline __m512i sums16(const __m512i* v) {
  return fold_lanes(oct(v), oct(v + 8));
}

// For vectors holding two 8-lane segments: lane i of *lo = sum of the low half of v[i], of *hi =
// sum of the high half.
[[gnu::always_inline]] inline void split_sums16(const __m512i* v, __m512i* lo, __m512i* hi) {
  const __m512i a = oct(v);      // [lo 0-3, hi 0-3, lo 4-7, hi 4-7]
  const __m512i b = oct(v + 8);  // [lo 8-11, hi 8-11, lo 12-15, hi 12-15]
  *lo = _mm512_shuffle_i32x4(a, b, 0x88);
  *hi = _mm512_shuffle_i32x4(a, b, 0xDD);
}

// [lanes i + i+8 of acc (8 lanes) | hi (8 lanes)].
[[gnu::always_inline]] inline __m512i pack_halves(__m512i acc, __m256i hi) {
  const __m256i lo =
      _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// ---- Block-order float accumulation ----------------------------------------------------------
// Per-batch scalars gathered while the integer work runs (zero past the tail).
struct BatchScales {
  alignas(64) float xd[kBatch];
  alignas(32) uint16_t d[kBatch];
  alignas(32) uint16_t dmin[kBatch];
};

// The in-order float accumulation of a batch's terms (the reference adds one block term at a
// time): the batch's terms belong to consecutive blocks of rows of
// `n_blocks` blocks stored back to back. Each row's sum starts at 0 and takes its terms in block
// order, exactly as a single-row dot does; when its last block is in, the row's result (the sum,
// times 1/8 for IQ2_XXS) goes to the next output.
// A batch's terms are added one batch late: its 16 dependent scalar adds then come after the next
// batch's vector work in program order, when their inputs are long ready, instead of stalling
// retirement behind the reduction they wait for (measured: +12% one thread, +23% two threads,
// hot IQ2_XXS). finish() adds the last batch.
template <bool kEighth>
class RowSums {
 public:
  RowSums(float* y, int64_t n_blocks) : y_(y), n_blocks_(n_blocks) {}
  [[gnu::always_inline]] void add(__m512 terms, int n) {
    finish();
    _mm512_store_ps(pending_, terms);
    n_pending_ = n;
  }
  [[gnu::always_inline]] void finish() {
    for (int i = 0; i < n_pending_; ++i) {
      acc_ += pending_[i];
      if (++col_ == n_blocks_) {
        *y_++ = kEighth ? 0.125f * acc_ : acc_;
        acc_ = 0.0f;
        col_ = 0;
      }
    }
    n_pending_ = 0;
  }

 private:
  alignas(64) float pending_[kBatch];
  float* y_;
  int64_t n_blocks_;
  int64_t col_ = 0;
  float acc_ = 0.0f;
  int n_pending_ = 0;
};

// K-quant terms: (x.d * f16(d)) * isum - (x.d * f16(dmin)) * summs, lane by lane.
[[gnu::always_inline]] inline __m512 k_terms(const BatchScales& s, __m512i isum, __m512i summs) {
  const __m512 xd = _mm512_load_ps(s.xd);
  const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s.d)));
  const __m512 dm = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s.dmin)));
  const __m512 dall = _mm512_mul_ps(xd, d);
  const __m512 dmin = _mm512_mul_ps(xd, dm);
  return _mm512_sub_ps(_mm512_mul_ps(dall, _mm512_cvtepi32_ps(isum)),
                       _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(summs)));
}

// ---- Q2_K ------------------------------------------------------------------------------------
struct Q2kConsts {
  // vpsrlvw counts: low 256 bits shift by a, high by a + 2 (elements 32 apart share a byte).
  alignas(64) uint16_t shift01[32];
  alignas(64) uint16_t shift23[32];
  // Zero-masked vpermb index spreading scale (s & 15) of sub-block 4m + w/8 to word w, for the
  // output vector m (64 values, 4 sub-blocks).
  alignas(64) uint8_t scale_idx[4][64];
};
constexpr Q2kConsts make_q2k_consts() {
  Q2kConsts c{};
  for (int w = 0; w < 32; ++w) {
    c.shift01[w] = static_cast<uint16_t>(w < 16 ? 0 : 2);
    c.shift23[w] = static_cast<uint16_t>(w < 16 ? 4 : 6);
  }
  for (int m = 0; m < 4; ++m) {
    for (int w = 0; w < 32; ++w) {
      c.scale_idx[m][2 * w] = static_cast<uint8_t>(4 * m + w / 8);
      c.scale_idx[m][2 * w + 1] = 0;
    }
  }
  return c;
}
constexpr Q2kConsts kQ2k = make_q2k_consts();
constexpr __mmask64 kEvenBytes = 0x5555555555555555ull;

// [8 partials of sum_s (sc_s & 15) * sum q2 * q8 | 8 partials of sum_s bsums_s * (sc_s >> 4)].
[[gnu::always_inline]] inline __m512i q2_k_block(const BlockQ2_K& wb, const BlockQ8_K& xb) {
  const __m512i mask3 = _mm512_set1_epi8(3);
  const __m512i sh01 = _mm512_load_si512(kQ2k.shift01);
  const __m512i sh23 = _mm512_load_si512(kQ2k.shift23);
  const __m512i lo = _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs)));  // elements 0..127
  const __m512i hi = _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32)));  // elements 128..255
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
  const __m512i sc = _mm512_castsi128_si512(_mm_and_si128(raw, _mm_set1_epi8(15)));
  const __m512i q0 = _mm512_and_si512(_mm512_srlv_epi16(lo, sh01), mask3);
  const __m512i q1 = _mm512_and_si512(_mm512_srlv_epi16(lo, sh23), mask3);
  const __m512i q2 = _mm512_and_si512(_mm512_srlv_epi16(hi, sh01), mask3);
  const __m512i q3 = _mm512_and_si512(_mm512_srlv_epi16(hi, sh23), mask3);
  const __m512i p0 = _mm512_maddubs_epi16(q0, load512(xb.qs));
  const __m512i p1 = _mm512_maddubs_epi16(q1, load512(xb.qs + 64));
  const __m512i p2 = _mm512_maddubs_epi16(q2, load512(xb.qs + 128));
  const __m512i p3 = _mm512_maddubs_epi16(q3, load512(xb.qs + 192));
  auto spread = [&](int m) {
    return _mm512_maskz_permutexvar_epi8(kEvenBytes, _mm512_load_si512(kQ2k.scale_idx[m]), sc);
  };
  __m512i acc = _mm512_madd_epi16(p0, spread(0));
  acc = _mm512_dpwssd_epi32(acc, p1, spread(1));
  acc = _mm512_dpwssd_epi32(acc, p2, spread(2));
  acc = _mm512_dpwssd_epi32(acc, p3, spread(3));
  // Mins (scales >> 4) times the activation bsums, in 256-bit halves.
  const __m128i mins = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15));
  const __m256i summs = _mm256_madd_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums)), _mm256_cvtepu8_epi16(mins));
  return pack_halves(acc, summs);
}

// ---- Q4_K ------------------------------------------------------------------------------------
struct Q4kConsts {
  alignas(64) uint16_t shift[32];  // low 256 bits: low nibbles, high 256 bits: high nibbles
  // Zero-masked vpermb index spreading scale byte 2m + (w >= 16) of the unpacked [sc0..7,
  // m0..7] to word w, for output vector m (sub-blocks 2m, 2m + 1).
  alignas(64) uint8_t scale_idx[4][64];
  alignas(16) uint8_t min_pick[16];  // byte s <- m_{s/2} (byte 8 + s/2 of the unpacked scales)
  // Unpacking of the 12 scale bytes (see q4_k_scales_mins below).
  alignas(16) uint8_t pick_a[16];
  alignas(16) uint8_t pick_b[16];
  alignas(16) uint8_t mask_a[16];
  alignas(16) uint8_t mask_a4[16];
  alignas(16) uint8_t mask_b[16];
};
constexpr Q4kConsts make_q4k_consts() {
  Q4kConsts c{};
  for (int w = 0; w < 32; ++w) c.shift[w] = static_cast<uint16_t>(w < 16 ? 0 : 4);
  for (int m = 0; m < 4; ++m) {
    for (int w = 0; w < 32; ++w) c.scale_idx[m][2 * w] = static_cast<uint8_t>(2 * m + w / 16);
  }
  for (int i = 0; i < 16; ++i) c.min_pick[i] = static_cast<uint8_t>(8 + i / 2);
  const uint8_t pick_a[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11};
  const uint8_t pick_b[16] = {0x80, 0x80, 0x80, 0x80, 0, 1, 2, 3,
                              0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7};
  for (int i = 0; i < 16; ++i) {
    c.pick_a[i] = pick_a[i];
    c.pick_b[i] = pick_b[i];
    const int q = i / 4;  // 0: sc0-3, 1: sc4-7, 2: m0-3, 3: m4-7
    c.mask_a[i] = static_cast<uint8_t>(q == 0 || q == 2 ? 63 : (q == 1 ? 15 : 0));
    c.mask_a4[i] = static_cast<uint8_t>(q == 3 ? 15 : 0);
    c.mask_b[i] = static_cast<uint8_t>(q == 1 || q == 3 ? 0x30 : 0);
  }
  return c;
}
constexpr Q4kConsts kQ4k = make_q4k_consts();

[[gnu::always_inline]] inline __m128i load128(const void* p) {
  return _mm_load_si128(static_cast<const __m128i*>(p));
}

// [sc0..sc7, m0..m7] from the 12 packed bytes (same values as q4_k_scale_min() in blocks.h):
// sc_j / m_j (j < 4) = low 6 bits of byte j / j + 4; sc_{j+4} = low nibble of byte j + 8 | top 2
// bits of byte j << 4; m_{j+4} = high nibble of byte j + 8 | top 2 bits of byte j + 4 << 4.
[[gnu::always_inline]] inline __m128i q4_k_scales_mins(const uint8_t* scales) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales));  // + 4 qs bytes
  const __m128i a = _mm_shuffle_epi8(raw, load128(kQ4k.pick_a));  // s0-3, s8-11, s4-7, s8-11
  const __m128i b = _mm_shuffle_epi8(raw, load128(kQ4k.pick_b));  // 0, s0-3, 0, s4-7
  const __m128i low = _mm_and_si128(a, load128(kQ4k.mask_a));
  const __m128i nib = _mm_and_si128(_mm_srli_epi16(a, 4), load128(kQ4k.mask_a4));
  const __m128i top = _mm_and_si128(_mm_srli_epi16(b, 2), load128(kQ4k.mask_b));
  return _mm_or_si128(_mm_or_si128(low, nib), top);
}

// [8 partials of sum_j sc_j * sum q4 * q8 | 8 partials of sum_j m_j * (bsums_2j + bsums_2j+1)].
[[gnu::always_inline]] inline __m512i q4_k_block(const BlockQ4_K& wb, const BlockQ8_K& xb) {
  const __m512i mask15 = _mm512_set1_epi8(15);
  const __m512i sh = _mm512_load_si512(kQ4k.shift);
  const __m512i sm = _mm512_castsi128_si512(q4_k_scales_mins(wb.scales));
  auto codes = [&](int m) {
    const __m512i q = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * m)));
    return _mm512_and_si512(_mm512_srlv_epi16(q, sh), mask15);
  };
  auto spread = [&](int m) {
    return _mm512_maskz_permutexvar_epi8(kEvenBytes, _mm512_load_si512(kQ4k.scale_idx[m]), sm);
  };
  const __m512i p0 = _mm512_maddubs_epi16(codes(0), load512(xb.qs));
  const __m512i p1 = _mm512_maddubs_epi16(codes(1), load512(xb.qs + 64));
  const __m512i p2 = _mm512_maddubs_epi16(codes(2), load512(xb.qs + 128));
  const __m512i p3 = _mm512_maddubs_epi16(codes(3), load512(xb.qs + 192));
  __m512i acc = _mm512_madd_epi16(p0, spread(0));
  acc = _mm512_dpwssd_epi32(acc, p1, spread(1));
  acc = _mm512_dpwssd_epi32(acc, p2, spread(2));
  acc = _mm512_dpwssd_epi32(acc, p3, spread(3));
  // Mins m_{s/2} next to bsums[s], in 256-bit halves.
  const __m128i mins = _mm_shuffle_epi8(_mm512_castsi512_si128(sm), load128(kQ4k.min_pick));
  const __m256i summs = _mm256_madd_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums)), _mm256_cvtepu8_epi16(mins));
  return pack_halves(acc, summs);
}

// The K-quant dot of n_rows rows (Q2_K, Q4_K; `block` gives one block vector): the blocks of all
// rows form one stream (the activation block index wraps at each row end), in batches of kBatch
// block vectors reduced together, each row's float terms added in its block order. Every batch is
// full however short the rows are. The single-row entries are the case n_rows = 1.
template <class Block, __m512i (*block)(const Block&, const BlockQ8_K&)>
void dot_k_rows(const Block* w, const BlockQ8_K* x, int64_t n_blocks, int64_t n_rows, float* y) {
  if (n_blocks == 0) {
    for (int64_t r = 0; r < n_rows; ++r) y[r] = 0.0f;
    return;
  }
  const int64_t total = n_blocks * n_rows;
  RowSums<false> rows(y, n_blocks);
  int64_t xi = 0;  // activation block of the next weight block
  for (int64_t f0 = 0; f0 < total; f0 += kBatch) {
    const int n = static_cast<int>(total - f0 < kBatch ? total - f0 : kBatch);
    __m512i v[kBatch];
    BatchScales s{};
    for (int i = 0; i < n; ++i) {
      const Block& wb = w[f0 + i];
      prefetch_ahead(&wb);
      v[i] = block(wb, x[xi]);
      s.xd[i] = x[xi].d;
      s.d[i] = wb.d;
      s.dmin[i] = wb.dmin;
      if (++xi == n_blocks) xi = 0;
    }
    for (int i = n; i < kBatch; ++i) v[i] = _mm512_setzero_si512();
    __m512i isum, summs;
    split_sums16(v, &isum, &summs);
    rows.add(k_terms(s, isum, summs), n);
  }
  rows.finish();
}

// ---- IQ2_XXS ---------------------------------------------------------------------------------
// Sub-group s of a block (8 values; s = 4g + k, g = 32-value group, k = 0..3) goes to output
// vector m = s / 8, qword lane j = s % 8; its word in the index vector is 4j + m.
struct Iq2Consts {
  alignas(64) uint16_t codes[256];  // codebook entry -> 2 bits per value (0: 8, 1: 25, 2: 43)
  alignas(64) uint8_t signs[128];   // kIq2Signs
  alignas(64) uint8_t level[64];    // 2-bit field (bits 0-1 of the byte) -> magnitude
  // vpermb index: word 4j + m <- [codebook index, sign index] of sub-group 8m + j, taken from
  // the multishifted qs (per qword g: bytes 0-3 = codebook indices, 4-7 = sign indices).
  alignas(64) uint8_t gather[64];
  alignas(64) uint16_t scale_idx[4][32];  // word w of output m <- word 4 * group(m, w) of 2s+1
};
constexpr Iq2Consts make_iq2_consts() {
  Iq2Consts c{};
  for (int e = 0; e < 256; ++e) {
    uint16_t code = 0;
    for (int i = 0; i < 8; ++i) {
      const int v = static_cast<int>((kIq2xxsGrid[e] >> (8 * i)) & 0xFF);
      const int l = v == 8 ? 0 : (v == 25 ? 1 : 2);
      code = static_cast<uint16_t>(code | (l << (2 * i)));
    }
    c.codes[e] = code;
  }
  for (int i = 0; i < 128; ++i) c.signs[i] = kIq2Signs[i];
  const uint8_t levels[4] = {8, 25, 43, 0};
  for (int i = 0; i < 64; ++i) c.level[i] = levels[i & 3];
  for (int j = 0; j < 8; ++j) {
    for (int m = 0; m < 4; ++m) {
      const int src = 16 * m + 8 * (j / 4) + j % 4;  // qword g = 2m + j/4, byte k = j % 4
      c.gather[2 * (4 * j + m)] = static_cast<uint8_t>(src);
      c.gather[2 * (4 * j + m) + 1] = static_cast<uint8_t>(src + 4);
    }
  }
  for (int m = 0; m < 4; ++m) {
    for (int w = 0; w < 32; ++w) c.scale_idx[m][w] = static_cast<uint16_t>(4 * (2 * m + w / 16));
  }
  return c;
}
constexpr Iq2Consts kIq2 = make_iq2_consts();

// Multishift control on the raw qs: bytes 0-3 of each qword unchanged (codebook indices), bytes
// 4-7 = bits 32 + 7k .. of the qword (sign index k in the low 7 bits).
constexpr uint64_t kIq2Split = bytes8(0, 8, 16, 24, 32, 39, 46, 53);

// In-register tables of the IQ2_XXS kernel.
struct Iq2Regs {
  __m512i t0, t1, t2, t3, t4, t5, t6, t7;  // codes[32i .. 32i + 31]
  __m512i s0, s1;                          // sign table
  __m512i level, gather, split;
};

[[gnu::always_inline]] inline Iq2Regs iq2_regs() {
  Iq2Regs r;
  r.t0 = _mm512_load_si512(kIq2.codes);
  r.t1 = _mm512_load_si512(kIq2.codes + 32);
  r.t2 = _mm512_load_si512(kIq2.codes + 64);
  r.t3 = _mm512_load_si512(kIq2.codes + 96);
  r.t4 = _mm512_load_si512(kIq2.codes + 128);
  r.t5 = _mm512_load_si512(kIq2.codes + 160);
  r.t6 = _mm512_load_si512(kIq2.codes + 192);
  r.t7 = _mm512_load_si512(kIq2.codes + 224);
  r.s0 = _mm512_load_si512(kIq2.signs);
  r.s1 = _mm512_load_si512(kIq2.signs + 64);
  r.level = _mm512_load_si512(kIq2.level);
  r.gather = _mm512_load_si512(kIq2.gather);
  r.split = _mm512_set1_epi64(static_cast<int64_t>(kIq2Split));
  return r;
}

// The weight-only half of a block: codebook codes, sign bytes and group multipliers.
struct Iq2Decoded {
  __m512i codes;  // word 4j + m: 2-bit codes of sub-group 8m + j
  __m512i signs;  // high byte of word 4j + m: sign byte (kIq2Signs) of sub-group 8m + j
  __m512i mult;   // low word of qword g: 2 s_g + 1
};

[[gnu::always_inline]] inline Iq2Decoded iq2_xxs_decode(const Iq2Regs& r, const BlockIQ2_XXS& wb) {
  const __m512i raw = load512(wb.qs);  // qword g = group g: 4 codebook indices, signs, scale
  const __m512i idx = _mm512_permutexvar_epi8(r.gather, _mm512_multishift_epi64_epi8(r.split, raw));
  // Codebook: entries 64q .. 64q + 63 via vpermt2w, chosen by bits 6 and 7 of the index.
  const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x40));
  const __mmask32 b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x80));
  const __m512i c01 = _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(r.t0, idx, r.t1),
                                              _mm512_permutex2var_epi16(r.t2, idx, r.t3));
  const __m512i c23 = _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(r.t4, idx, r.t5),
                                              _mm512_permutex2var_epi16(r.t6, idx, r.t7));
  Iq2Decoded d;
  d.codes = _mm512_mask_blend_epi16(b7, c01, c23);
  // Sign bytes: the high byte of word 4j + m (low bytes: unused lookups of codebook indices).
  d.signs = _mm512_permutex2var_epi8(r.s0, idx, r.s1);
  d.mult = _mm512_or_si512(_mm512_srli_epi64(raw, 59), _mm512_set1_epi64(1));
  return d;
}

// 16 int32 partials of sum_g (2 s_g + 1) * sum_{32 values} +-grid * q8.
[[gnu::always_inline]] inline __m512i iq2_xxs_dot(const Iq2Regs& r, const Iq2Decoded& d,
                                                  const BlockQ8_K& xb) {
  const __m512i zero = _mm512_setzero_si512();
  struct Part {
    __m512i pairs;  // 32 int16 pair products (one group per 256-bit half)
    __m512i mul;    // the matching 2s + 1 per 16-bit lane
  };
  auto part = [&](int m) {
    // Output m: byte i of qword j = value i of sub-group 8m + j, i.e. bits 2i.. of word 4j + m.
    const __m512i field = _mm512_multishift_epi64_epi8(
        _mm512_set1_epi64(
            static_cast<int64_t>(bytes8(16 * m, 16 * m + 2, 16 * m + 4, 16 * m + 6, 16 * m + 8,
                                        16 * m + 10, 16 * m + 12, 16 * m + 14))),
        d.codes);
    const __m512i mag = _mm512_permutexvar_epi8(field, r.level);
    const __mmask64 neg = _mm512_bitshuffle_epi64_mask(
        d.signs, _mm512_set1_epi64(static_cast<int64_t>(
                     bytes8(16 * m + 8, 16 * m + 9, 16 * m + 10, 16 * m + 11, 16 * m + 12,
                            16 * m + 13, 16 * m + 14, 16 * m + 15))));
    const __m512i q8 = load512(xb.qs + 64 * m);
    const __m512i sq8 = _mm512_mask_sub_epi8(q8, neg, zero, q8);
    const __m512i pairs = _mm512_maddubs_epi16(mag, sq8);
    const __m512i mul = _mm512_permutexvar_epi16(_mm512_load_si512(kIq2.scale_idx[m]), d.mult);
    return Part{pairs, mul};
  };
  const Part p0 = part(0);
  const Part p1 = part(1);
  const Part p2 = part(2);
  const Part p3 = part(3);
  return _mm512_add_epi32(
      _mm512_dpwssd_epi32(_mm512_madd_epi16(p0.pairs, p0.mul), p2.pairs, p2.mul),
      _mm512_dpwssd_epi32(_mm512_madd_epi16(p1.pairs, p1.mul), p3.pairs, p3.mul));
}

// The IQ2_XXS dot of n_rows rows, as dot_k_rows: one block stream for all rows. Software-
// pipelined: the weight decode of block i + 1 is issued before the dot of block i (across row ends
// too), so the two dependency chains overlap.
void dot_iq2_xxs_rows(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks, int64_t n_rows,
                      float* y) {
  if (n_blocks == 0) {
    for (int64_t r = 0; r < n_rows; ++r) y[r] = 0.0f;
    return;
  }
  const Iq2Regs r = iq2_regs();
  const int64_t total = n_blocks * n_rows;
  if (total == 0) return;
  RowSums<true> rows(y, n_blocks);
  int64_t xi = 0;  // activation block of the block being multiplied
  Iq2Decoded cur = iq2_xxs_decode(r, w[0]);
  for (int64_t f0 = 0; f0 < total; f0 += kBatch) {
    const int n = static_cast<int>(total - f0 < kBatch ? total - f0 : kBatch);
    __m512i v[kBatch];
    BatchScales s{};
    for (int i = 0; i < n; ++i) {
      const int64_t f = f0 + i;
      prefetch_ahead(w + f);
      // The last block decodes itself again rather than read past the end.
      const Iq2Decoded next = iq2_xxs_decode(r, w[f + 1 < total ? f + 1 : f]);
      v[i] = iq2_xxs_dot(r, cur, x[xi]);
      s.xd[i] = x[xi].d;
      s.d[i] = w[f].d;
      if (++xi == n_blocks) xi = 0;
      cur = next;
    }
    for (int i = n; i < kBatch; ++i) v[i] = _mm512_setzero_si512();
    const __m512i bsum = sums16(v);
    const __m512 d =
        _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s.d))),
                      _mm512_load_ps(s.xd));
    rows.add(_mm512_mul_ps(d, _mm512_cvtepi32_ps(bsum)), n);
  }
  rows.finish();
}

// Single rows of fewer blocks than these run faster on the AVX2 kernels: the sixteen-block
// reduction has a fixed cost per batch that short rows do not amortise. Crossovers measured on this
// Zen 4 (hot rows of 1-32 blocks, bench/cpu-kernels.md); both paths are exact, so results do not
// change.
constexpr int64_t kMinBlocksQ2K = 12;
constexpr int64_t kMinBlocksQ4K = 4;
constexpr int64_t kMinBlocksIq2 = 6;

template <class Block, void (*rows)(const Block*, const BlockQ8_K*, int64_t, int64_t, float*)>
float one_row(const Block* w, const BlockQ8_K* x, int64_t n_blocks) {
  float y;
  rows(w, x, n_blocks, 1, &y);
  return y;
}

float dot_q2_k_avx512(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  return n_blocks < kMinBlocksQ2K
             ? avx2_kernels_unchecked().q2_k(w, x, n_blocks)
             : one_row<BlockQ2_K, dot_k_rows<BlockQ2_K, q2_k_block>>(w, x, n_blocks);
}

float dot_q4_k_avx512(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  return n_blocks < kMinBlocksQ4K
             ? avx2_kernels_unchecked().q4_k(w, x, n_blocks)
             : one_row<BlockQ4_K, dot_k_rows<BlockQ4_K, q4_k_block>>(w, x, n_blocks);
}

float dot_iq2_xxs_avx512(const BlockIQ2_XXS* w, const BlockQ8_K* x, int64_t n_blocks) {
  return n_blocks < kMinBlocksIq2 ? avx2_kernels_unchecked().iq2_xxs(w, x, n_blocks)
                                  : one_row<BlockIQ2_XXS, dot_iq2_xxs_rows>(w, x, n_blocks);
}

}  // namespace

const DotKernels& avx512_kernels_unchecked() {
  static const DotKernels kAvx512{
      .name = "avx512",
      .q8_0 = avx2_kernels_unchecked().q8_0,
      .q2_k = dot_q2_k_avx512,
      .q4_k = dot_q4_k_avx512,
      .iq2_xxs = dot_iq2_xxs_avx512,
      .q2_k_rows = dot_k_rows<BlockQ2_K, q2_k_block>,
      .q4_k_rows = dot_k_rows<BlockQ4_K, q4_k_block>,
      .iq2_xxs_rows = dot_iq2_xxs_rows,
      .f16 = avx2_kernels_unchecked().f16,
      .f32 = avx2_kernels_unchecked().f32,
  };
  return kAvx512;
}

}  // namespace ds4::quant::x86
