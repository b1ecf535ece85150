// Stop strings (features.md §1.7): the earliest match of any stop string ends the output, even
// when it straddles chunks, and no byte at or after the match is ever released.
#include "gen/stop_matcher.h"

#include <gtest/gtest.h>

namespace ds4::gen {
namespace {

std::string run(StopMatcher& m, std::initializer_list<std::string_view> chunks) {
  std::string out;
  for (auto c : chunks) out += m.feed(c);
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesEverythingAtOnce) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.hit());
}

TEST(StopMatcher, MatchAcrossChunksTruncates) {
  StopMatcher m({"END"});
  EXPECT_EQ(run(m, {"hello E", "N", "D and more"}), "hello ");
  EXPECT_TRUE(m.hit());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.feed("later"), "");
}

TEST(StopMatcher, HoldsBackOnlyAPossibleStart) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("abcdef"), "abc");  // the last len("STOP") - 1 bytes wait for more
  EXPECT_EQ(m.feed("g"), "d");
  EXPECT_EQ(m.flush(), "efg");
  EXPECT_FALSE(m.hit());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w", ""});
  EXPECT_EQ(run(m, {"hel", "lo world"}), "hel");
  EXPECT_TRUE(m.hit());
}

TEST(StopMatcher, NeverSplitsAUtf8Character) {
  StopMatcher m({"xyz"});
  // "é" is two bytes; a 2-byte hold-back would otherwise cut between them.
  const std::string out = m.feed("a\xc3\xa9");
  EXPECT_EQ(out, "a");
  EXPECT_EQ(m.flush(), "\xc3\xa9");
}

}  // namespace
}  // namespace ds4::gen
