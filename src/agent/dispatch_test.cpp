// Protects: the tool table of the agent (features.md §5.3): parameters read from strings with
// their defaults and ranges, the errors for unknown tools and missing parameters, and the
// combined "Tool result i (name):" message of a round.
#include "agent/dispatch.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"

namespace ds4::agent {
namespace {

using testing::get_file;
using testing::put_file;
using testing::TempDir;

class DispatchTest : public ::testing::Test {
 protected:
  ToolResult run(std::string name, ToolParams params) {
    return run_tool(ctx, {std::move(name), std::move(params)});
  }
  TempDir dir;
  ToolContext ctx{{.workdir = dir.path()}};
};

TEST_F(DispatchTest, UnknownToolsAndMissingParameters) {
  EXPECT_EQ(run("launch", {}).text, "Tool error: unknown tool: launch");
  EXPECT_EQ(run("read", {}).text, "Tool error: missing required parameter 'path' for tool read");
  EXPECT_EQ(run("write", {{"path", "x"}}).text,
            "Tool error: missing required parameter 'content' for tool write");
  EXPECT_EQ(run("edit", {{"path", "x"}, {"old", "a"}}).text,
            "Tool error: missing required parameter 'new' for tool edit");
  EXPECT_EQ(run("search", {{"path", "."}}).text,
            "Tool error: missing required parameter 'query' for tool search");
  EXPECT_FALSE(run("read", {}).ok);
}

TEST_F(DispatchTest, StringParametersReachTheTools) {
  put_file(dir / "f.txt", testing::numbered_lines(1000));
  ToolResult r = run("read", {{"path", "f.txt"}, {"start_line", "  10"}, {"max_lines", "2"}});
  EXPECT_TRUE(r.text.starts_with("f.txt: lines 10-11 of 1000; continue_offset=12;")) << r.text;
  r = run("more", {{"count", "3"}});
  EXPECT_TRUE(r.text.starts_with("f.txt: lines 12-14 of 1000;")) << r.text;
  // Out-of-range values clamp; garbage takes the default.
  r = run("read", {{"path", "f.txt"}, {"start_line", "-4"}, {"max_lines", "lots"}});
  EXPECT_TRUE(r.text.starts_with("f.txt: lines 1-500 of 1000;")) << r.text;
  r = run("more", {});
  EXPECT_TRUE(r.text.starts_with("f.txt: lines 501-1000 of 1000\n")) << r.text;
  r = run("read", {{"path", "f.txt"}, {"whole", "yes"}, {"raw", "1"}});
  EXPECT_EQ(r.text, testing::numbered_lines(1000));

  EXPECT_EQ(run("write", {{"path", "g.txt"}, {"content", "a\nb\n"}}).text,
            "Wrote 4 bytes to g.txt");
  r = run("edit", {{"path", "g.txt"}, {"old", "b\n"}, {"new", "c\n"}});
  EXPECT_TRUE(r.text.starts_with("Edited g.txt using old/new replacement\n")) << r.text;
  EXPECT_EQ(get_file(dir / "g.txt"), "a\nc\n");
  r = run("search", {{"query", "C"}, {"case_sensitive", "no"}, {"glob", "g.*"}});
  EXPECT_EQ(r.text, "1 matches shown\ng.txt\n  2 c\n");
  r = run("search", {{"query", "^[0-9]+$"}, {"mode", "regex"}, {"max_results", "0"}});
  EXPECT_EQ(r.text, "No matches\n");
  EXPECT_EQ(run("list", {}).text, ".:\n- " + std::to_string(testing::numbered_lines(1000).size()) +
                                      " f.txt\n- 4 g.txt\n");
}

TEST_F(DispatchTest, ARoundsResultsAreCombinedInOrder) {
  const std::vector<ToolCall> calls = {
      {"write", {{"path", "a.txt"}, {"content", "one\n"}}},
      {"read", {{"path", "a.txt"}}},
      {"nope", {}},
  };
  EXPECT_EQ(run_tool_calls(ctx, calls),
            "Tool result 1 (write):\nWrote 4 bytes to a.txt\n\n"
            "Tool result 2 (read):\na.txt: lines 1-1 of 1\n1 one\n\n"
            "Tool result 3 (nope):\nTool error: unknown tool: nope");
  EXPECT_EQ(run_tool_calls(ctx, {}), "Tool error: the tool call block holds no calls");
}

}  // namespace
}  // namespace ds4::agent
