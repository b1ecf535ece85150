// The forced-greedy tracker (features.md §2.5): structure inside a tool-call block is greedy,
// string bodies and JSON string literals are payload (sampled), a partial closing tag is
// structure again, text before or after the block is free, and DSML inside reasoning is not a
// block. Fed byte by byte, so markers split across tokens are covered.
#include "serve/dsml_syntax.h"

#include <gtest/gtest.h>

namespace ds4::serve {
namespace {

// greedy() after each prefix that ends right after `upto`.
bool greedy_after(bool thinking, const std::string& text, const std::string& upto) {
  const size_t end = text.find(upto);
  EXPECT_NE(end, std::string::npos) << upto;
  DsmlSyntax d(thinking);
  for (size_t i = 0; i < end + upto.size(); ++i) d.feed(text.substr(i, 1));
  return d.greedy();
}

const std::string kBlock =
    "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n"
    "<｜DSML｜parameter name=\"path\" string=\"true\">a<b.txt</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"opts\" string=\"false\">{\"k\": \"x</｜DSML｜y\", \"n\": 1}"
    "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>after";

TEST(DsmlSyntax, StructureIsGreedyPayloadIsSampled) {
  EXPECT_FALSE(greedy_after(false, kBlock, "Checking."));
  EXPECT_TRUE(greedy_after(false, kBlock, "<｜DSML｜tool_calls>"));
  EXPECT_TRUE(greedy_after(false, kBlock, "invoke name=\"f"));
  EXPECT_FALSE(greedy_after(false, kBlock, "string=\"true\">"));
  EXPECT_FALSE(greedy_after(false, kBlock, "a<b"));       // a lone '<' is still payload
  EXPECT_TRUE(greedy_after(false, kBlock, "a<b.txt</"));  // the closing tag begins
  EXPECT_TRUE(greedy_after(false, kBlock, "string=\"false\">"));
  EXPECT_FALSE(greedy_after(false, kBlock, "{\"k\": \"x"));
  EXPECT_FALSE(greedy_after(false, kBlock, "x</｜DSML｜y"));  // inside a JSON string
  EXPECT_TRUE(greedy_after(false, kBlock, "\"n\": 1"));
  EXPECT_TRUE(greedy_after(false, kBlock, "</｜DSML｜invoke>"));
  EXPECT_FALSE(greedy_after(false, kBlock, "</｜DSML｜tool_calls>"));
  EXPECT_FALSE(greedy_after(false, kBlock, "after"));
}

TEST(DsmlSyntax, ReasoningIsNeverABlock) {
  const std::string text = "plan <｜DSML｜tool_calls>\n</think>" + kBlock;
  EXPECT_FALSE(greedy_after(true, text, "plan <｜DSML｜tool_calls>\n"));
  EXPECT_TRUE(greedy_after(true, text, "</think>Checking.\n\n<｜DSML｜tool_calls>"));
}

TEST(DsmlSyntax, WholeChunksAndBytesAgree) {
  DsmlSyntax whole(false);
  whole.feed(kBlock.substr(0, kBlock.find("\"n\": 1") + 6));
  EXPECT_TRUE(whole.greedy());
  whole.feed(kBlock.substr(kBlock.find("\"n\": 1") + 6));
  EXPECT_FALSE(whole.greedy());
}

}  // namespace
}  // namespace ds4::serve
