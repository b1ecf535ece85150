// Protects how an assistant round's raw DSML becomes tool calls: string values decoded, JSON
// values as text (a lone string unquoted), several invokes in order, and each kind of invalid
// block reported with a detail instead of running anything (features.md §5.5).
#include "agent/round_calls.h"

#include <gtest/gtest.h>

namespace ds4::agent {
namespace {

std::string param(std::string_view name, std::string_view value, bool string_value = true) {
  return "<｜DSML｜parameter name=\"" + std::string(name) + "\" string=\"" +
         (string_value ? "true" : "false") + "\">" + std::string(value) + "</｜DSML｜parameter>\n";
}

std::string invoke(std::string_view name, std::string_view params) {
  return "<｜DSML｜invoke name=\"" + std::string(name) + "\">\n" + std::string(params) +
         "</｜DSML｜invoke>\n";
}

std::string block(std::string_view invokes) {
  return "\n\n<｜DSML｜tool_calls>\n" + std::string(invokes) + "</｜DSML｜tool_calls>";
}

TEST(RoundCalls, StringAndJsonParametersOfSeveralCalls) {
  const std::string raw =
      "Let me look." +
      block(invoke("read", param("path", "a&b <c>.txt") + param("start_line", " 12 ", false)) +
            invoke("bash", param("command", "\"quoted\"", false)));
  const RoundCalls rc = read_round_calls(raw, false);
  ASSERT_EQ(rc.error, "");
  EXPECT_TRUE(rc.block);
  ASSERT_EQ(rc.calls.size(), 2u);
  EXPECT_EQ(rc.calls[0].name, "read");
  ASSERT_EQ(rc.calls[0].params.size(), 2u);
  EXPECT_EQ(rc.calls[0].params[0].value, "a&b <c>.txt");
  EXPECT_EQ(rc.calls[0].params[1].value, "12");
  EXPECT_EQ(rc.calls[1].params[0].value, "quoted");
}

TEST(RoundCalls, ReasoningFirstThenACall) {
  const std::string raw = "thinking about it</think>" + block(invoke("list", ""));
  const RoundCalls rc = read_round_calls(raw, true);
  ASSERT_EQ(rc.error, "");
  ASSERT_EQ(rc.calls.size(), 1u);
  EXPECT_EQ(rc.calls[0].name, "list");
}

TEST(RoundCalls, PlainReplyHasNoCalls) {
  const RoundCalls rc = read_round_calls("All done.", false);
  EXPECT_EQ(rc.error, "");
  EXPECT_FALSE(rc.block);
  EXPECT_TRUE(rc.calls.empty());
}

TEST(RoundCalls, UnterminatedBlockIsInvalid) {
  const RoundCalls rc = read_round_calls(
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"read\">\n<｜DSML｜parameter name=\"path\" "
      "string=\"true\">a.txt",
      false);
  EXPECT_NE(rc.error.find("not closed"), std::string::npos) << rc.error;
  EXPECT_TRUE(rc.calls.empty());
}

TEST(RoundCalls, EmptyBlockIsInvalid) {
  const RoundCalls rc = read_round_calls(block(""), false);
  EXPECT_NE(rc.error.find("no invoke"), std::string::npos) << rc.error;
}

TEST(RoundCalls, CallInsideThinkingIsInvalid) {
  const RoundCalls rc =
      read_round_calls("I will call" + block(invoke("list", "")) + " now</think>Sorry.", true);
  EXPECT_NE(rc.error.find("inside <think></think>"), std::string::npos) << rc.error;
  EXPECT_TRUE(rc.calls.empty());
}

}  // namespace
}  // namespace ds4::agent
