// The exact-replay map (features.md §2.4): every id of a turn finds the turn's block, the least
// recently used ids are dropped beyond the bound, and the sampled block is cut from the raw output
// with the whitespace before it (which rendering puts there too) and nothing after it. The
// entries a cache file carries (entries_in): blocks in its text, or whose opening ends it.
#include "serve/replay_map.h"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(ReplayMap, EntriesInATextAreTheBlocksItCarries) {
  const std::string a =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke "
      "name=\"a\">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  const std::string b =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke "
      "name=\"b\">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  ReplayMap m(10);
  m.remember(std::vector<std::string>{"call_a1", "call_a2"}, a);
  m.remember(std::vector<std::string>{"call_b"}, b);
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  auto sorted = [](Pairs p) {
    std::sort(p.begin(), p.end());
    return p;
  };
  // Verbatim: both ids of the turn.
  EXPECT_EQ(sorted(m.entries_in("<user>hi" + a + "<eos><user>ok")),
            (Pairs{{"call_a1", a}, {"call_a2", a}}));
  // A checkpoint that stops before the block's last token still carries it.
  EXPECT_EQ(m.entries_in("<user>hi" + b.substr(0, b.size() - 3)), (Pairs{{"call_b", b}}));
  // Not through the opening tag: not carried.
  EXPECT_TRUE(m.entries_in("<user>hi\n\n<｜DSML｜tool").empty());
  EXPECT_TRUE(m.entries_in("no tool calls at all").empty());
}

}  // namespace
}  // namespace ds4::serve
