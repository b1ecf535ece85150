// The exact-replay map (features.md §2.4): every id of a turn finds the turn's block, the least
// recently used ids are dropped beyond the bound, and the sampled block is cut from the raw output
// with the whitespace before it (which rendering puts there too) and nothing after it.
#include "serve/replay_map.h"

#include <gtest/gtest.h>

#include <vector>

namespace ds4::serve {
namespace {

TEST(ReplayMap, RemembersEveryIdOfATurn) {
  ReplayMap m(10);
  const std::vector<std::string> ids{"call_a", "call_b"};
  m.remember(ids, "BLOCK");
  EXPECT_EQ(m.find("call_a"), "BLOCK");
  EXPECT_EQ(m.find("call_b"), "BLOCK");
  EXPECT_EQ(m.find("call_c"), std::nullopt);
}

TEST(ReplayMap, EvictsTheLeastRecentlyUsed) {
  ReplayMap m(2);
  m.remember(std::vector<std::string>{"1"}, "one");
  m.remember(std::vector<std::string>{"2"}, "two");
  EXPECT_TRUE(m.find("1"));  // touch: "2" is now the oldest
  m.remember(std::vector<std::string>{"3"}, "three");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.find("2"), std::nullopt);
  EXPECT_EQ(m.find("1"), "one");
  EXPECT_EQ(m.find("3"), "three");
}

TEST(ReplayMap, ZeroBoundRemembersNothing) {
  ReplayMap m(0);
  m.remember(std::vector<std::string>{"x"}, "b");
  EXPECT_EQ(m.find("x"), std::nullopt);
}

TEST(SampledToolBlock, CutsTheBlockWithItsLeadingWhitespace) {
  const std::string block =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n</｜DSML｜invoke>\n"
      "</｜DSML｜tool_calls>";
  EXPECT_EQ(sampled_tool_block("Sure." + block + "junk", false), block);
  EXPECT_EQ(sampled_tool_block("no calls here", false), "");
  EXPECT_EQ(sampled_tool_block("open only <｜DSML｜tool_calls>", false), "");
  // In thinking mode a block inside the reasoning is not a call.
  EXPECT_EQ(sampled_tool_block("plan" + block + "</think>ok" + block, true), block);
  EXPECT_EQ(sampled_tool_block("plan" + block, true), "");
}

}  // namespace
}  // namespace ds4::serve
