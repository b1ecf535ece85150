// The forced tool-call block's shape: the canonical layout is accepted byte by byte, the text
// that is the only way on is determined (the whole opener of a named call), bytes that break the
// layout are refused, and completion() closes the block from any point with text the shape
// itself accepts.
#include "gen/dsml_shape.h"

#include <gtest/gtest.h>

namespace ds4::gen {
namespace {

const std::string kCall =
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris <b></｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

TEST(DsmlShape, AcceptsTheCanonicalBlockByteByByte) {
  DsmlShape s({"search", "get_weather"}, false);
  for (char c : kCall) ASSERT_TRUE(s.feed(std::string(1, c))) << c;
  EXPECT_TRUE(s.done());
}

TEST(DsmlShape, NamedChoiceDeterminesTheOpener) {
  DsmlShape named({"get_weather"}, true);
  EXPECT_EQ(named.determined(),
            "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n");
  DsmlShape required({"search", "get_weather"}, false);
  EXPECT_EQ(required.determined(), "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"");
  required.feed(required.determined());
  EXPECT_TRUE(required.accepts("get_"));
  EXPECT_FALSE(required.accepts("fetch"));  // not a declared tool
  required.feed("se");
  EXPECT_EQ(required.determined(), "arch\">\n");
}

TEST(DsmlShape, RefusesBrokenStructure) {
  DsmlShape s({"f"}, true);
  s.feed(s.determined());
  EXPECT_FALSE(s.accepts("hello"));
  EXPECT_FALSE(s.accepts("<｜DSML｜parameter name=\"\""));  // empty parameter name
  EXPECT_FALSE(s.accepts("<｜DSML｜parameter name=\"a\" string=\"maybe\">"));
  EXPECT_TRUE(s.accepts("<｜DSML｜parameter name=\"a\" string=\"false\">{\"x\": \"<y>\"}"));
  EXPECT_FALSE(s.feed("oops"));
  EXPECT_TRUE(s.broken());
  EXPECT_FALSE(s.accepts("</｜DSML｜invoke>"));
}

TEST(DsmlShape, OneCallClosesAfterTheFirstInvoke) {
  DsmlShape one({"f"}, true);
  one.feed(one.determined() + "</｜DSML｜invoke>");
  EXPECT_EQ(one.determined(), "\n</｜DSML｜tool_calls>");
  DsmlShape many({"f"}, false);
  many.feed(many.determined() + "</｜DSML｜invoke>");
  EXPECT_EQ(many.determined(), "\n");
  EXPECT_TRUE(many.accepts("\n<｜DSML｜invoke name=\"f\">\n"));
}

TEST(DsmlShape, CompletionClosesFromEveryPrefix) {
  for (size_t n = 0; n < kCall.size(); ++n) {
    DsmlShape s({"get_weather"}, true);
    ASSERT_TRUE(s.feed(kCall.substr(0, n)));
    const std::string rest = s.completion();
    ASSERT_TRUE(s.feed(rest)) << n << ": " << rest;
    EXPECT_TRUE(s.done()) << n;
  }
  DsmlShape s({"f"}, true);
  s.feed(s.determined());
  EXPECT_EQ(s.completion(), "</｜DSML｜invoke>\n</｜DSML｜tool_calls>");
  s.feed("<｜DSML｜parameter name=\"");
  EXPECT_EQ(s.completion(),
            "arguments\" string=\"true\"></｜DSML｜parameter>\n</｜DSML｜invoke>\n"
            "</｜DSML｜tool_calls>");
}

}  // namespace
}  // namespace ds4::gen
