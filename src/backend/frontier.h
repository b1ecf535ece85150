// src/backend/frontier.h: host-side rules for compressor frontier tensors [R][W] (model.md §4.7),
// shared by the backends: the empty state (kv 0, score -1e30) and the normalisation of rows that
// hold no live data after n tokens, so equal logical states export equal bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ds4::backend {

inline constexpr float kFrontierEmptyScore = -1.0e30f;

inline void reset_frontier_rows(std::vector<float>& kv, std::vector<float>& score, int row_begin,
                                int row_end, int width) {
  std::fill(kv.begin() + int64_t{row_begin} * width, kv.begin() + int64_t{row_end} * width, 0.0f);
  std::fill(score.begin() + int64_t{row_begin} * width, score.begin() + int64_t{row_end} * width,
            kFrontierEmptyScore);
}

// Ratio 4 keeps rows 0..3 (previous window) and 4..4+rem-1; ratio 128 keeps rows 0..rem-1.
inline void normalise_unused_rows(std::vector<float>& kv, std::vector<float>& score, int ratio,
                                  int width, int n_tokens) {
  const int rem = n_tokens % ratio;
  if (ratio == 4) {
    reset_frontier_rows(kv, score, 4 + rem, 8, width);
  } else {
    reset_frontier_rows(kv, score, rem, ratio, width);
  }
}

}  // namespace ds4::backend
