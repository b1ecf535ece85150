// Protects: ds4-loadgen's arithmetic on stream times (issue 55): the decode-phase aggregate counts
// only the time every client decodes and the tokens inside it; a stream frozen across a window is
// one gap overlapping it; percentiles are nearest-rank.
#include "apps/loadgen/stats.h"

#include <gtest/gtest.h>

namespace ds4::loadgen {
namespace {

TEST(LoadgenStats, PercentileIsNearestRank) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 50), 3);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 99), 5);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 0), 1);
}

TEST(LoadgenStats, TheDecodePhaseIsWhileEveryClientDecodes) {
  // Client A decodes from 1 s to 5 s, a token every 0.5 s; client B from 3 s to 7 s, a token every
  // second. Both decode from 3 s to 5 s: A's tokens at 3, 3.5, 4, 4.5 and 5 (the edges count)
  // and B's at 4 and 5 (its token at 3 opens its phase).
  DecodeTimes a{.tokens = {1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5}, .end = 5};
  DecodeTimes b{.tokens = {3, 4, 5, 6, 7}, .end = 7};
  const DecodePhase p = decode_phase({a, b}, 2);
  EXPECT_DOUBLE_EQ(p.seconds, 2.0);
  EXPECT_EQ(p.tokens, 5 + 2);
  EXPECT_DOUBLE_EQ(p.tokens_per_s(), 3.5);
  // One client: its whole phase.
  const DecodePhase one = decode_phase({a}, 1);
  EXPECT_DOUBLE_EQ(one.seconds, 4.0);
  EXPECT_EQ(one.tokens, 8);
  // Never together: nothing.
  DecodeTimes c{.tokens = {6, 7}, .end = 8};
  EXPECT_EQ(decode_phase({a, c}, 2).seconds, 0);
  EXPECT_EQ(decode_phase({a, c}, 2).tokens_per_s(), 0);
  // A client's requests one after another count as its phases in turn.
  DecodeTimes a2{.tokens = {5.5, 6.5}, .end = 7};
  EXPECT_DOUBLE_EQ(decode_phase({a, a2, b}, 2).seconds, 2.0 + 1.5);
}

TEST(LoadgenStats, GapsOverlappingAWindow) {
  // Frozen from 2 s to 9 s across the window [3, 8]: one 7 s gap; the gaps before and after do not
  // count; a second stream's gaps inside it do.
  DecodeTimes frozen{.tokens = {1, 2, 9, 10}, .end = 10};
  DecodeTimes steady{.tokens = {4, 5, 6, 9}, .end = 9};
  const std::vector<double> g = gaps_within({frozen, steady}, 3, 8);
  EXPECT_EQ(g, (std::vector<double>{7, 1, 1, 3}));
  EXPECT_TRUE(gaps_within({frozen}, 10.5, 11).empty());
}

}  // namespace
}  // namespace ds4::loadgen
