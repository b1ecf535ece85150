// Protects: how the agent reads string-typed tool parameters (features.md §5.3): integers clamped
// to their range, the accepted spellings of booleans, and the fallback for anything else.
#include "agent/tool_args.h"

#include <gtest/gtest.h>

namespace ds4::agent {
namespace {

TEST(ToolArgs, IntegersAreClampedAndGarbageFallsBack) {
  EXPECT_EQ(parse_int_clamped("42", 7, 1, 100), 42);
  EXPECT_EQ(parse_int_clamped("  42 \n", 7, 1, 100), 42);
  EXPECT_EQ(parse_int_clamped("+42", 7, 1, 100), 42);
  EXPECT_EQ(parse_int_clamped("0", 7, 1, 100), 1);
  EXPECT_EQ(parse_int_clamped("-5", 7, 1, 100), 1);
  EXPECT_EQ(parse_int_clamped("1000", 7, 1, 100), 100);
  EXPECT_EQ(parse_int_clamped("99999999999999999999999", 7, 1, 100), 100);
  EXPECT_EQ(parse_int_clamped("-99999999999999999999999", 7, 1, 100), 1);
  EXPECT_EQ(parse_int_clamped("50.0", 7, 1, 100), 50);
  EXPECT_EQ(parse_int_clamped("1e3", 7, 1, 5000), 1000);
  EXPECT_EQ(parse_int_clamped("1e30", 7, 1, 5000), 5000);
  EXPECT_EQ(parse_int_clamped("", 7, 1, 100), 7);
  EXPECT_EQ(parse_int_clamped("ten", 7, 1, 100), 7);
  EXPECT_EQ(parse_int_clamped("12abc", 7, 1, 100), 7);
  EXPECT_EQ(parse_int_clamped("nan", 7, 1, 100), 7);
}

TEST(ToolArgs, BooleansTakeSixSpellingsElseTheDefault) {
  for (const char* t : {"true", "TRUE", "Yes", "1", " true "})
    EXPECT_TRUE(parse_bool(t, false)) << t;
  for (const char* f : {"false", "False", "NO", "0", "\tno\n"})
    EXPECT_FALSE(parse_bool(f, true)) << f;
  EXPECT_TRUE(parse_bool("maybe", true));
  EXPECT_FALSE(parse_bool("maybe", false));
  EXPECT_TRUE(parse_bool("", true));
  EXPECT_FALSE(parse_bool("2", false));
}

TEST(ToolArgs, ParamsAreLookedUpByNameFirstOneWins) {
  const ToolParams p = {{"n", "3"}, {"flag", "yes"}, {"n", "9"}, {"s", "text"}};
  EXPECT_EQ(int_param(p, "n", 1, 0, 10), 3);
  EXPECT_EQ(int_param(p, "absent", 5, 0, 10), 5);
  EXPECT_TRUE(bool_param(p, "flag", false));
  EXPECT_FALSE(bool_param(p, "absent", false));
  EXPECT_EQ(string_param(p, "s", "x"), "text");
  EXPECT_EQ(string_param(p, "absent", "x"), "x");
  EXPECT_EQ(find_param(p, "absent"), nullptr);
}

TEST(ToolArgs, ErrorsAreMarked) {
  const ToolResult e = tool_error("boom");
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.text, "Tool error: boom");
  EXPECT_TRUE(tool_ok("fine").ok);
}

}  // namespace
}  // namespace ds4::agent
