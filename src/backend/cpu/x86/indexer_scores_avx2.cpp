// src/backend/cpu/x86/indexer_scores_avx2.cpp: AVX2+FMA indexer scores. The query heads are
// transposed once to [d][h] so one broadcast key element feeds 8 heads per instruction; each row
// costs 128 x n_head/8 fused multiply-adds and one horizontal sum. Built with -mavx2 -mfma.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/indexer_scores.h"

namespace ds4::backend::cpu {

void indexer_scores_avx2_impl(const float* keys, int64_t n_rows, const float* q, const float* w,
                              int n_head, float* scores) {
  constexpr int kD = kIndexerKeyDim;
  const int nv = n_head / 8;  // <= 8
  alignas(32) float qt[kD * 64];
  for (int h = 0; h < n_head; ++h) {
    for (int d = 0; d < kD; ++d) qt[d * n_head + h] = q[h * kD + d];
  }
  __m256 wv[8];
  for (int j = 0; j < nv; ++j) wv[j] = _mm256_loadu_ps(w + 8 * j);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t c = 0; c < n_rows; ++c) {
    const float* key = keys + c * kD;
    __m256 acc[8];
    for (int j = 0; j < nv; ++j) acc[j] = zero;
    for (int d = 0; d < kD; ++d) {
      const __m256 kd = _mm256_broadcast_ss(key + d);
      const float* row = qt + d * n_head;
      for (int j = 0; j < nv; ++j)
        acc[j] = _mm256_fmadd_ps(kd, _mm256_load_ps(row + 8 * j), acc[j]);
    }
    __m256 s = zero;
    for (int j = 0; j < nv; ++j) s = _mm256_fmadd_ps(_mm256_max_ps(acc[j], zero), wv[j], s);
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    scores[c] = _mm_cvtss_f32(lo);
  }
}

}  // namespace ds4::backend::cpu
