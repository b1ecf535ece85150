// src/backend/cuda/kernels/lane_rules_test.cpp: the batched compressor lane's index rules
// (lane_rules.h, used by kernels/attention.cu) replayed on the host against row-by-row processing,
// symbolically: frontier rows hold position ids instead of values. For random splits of a
// sequence into batches (single rows, odd sizes, 512-row runs) and both ratios, every window
// pooled inside a batch must read the same positions the row-by-row frontier holds at that
// boundary, and the frontier the batch leaves must equal the row-by-row one row for row. Runs
// without a GPU.
#include "backend/cuda/kernels/lane_rules.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ds4::backend::cuda::lane_rules {
namespace {

constexpr int kFresh = -1000;  // id of fresh frontier row r: kFresh - r

// Row-by-row frontier of position ids (backend/cpu/attention.cpp's compressor_step).
struct Sequential {
  int ratio;
  std::vector<int> rows;
  explicit Sequential(int r) : ratio(r), rows(r == 4 ? 8 : r) {
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = kFresh - static_cast<int>(i);
  }
  // Stores q; at a boundary returns true (the rows then hold the window being pooled).
  bool store(int q) {
    rows[ratio == 4 ? 4 + q % 4 : q % ratio] = q;
    return (q + 1) % ratio == 0;
  }
  void after_pool() {
    if (ratio == 4)
      for (int r = 0; r < 4; ++r) rows[r] = rows[4 + r];
  }
};

void check_batches(int ratio, const std::vector<int>& sizes) {
  Sequential seq(ratio);
  int p0 = 0;
  for (int n : sizes) {
    const std::vector<int> before = seq.rows;  // the frontier the batch starts from
    auto source = [&](int q) { return q >= p0 ? q : before[state_row(p0, ratio, q)]; };
    int w = 0;
    for (int q = p0; q < p0 + n; ++q) {
      if (!seq.store(q)) continue;
      ASSERT_LT(w, emitted(p0, n, ratio));
      const int pe = window_end(p0, ratio, w);
      ASSERT_EQ(pe, q) << "ratio " << ratio << " p0 " << p0 << " window " << w;
      ASSERT_EQ(window_start(p0, ratio, w), q + 1 - ratio);
      for (int r = 0; r < (ratio == 4 ? 4 : ratio); ++r) {
        if (ratio == 4) {
          ASSERT_EQ(seq.rows[r], source(pe - 7 + r)) << "prev row " << r << " p0 " << p0;
          ASSERT_EQ(seq.rows[4 + r], source(pe - 3 + r)) << "cur row " << r << " p0 " << p0;
        } else {
          ASSERT_EQ(seq.rows[r], source(pe - ratio + 1 + r)) << "row " << r << " p0 " << p0;
        }
      }
      seq.after_pool();
      ++w;
    }
    ASSERT_EQ(w, emitted(p0, n, ratio));
    // The frontier the batch leaves (lane_state_kernel's rule).
    const int end = p0 + n;
    std::vector<int> after = before;
    if (ratio == 4) {
      const int b = last_boundary(end);
      if (b >= p0)
        for (int s = 0; s < 4; ++s) after[s] = source(b - 3 + s);
      for (int s = 0; s < 4; ++s) {
        const int q = last_with_residue(end, 4, s);
        if (q >= p0) after[4 + s] = q;
      }
    } else {
      for (int i = 0; i < rewritten_rows(n, ratio); ++i) after[(end - 1 - i) % ratio] = end - 1 - i;
    }
    ASSERT_EQ(after, seq.rows) << "frontier after the batch at " << p0 << " of " << n;
    p0 = end;
  }
}

TEST(CudaLaneRules, BatchesReadAndLeaveWhatRowByRowProcessingDoes) {
  std::mt19937 rng(7);
  for (int ratio : {4, 128}) {
    check_batches(ratio, std::vector<int>(300, 1));                 // decode only
    check_batches(ratio, {512, 512, 1, 1, 3, 512, 130, 127, 129});  // prefill runs
    check_batches(ratio, {3, 1, 4, 4, 5, 8, 128, 256, 1, 255, 2});  // boundaries at every offset
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<int> sizes;
      std::uniform_int_distribution<int> size(1, trial % 2 == 0 ? 9 : 600);
      for (int total = 0; total < 3000;) total += sizes.emplace_back(size(rng));
      check_batches(ratio, sizes);
    }
  }
}

TEST(CudaLaneRules, LastWithResidueIsTheLatestMatchingPosition) {
  for (int ratio : {4, 128})
    for (int end = 0; end < 600; ++end)
      for (int r = 0; r < ratio; ++r) {
        int want = -1;
        for (int q = end - 1; q >= 0; --q)
          if (q % ratio == r) {
            want = q;
            break;
          }
        const int got = last_with_residue(end, ratio, r);
        ASSERT_EQ(got < 0 ? -1 : got, want) << "end " << end << " ratio " << ratio << " r " << r;
      }
}

}  // namespace
}  // namespace ds4::backend::cuda::lane_rules
