// src/backend/cpu/indexer_scores.cpp: reference scores and the kernel choice.
#include "backend/cpu/indexer_scores.h"

#include <algorithm>

#include "base/cpu_features.h"

namespace ds4::backend::cpu {

#if defined(DS4_BACKEND_HAVE_AVX2)
void indexer_scores_avx2_impl(const float* keys, int64_t n_rows, const float* q, const float* w,
                              int n_head, float* scores);
#endif

void indexer_scores_ref(const float* keys, int64_t n_rows, const float* q, const float* w,
                        int n_head, float* scores) {
  for (int64_t c = 0; c < n_rows; ++c) {
    const float* key = keys + c * kIndexerKeyDim;
    float s = 0.0f;
    for (int h = 0; h < n_head; ++h) {
      const float* qh = q + h * kIndexerKeyDim;
      float dot = 0.0f;
      for (int d = 0; d < kIndexerKeyDim; ++d) dot += key[d] * qh[d];
      s += std::max(0.0f, dot) * w[h];
    }
    scores[c] = s;
  }
}

IndexerScoresFn indexer_scores_avx2() {
#if defined(DS4_BACKEND_HAVE_AVX2)
  const auto& f = base::cpu_features();
  return f.avx2 && f.fma ? &indexer_scores_avx2_impl : nullptr;
#else
  return nullptr;
#endif
}

IndexerScoresFn best_indexer_scores(int n_head) {
  static const IndexerScoresFn kAvx2 = indexer_scores_avx2();
  if (kAvx2 != nullptr && n_head % 8 == 0 && n_head <= 64) return kAvx2;
  return &indexer_scores_ref;
}

}  // namespace ds4::backend::cpu
