// src/backend/cpu/indexer_scores.h: the lightning indexer's score of every compressed row for one
// query (model.md §4.8 step 5): score[c] = sum_h max(0, key_c . q_h) * w_h.
// Owns: the scalar reference (the definition: float products, float sums, d then h in order) and
// an AVX2+FMA version (heads in 8-wide vectors, fused multiply-adds; agrees with the reference to
// float rounding, see indexer_scores_test.cpp), chosen once per process.
#pragma once

#include <cstdint>

namespace ds4::backend::cpu {

inline constexpr int kIndexerKeyDim = 128;

using IndexerScoresFn = void (*)(const float* keys, int64_t n_rows, const float* q, const float* w,
                                 int n_head, float* scores);

void indexer_scores_ref(const float* keys, int64_t n_rows, const float* q, const float* w,
                        int n_head, float* scores);
// nullptr when this build or CPU lacks AVX2+FMA.
IndexerScoresFn indexer_scores_avx2();
// The fastest available; the AVX2 one needs n_head to be a multiple of 8, at most 64.
IndexerScoresFn best_indexer_scores(int n_head);

}  // namespace ds4::backend::cpu
