// src/backend/cpu/indexer_scores_test.cpp: the AVX2 indexer scores agree with the reference.
#include "backend/cpu/indexer_scores.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ds4::backend::cpu {
namespace {

// Both sum 128 products per head in d order; the AVX2 kernel fuses each multiply-add (one
// rounding instead of two) and sums the heads in another order. Relative to the sum of absolute
// terms, that differs by a few float ulps times the number of terms: 1e-5 bounds it with margin.
constexpr double kRelTol = 1e-5;

TEST(IndexerScores, Avx2MatchesReference) {
  const IndexerScoresFn fast = indexer_scores_avx2();
  if (fast == nullptr) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (int n_head : {8, 16, 64}) {
    for (int n_rows : {1, 7, 300}) {
      std::vector<float> keys(size_t(n_rows) * kIndexerKeyDim), q(size_t(n_head) * kIndexerKeyDim),
          w(n_head);
      for (float& v : keys) v = nd(rng);
      for (float& v : q) v = nd(rng);
      for (float& v : w) v = nd(rng) * 0.05f;
      std::vector<float> a(n_rows), b(n_rows);
      indexer_scores_ref(keys.data(), n_rows, q.data(), w.data(), n_head, a.data());
      fast(keys.data(), n_rows, q.data(), w.data(), n_head, b.data());
      for (int c = 0; c < n_rows; ++c) {
        double scale = 0.0;  // sum of |terms|
        for (int h = 0; h < n_head; ++h) {
          double mag = 0.0;
          for (int d = 0; d < kIndexerKeyDim; ++d) {
            mag += std::fabs(double(keys[c * kIndexerKeyDim + d]) * q[h * kIndexerKeyDim + d]);
          }
          scale += mag * std::fabs(w[h]);
        }
        EXPECT_NEAR(a[c], b[c], kRelTol * scale) << "heads " << n_head << " row " << c;
      }
    }
  }
}

TEST(IndexerScores, ReferenceIsTheDefinition) {
  // Two heads, hand-computed: negative dots are clamped to zero before weighting.
  std::vector<float> key(kIndexerKeyDim, 0.0f), q(2 * kIndexerKeyDim, 0.0f);
  key[0] = 2.0f;
  key[5] = 1.0f;
  q[0] = 1.5f;                    // head 0: dot = 3
  q[kIndexerKeyDim + 5] = -4.0f;  // head 1: dot = -4 -> 0
  const float w[2] = {0.5f, 10.0f};
  float s = 0.0f;
  indexer_scores_ref(key.data(), 1, q.data(), w, 2, &s);
  EXPECT_FLOAT_EQ(s, 1.5f);
  EXPECT_EQ(best_indexer_scores(2), &indexer_scores_ref);  // not a multiple of 8
}

}  // namespace
}  // namespace ds4::backend::cpu
