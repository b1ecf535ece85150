// src/backend/frontier.h: host-side rules for compressor frontier tensors [R][W] (model.md §4.7),
// shared by the backends: the empty state (kv 0, score -1e30) and the normalisation of rows that
// hold no live data after n tokens, so equal logical states export equal bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ds4::backend {

inline constexpr float kFrontierEmptyScore = -1.0e30f;

inline void reset_frontier_rows(std::vector<float>& kv, std::vector<float>& score, int row_begin,
                                int row_end, int width) {
  std::fill(kv.begin() + int64_t{row_begin} * width, kv.begin() + int64_t{row_end} * width, 0.0f);
  std::fill(score.begin() + int64_t{row_begin} * width, score.begin() + int64_t{row_end} * width,
            kFrontierEmptyScore);
}

// The rows of a frontier pair that hold nothing after n_tokens set empty, where the pair lies in
// a payload (any alignment; rows of `width` floats, kv at `kv` and score at `score`): ratio 4
// keeps rows 0..3 (previous window) and 4..4+rem-1, ratio 128 rows 0..rem-1.
inline void normalise_unused_rows(uint8_t* kv, uint8_t* score, int ratio, int width, int n_tokens) {
  const int rem = n_tokens % ratio;
  const int begin = ratio == 4 ? 4 + rem : rem, end = ratio == 4 ? 8 : ratio;
  const size_t row = sizeof(float) * static_cast<size_t>(width);
  std::vector<float> zeros(static_cast<size_t>(width), 0.0f);
  std::vector<float> empty(static_cast<size_t>(width), kFrontierEmptyScore);
  for (int r = begin; r < end; ++r) {
    std::memcpy(kv + static_cast<size_t>(r) * row, zeros.data(), row);
    std::memcpy(score + static_cast<size_t>(r) * row, empty.data(), row);
  }
}

}  // namespace ds4::backend
