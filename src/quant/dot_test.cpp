// src/quant/dot_test.cpp: dot kernels. The reference agrees with "dequantize, then multiply in
// double"; the fast kernels agree with the reference (bit for bit for the quantised formats);
// matvec composes them correctly, with and without threads.
#include "quant/dot.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "base/f16.h"
#include "base/thread_pool.h"
#include "quant/activation.h"
#include "quant/dequantize.h"
#include "quant/iq2_tables.h"
#include "quant/quant_test_util.h"
#include "quant/quantize.h"

namespace ds4::quant {
namespace {

using gguf::GgufType;
using testing::random_blocks;

constexpr int kCases = 150;  // random shapes per format

// Reference vs "exact" (double) dot of the dequantised operands. M is the magnitude of the
// computation: sum over elements of |activation| * (|scale part| + |min part|) (= sum |w a| for
// formats without mins). The reference rounds each block term at most 3 times and accumulates
// n_terms of them in float, within (n_terms + 3) * u * M (u = 2^-24, first order); the dequantised
// float operands carry at most 3 roundings each. The bound keeps a few spare units.
double ref_vs_exact_tol(int64_t n_terms, double magnitude) {
  return (static_cast<double>(n_terms) + 8.0) * 0x1p-24 * magnitude;
}

// F32 and F16 fast vs reference: double sums in different orders (products exact in double),
// differing by <= 2 n 2^-53 sum|w x| before the final rounding to float, which adds at most one
// float ulp.
double f32_reorder_tol(int64_t n, double sum_abs, float ref) {
  return 2.0 * n * 0x1p-53 * sum_abs + std::ldexp(1.0, std::ilogb(ref) - 23) + 1e-45;
}

bool same_bits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Moderate f16 scales for the consistency test (the conformance test uses any finite f16).
uint16_t moderate_f16(std::mt19937& rng) {
  return f32_to_f16(std::uniform_real_distribution<float>(-0.05f, 0.05f)(rng));
}

double exact_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Magnitude for K-quants: the two parts of each decoded weight taken separately.
template <class Block>
double k_magnitude(const std::vector<Block>& w, const std::vector<float>& act) {
  double m = 0.0;
  for (size_t b = 0; b < w.size(); ++b) {
    for (int e = 0; e < 256; ++e) {
      double scale_part = 0.0, min_part = 0.0;
      if constexpr (std::is_same_v<Block, BlockQ2_K>) {
        const Q2KPosition p = q2_k_position(e);
        const int q = (w[b].qs[p.byte] >> p.shift) & 3;
        scale_part = std::fabs(f16_to_f32(w[b].d)) * (w[b].scales[p.sub_block] & 15) * q;
        min_part = std::fabs(f16_to_f32(w[b].dmin)) * (w[b].scales[p.sub_block] >> 4);
      } else {
        const Q4KPosition p = q4_k_position(e);
        const int q = p.high ? w[b].qs[p.byte] >> 4 : w[b].qs[p.byte] & 15;
        const ScaleMin sm = q4_k_scale_min(w[b].scales, p.sub_block);
        scale_part = std::fabs(f16_to_f32(w[b].d)) * sm.scale * q;
        min_part = std::fabs(f16_to_f32(w[b].dmin)) * sm.min;
      }
      m += std::fabs(act[b * 256 + static_cast<size_t>(e)]) * (scale_part + min_part);
    }
  }
  return m;
}

double abs_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(static_cast<double>(a[i]) * b[i]);
  return s;
}

// Protects: each reference dot computes the dot of the dequantised weights with the dequantised
// activations (the block formulas of §3.3 are the §3.2 decoders multiplied out).
TEST(QuantDotReference, AgreesWithDequantizedDoubleDot) {
  std::mt19937 rng(1);
  const DotKernels& ref = reference_dot_kernels();
  for (int c = 0; c < kCases; ++c) {
    const int64_t nb = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    const int64_t n = nb * 256;
    std::vector<BlockQ8_K> act = random_blocks<BlockQ8_K>(nb, rng, testing::random_q8_k);
    std::vector<float> a(static_cast<size_t>(n)), w(static_cast<size_t>(n));
    dequantize_row_q8_k(act.data(), a.data(), n);

    auto q2 = random_blocks<BlockQ2_K>(nb, rng, testing::random_q2_k);
    for (auto& b : q2) b.d = moderate_f16(rng), b.dmin = moderate_f16(rng);
    dequantize_row_q2_k(q2.data(), w.data(), n);
    EXPECT_NEAR(ref.q2_k(q2.data(), act.data(), nb), exact_dot(w, a),
                ref_vs_exact_tol(nb, k_magnitude(q2, a)))
        << "q2_k case " << c;

    auto q4 = random_blocks<BlockQ4_K>(nb, rng, testing::random_q4_k);
    for (auto& b : q4) b.d = moderate_f16(rng), b.dmin = moderate_f16(rng);
    dequantize_row_q4_k(q4.data(), w.data(), n);
    EXPECT_NEAR(ref.q4_k(q4.data(), act.data(), nb), exact_dot(w, a),
                ref_vs_exact_tol(nb, k_magnitude(q4, a)))
        << "q4_k case " << c;

    auto iq = random_blocks<BlockIQ2_XXS>(nb, rng, testing::random_iq2_xxs);
    for (auto& b : iq) b.d = moderate_f16(rng);
    dequantize_row_iq2_xxs(iq.data(), w.data(), n);
    EXPECT_NEAR(ref.iq2_xxs(iq.data(), act.data(), nb), exact_dot(w, a),
                ref_vs_exact_tol(nb, abs_dot(w, a)))
        << "iq2_xxs case " << c;

    const int64_t nb8 = nb * 8;
    auto q8 = random_blocks<BlockQ8_0>(nb8, rng, testing::random_q8_0);
    for (auto& b : q8) b.d = moderate_f16(rng);
    auto act8 = random_blocks<ActQ8_0>(nb8, rng, testing::random_act_q8_0);
    std::vector<float> a8(static_cast<size_t>(n));
    for (int64_t b = 0; b < nb8; ++b) {
      for (int i = 0; i < 32; ++i) a8[static_cast<size_t>(b * 32 + i)] = act8[b].d * act8[b].qs[i];
    }
    dequantize_row_q8_0(q8.data(), w.data(), n);
    EXPECT_NEAR(ref.q8_0(q8.data(), act8.data(), nb8), exact_dot(w, a8),
                ref_vs_exact_tol(nb8, abs_dot(w, a8)))
        << "q8_0 case " << c;
  }
}

// Protects: the F16 and F32 references accumulate exactly as specified (float in index order;
// double then one rounding).
TEST(QuantDotReference, FloatKernelsFollowTheirAccumulationOrder) {
  std::mt19937 rng(2);
  const std::vector<float> x = testing::gaussian(1000, 9);
  std::vector<uint16_t> wh(1000);
  std::vector<float> wf(1000);
  for (size_t i = 0; i < wh.size(); ++i) {
    wh[i] = testing::random_finite_f16(rng) & 0xBFFF;  // exponent < 16: |w| < 2
    wf[i] = f16_to_f32(wh[i]);
  }
  double dacc = 0.0;
  for (size_t i = 0; i < wh.size(); ++i) dacc += static_cast<double>(wf[i]) * x[i];
  // Both float formats: exact products summed in double in index order, rounded once.
  EXPECT_TRUE(same_bits(dot_f16_ref(wh.data(), x.data(), 1000), static_cast<float>(dacc)));
  EXPECT_TRUE(same_bits(dot_f32_ref(wf.data(), x.data(), 1000), static_cast<float>(dacc)));
}

// The fast tables under test, by name; a table this build or CPU lacks is skipped.
const DotKernels* fast_table(const std::string& name) {
  if (name == "avx2") return avx2_dot_kernels();
  if (name == "avx512") return avx512_dot_kernels();
  return nullptr;
}

class QuantDotConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fast_ = fast_table(GetParam());
    if (fast_ == nullptr) GTEST_SKIP() << "no " << GetParam() << " kernels on this CPU or build";
    ASSERT_EQ(std::string(fast_->name), GetParam());
  }
  const DotKernels& ref_ = reference_dot_kernels();
  const DotKernels* fast_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(FastTables, QuantDotConformance, ::testing::Values("avx2", "avx512"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Protects: bit-identical results of the fast quantised dots over random valid blocks with any
// finite f16 scales (zero, subnormal, negative, large) and lengths that exercise every tail.
TEST_P(QuantDotConformance, QuantisedKernelsAreBitExact) {
  std::mt19937 rng(3);
  for (int c = 0; c < kCases; ++c) {
    const int64_t nb = std::uniform_int_distribution<int64_t>(0, 24)(rng);
    const auto act = random_blocks<BlockQ8_K>(nb, rng, testing::random_q8_k);
    const auto q2 = random_blocks<BlockQ2_K>(nb, rng, testing::random_q2_k);
    const auto q4 = random_blocks<BlockQ4_K>(nb, rng, testing::random_q4_k);
    const auto iq = random_blocks<BlockIQ2_XXS>(nb, rng, testing::random_iq2_xxs);
    const float r2 = ref_.q2_k(q2.data(), act.data(), nb);
    const float f2 = fast_->q2_k(q2.data(), act.data(), nb);
    EXPECT_TRUE(same_bits(r2, f2)) << "q2_k case " << c << ": " << r2 << " vs " << f2;
    const float r4 = ref_.q4_k(q4.data(), act.data(), nb);
    const float f4 = fast_->q4_k(q4.data(), act.data(), nb);
    EXPECT_TRUE(same_bits(r4, f4)) << "q4_k case " << c << ": " << r4 << " vs " << f4;
    const float ri = ref_.iq2_xxs(iq.data(), act.data(), nb);
    const float fi = fast_->iq2_xxs(iq.data(), act.data(), nb);
    EXPECT_TRUE(same_bits(ri, fi)) << "iq2_xxs case " << c << ": " << ri << " vs " << fi;

    const int64_t nb8 = std::uniform_int_distribution<int64_t>(0, 150)(rng);
    const auto q8 = random_blocks<BlockQ8_0>(nb8, rng, testing::random_q8_0);
    const auto act8 = random_blocks<ActQ8_0>(nb8, rng, testing::random_act_q8_0);
    const float r8 = ref_.q8_0(q8.data(), act8.data(), nb8);
    const float f8 = fast_->q8_0(q8.data(), act8.data(), nb8);
    EXPECT_TRUE(same_bits(r8, f8)) << "q8_0 case " << c << ": " << r8 << " vs " << f8;
  }
}

// Protects: bit-identical results at the block counts around the kernels' batch and unroll
// boundaries (the AVX-512 kernels reduce 16 blocks at a time; AVX2 Q8_0 takes 8).
TEST_P(QuantDotConformance, BlockCountsAreBitExact) {
  std::mt19937 rng(5);
  for (const int64_t nb : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48}) {
    for (int rep = 0; rep < 4; ++rep) {
      const auto act = random_blocks<BlockQ8_K>(nb, rng, testing::random_q8_k);
      const auto q2 = random_blocks<BlockQ2_K>(nb, rng, testing::random_q2_k);
      const auto q4 = random_blocks<BlockQ4_K>(nb, rng, testing::random_q4_k);
      const auto iq = random_blocks<BlockIQ2_XXS>(nb, rng, testing::random_iq2_xxs);
      EXPECT_TRUE(
          same_bits(ref_.q2_k(q2.data(), act.data(), nb), fast_->q2_k(q2.data(), act.data(), nb)))
          << "q2_k, " << nb << " blocks";
      EXPECT_TRUE(
          same_bits(ref_.q4_k(q4.data(), act.data(), nb), fast_->q4_k(q4.data(), act.data(), nb)))
          << "q4_k, " << nb << " blocks";
      EXPECT_TRUE(same_bits(ref_.iq2_xxs(iq.data(), act.data(), nb),
                            fast_->iq2_xxs(iq.data(), act.data(), nb)))
          << "iq2_xxs, " << nb << " blocks";
      const int64_t nb8 = 8 * nb;
      const auto q8 = random_blocks<BlockQ8_0>(nb8, rng, testing::random_q8_0);
      const auto act8 = random_blocks<ActQ8_0>(nb8, rng, testing::random_act_q8_0);
      EXPECT_TRUE(same_bits(ref_.q8_0(q8.data(), act8.data(), nb8),
                            fast_->q8_0(q8.data(), act8.data(), nb8)))
          << "q8_0, " << nb8 << " blocks";
    }
  }
}

// Protects: the extremes of the integer paths: codes -128 in Q8_0 weights, activations at
// +-127, uniform bit patterns in every weight byte (all-ones = largest codes, scales and mins;
// all-zeros; alternating), over one block and over a batch plus a tail (17 blocks).
TEST_P(QuantDotConformance, ExtremeCodesAreBitExact) {
  std::vector<BlockQ8_0> q8(9);
  std::vector<ActQ8_0> a8(9);
  for (size_t b = 0; b < q8.size(); ++b) {
    q8[b].d = 0x3C00;
    a8[b].d = 1.0f;
    for (int i = 0; i < 32; ++i) {
      q8[b].qs[i] = -128;
      a8[b].qs[i] = (i + static_cast<int>(b)) % 2 ? 127 : -127;
    }
  }
  EXPECT_TRUE(same_bits(ref_.q8_0(q8.data(), a8.data(), 9), fast_->q8_0(q8.data(), a8.data(), 9)));
  constexpr int64_t kBlocks = 17;
  for (int act_pattern = 0; act_pattern < 3; ++act_pattern) {
    std::vector<BlockQ8_K> act(kBlocks);
    for (BlockQ8_K& a : act) {
      a.d = 1.0f;
      for (int i = 0; i < 256; ++i) {
        a.qs[i] = act_pattern == 0 ? (i % 3 ? 127 : -127) : (act_pattern == 1 ? 127 : -127);
      }
      for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int i = 0; i < 16; ++i) s += a.qs[16 * g + i];
        a.bsums[g] = static_cast<int16_t>(s);
      }
    }
    for (const int byte : {0xFF, 0x00, 0xAA, 0x55}) {
      std::vector<BlockQ2_K> q2(kBlocks);
      std::vector<BlockQ4_K> q4(kBlocks);
      std::vector<BlockIQ2_XXS> iq(kBlocks);
      std::memset(q2.data(), byte, q2.size() * sizeof(BlockQ2_K));
      std::memset(q4.data(), byte, q4.size() * sizeof(BlockQ4_K));
      std::memset(iq.data(), byte, iq.size() * sizeof(BlockIQ2_XXS));
      for (auto& b : q2) b.d = b.dmin = 0x3C00;
      for (auto& b : q4) b.d = b.dmin = 0x3C00;
      for (auto& b : iq) b.d = 0x3C00;
      for (const int64_t nb : {int64_t{1}, kBlocks}) {
        EXPECT_TRUE(
            same_bits(ref_.q2_k(q2.data(), act.data(), nb), fast_->q2_k(q2.data(), act.data(), nb)))
            << "q2_k, byte " << byte << ", activations " << act_pattern << ", " << nb;
        EXPECT_TRUE(
            same_bits(ref_.q4_k(q4.data(), act.data(), nb), fast_->q4_k(q4.data(), act.data(), nb)))
            << "q4_k, byte " << byte << ", activations " << act_pattern << ", " << nb;
        EXPECT_TRUE(same_bits(ref_.iq2_xxs(iq.data(), act.data(), nb),
                              fast_->iq2_xxs(iq.data(), act.data(), nb)))
            << "iq2_xxs, byte " << byte << ", activations " << act_pattern << ", " << nb;
      }
    }
  }
}

// Protects: every IQ2_XXS codebook entry, sign pattern and scale reaches the fast kernel's
// lookups correctly (random blocks hit each only by chance).
TEST_P(QuantDotConformance, EveryIq2CodebookEntryAndSignIsBitExact) {
  std::mt19937 rng(6);
  const std::vector<BlockQ8_K> act = random_blocks<BlockQ8_K>(1, rng, testing::random_q8_k);
  for (int e = 0; e < 256; ++e) {
    BlockIQ2_XXS b = testing::random_iq2_xxs(rng);
    b.d = 0x3C00;
    for (int ib32 = 0; ib32 < 8; ++ib32) {
      Iq2xxsGroup g{};
      for (int k = 0; k < 4; ++k) {
        g.grid[k] = static_cast<uint8_t>(e + 64 * k + ib32);
        g.signs[k] = static_cast<uint8_t>((e + 32 * k + ib32) & 127);
      }
      g.scale = static_cast<uint8_t>((e + ib32) & 15);
      set_iq2xxs_group(b, ib32, g);
    }
    EXPECT_TRUE(same_bits(ref_.iq2_xxs(&b, act.data(), 1), fast_->iq2_xxs(&b, act.data(), 1)))
        << "entry " << e;
  }
}

// Multi-row entry `rows` over n_rows random rows of nb blocks vs the reference single-row dot
// `one`, row by row, bit for bit; the output slot after the last row must stay untouched.
template <class Block, class Rows, class One>
void expect_rows_bit_exact(const char* name, Rows rows, One one, Block (*make)(std::mt19937&),
                           int64_t nb, int64_t n_rows, std::mt19937& rng) {
  const auto act = random_blocks<BlockQ8_K>(nb, rng, testing::random_q8_k);
  const auto w = random_blocks<Block>(nb * n_rows, rng, make);
  constexpr uint32_t kSentinel = 0x7FC01234u;  // a NaN no kernel produces
  std::vector<float> y(static_cast<size_t>(n_rows) + 1, std::bit_cast<float>(kSentinel));
  rows(w.data(), act.data(), nb, n_rows, y.data());
  for (int64_t r = 0; r < n_rows; ++r) {
    EXPECT_TRUE(same_bits(y[r], one(w.data() + r * nb, act.data(), nb)))
        << name << ": row " << r << " of " << n_rows << ", " << nb << " blocks";
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(y[n_rows]), kSentinel) << name << ": wrote past the rows";
}

// Protects: the multi-row entries (one block stream over all rows, wrapping the activation at
// each row end) give every row the single-row result, for short and long rows, row counts that
// do and do not fill a 16-block batch, and empty inputs.
TEST_P(QuantDotConformance, MultiRowEntriesAreBitExactPerRow) {
  std::mt19937 rng(8);
  for (const int64_t nb : {0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 33}) {
    for (const int64_t n_rows : {0, 1, 2, 3, 7, 16, 17, 40}) {
      expect_rows_bit_exact<BlockQ2_K>("q2_k", fast_->q2_k_rows, ref_.q2_k, testing::random_q2_k,
                                       nb, n_rows, rng);
      expect_rows_bit_exact<BlockQ4_K>("q4_k", fast_->q4_k_rows, ref_.q4_k, testing::random_q4_k,
                                       nb, n_rows, rng);
      expect_rows_bit_exact<BlockIQ2_XXS>("iq2_xxs", fast_->iq2_xxs_rows, ref_.iq2_xxs,
                                          testing::random_iq2_xxs, nb, n_rows, rng);
    }
  }
}

// Protects: the reference table's multi-row entries are its single-row dots, row by row.
TEST(QuantDotReference, MultiRowEntriesAreTheSingleRowDots) {
  const DotKernels& ref = reference_dot_kernels();
  std::mt19937 rng(9);
  for (const int64_t nb : {0, 1, 3}) {
    for (const int64_t n_rows : {0, 1, 5}) {
      expect_rows_bit_exact<BlockQ2_K>("q2_k", ref.q2_k_rows, ref.q2_k, testing::random_q2_k, nb,
                                       n_rows, rng);
      expect_rows_bit_exact<BlockQ4_K>("q4_k", ref.q4_k_rows, ref.q4_k, testing::random_q4_k, nb,
                                       n_rows, rng);
      expect_rows_bit_exact<BlockIQ2_XXS>("iq2_xxs", ref.iq2_xxs_rows, ref.iq2_xxs,
                                          testing::random_iq2_xxs, nb, n_rows, rng);
    }
  }
}

// Protects: the float kernels stay within their named reordering tolerances.
TEST_P(QuantDotConformance, FloatKernelsWithinReorderTolerance) {
  std::mt19937 rng(4);
  for (int c = 0; c < kCases; ++c) {
    const int64_t n = std::uniform_int_distribution<int64_t>(0, 1100)(rng);
    const std::vector<float> x = testing::gaussian(n, 500 + c);
    const std::vector<float> wf = testing::gaussian(n, 900 + c, 0.1f);
    std::vector<uint16_t> wh(static_cast<size_t>(n));
    double sum_abs_h = 0.0, sum_abs_f = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      wh[i] = f32_to_f16(wf[i]);
      sum_abs_h += std::fabs(static_cast<double>(f16_to_f32(wh[i])) * x[i]);
      sum_abs_f += std::fabs(static_cast<double>(wf[i]) * x[i]);
    }
    const float rh = ref_.f16(wh.data(), x.data(), n);
    EXPECT_NEAR(fast_->f16(wh.data(), x.data(), n), rh, f32_reorder_tol(n, sum_abs_h, rh)) << n;
    const float rf = ref_.f32(wf.data(), x.data(), n);
    EXPECT_NEAR(fast_->f32(wf.data(), x.data(), n), rf, f32_reorder_tol(n, sum_abs_f, rf)) << n;
  }
}

// Protects: the runtime choice prefers AVX-512, then AVX2, then the reference; AVX-512 is never
// offered without AVX2 (its table reuses AVX2 entries).
TEST(QuantDotSelection, BestIsTheWidestAvailable) {
  const DotKernels& best = best_dot_kernels();
  if (avx512_dot_kernels() != nullptr) {
    EXPECT_EQ(&best, avx512_dot_kernels());
    EXPECT_NE(avx2_dot_kernels(), nullptr);
    EXPECT_STREQ(best.name, "avx512");
  } else if (avx2_dot_kernels() != nullptr) {
    EXPECT_EQ(&best, avx2_dot_kernels());
    EXPECT_STREQ(best.name, "avx2");
  } else {
    EXPECT_EQ(&best, &reference_dot_kernels());
  }
}

// Protects: matvec quantises x with the right activation rule, walks rows with the right stride,
// and threading does not change results (bit-exact for every format, since each row's dot is
// computed by one thread).
TEST(QuantMatvec, MatchesPerRowReferenceWithAndWithoutThreads) {
  const int64_t rows = 37, cols = 512;
  const std::vector<float> wsrc = testing::gaussian(rows * cols, 21, 0.05f);
  const std::vector<float> x = testing::gaussian(cols, 22);
  base::ThreadPool pool(2);
  for (GgufType t : {GgufType::kF32, GgufType::kF16, GgufType::kQ8_0, GgufType::kQ2_K,
                     GgufType::kQ4_K, GgufType::kIQ2_XXS}) {
    const auto info = gguf::type_info(static_cast<uint32_t>(t));
    const size_t row_bytes = cols / info->block_elems * info->block_bytes;
    // Float formats from real values; quantised ones as random valid blocks (cheaper than the
    // encoders in sanitizer builds, and matvec must not care how the blocks were made).
    std::vector<uint8_t> w(row_bytes * rows);
    std::mt19937 rng(static_cast<uint32_t>(t));
    auto fill = [&](auto gen, auto block) {
      using Block = decltype(block);
      const auto blocks =
          random_blocks<Block>(static_cast<int64_t>(w.size() / sizeof(Block)), rng, gen);
      std::memcpy(w.data(), blocks.data(), w.size());
    };
    switch (t) {
      case GgufType::kQ8_0: fill(testing::random_q8_0, BlockQ8_0{}); break;
      case GgufType::kQ2_K: fill(testing::random_q2_k, BlockQ2_K{}); break;
      case GgufType::kQ4_K: fill(testing::random_q4_k, BlockQ4_K{}); break;
      case GgufType::kIQ2_XXS: fill(testing::random_iq2_xxs, BlockIQ2_XXS{}); break;
      default: ASSERT_TRUE(quantize_rows(t, wsrc.data(), w.data(), rows, cols, nullptr).is_ok());
    }
    std::vector<float> expect(rows);
    std::vector<ActQ8_0> a8(cols / 32);
    std::vector<BlockQ8_K> ak(cols / 256);
    quantize_act_q8_0(x.data(), a8.data(), cols);
    quantize_act_q8_k(x.data(), ak.data(), cols);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* row = w.data() + r * row_bytes;
      switch (t) {
        case GgufType::kF32:
          expect[r] = dot_f32_ref(reinterpret_cast<const float*>(row), x.data(), cols);
          break;
        case GgufType::kF16:
          expect[r] = dot_f16_ref(reinterpret_cast<const uint16_t*>(row), x.data(), cols);
          break;
        case GgufType::kQ8_0:
          expect[r] = dot_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(row), a8.data(), cols / 32);
          break;
        case GgufType::kQ2_K:
          expect[r] = dot_q2_k_ref(reinterpret_cast<const BlockQ2_K*>(row), ak.data(), 2);
          break;
        case GgufType::kQ4_K:
          expect[r] = dot_q4_k_ref(reinterpret_cast<const BlockQ4_K*>(row), ak.data(), 2);
          break;
        default:
          expect[r] = dot_iq2_xxs_ref(reinterpret_cast<const BlockIQ2_XXS*>(row), ak.data(), 2);
          break;
      }
    }
    std::vector<float> y(rows), y_pool(rows), y_best(rows);
    ASSERT_TRUE(
        matvec(reference_dot_kernels(), t, w.data(), rows, cols, x.data(), y.data(), nullptr)
            .is_ok());
    ASSERT_TRUE(
        matvec(reference_dot_kernels(), t, w.data(), rows, cols, x.data(), y_pool.data(), &pool)
            .is_ok());
    ASSERT_TRUE(matvec(best_dot_kernels(), t, w.data(), rows, cols, x.data(), y_best.data(), &pool)
                    .is_ok());
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(same_bits(y[r], expect[r])) << gguf::to_string(t) << " row " << r;
      EXPECT_TRUE(same_bits(y_pool[r], expect[r])) << gguf::to_string(t) << " row " << r;
      if (t != GgufType::kF16 && t != GgufType::kF32) {
        EXPECT_TRUE(same_bits(y_best[r], expect[r])) << gguf::to_string(t) << " row " << r;
      }
    }
  }
}

// Protects: the Status contract of matvec().
TEST(QuantMatvec, ErrorsAreStatuses) {
  float x[256] = {}, y[1];
  uint8_t w[512] = {};
  EXPECT_EQ(matvec(reference_dot_kernels(), GgufType::kBF16, w, 1, 256, x, y, nullptr).code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(matvec(reference_dot_kernels(), GgufType::kQ4_K, w, 1, 100, x, y, nullptr).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ds4::quant
