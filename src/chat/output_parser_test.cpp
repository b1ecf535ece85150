// src/chat/output_parser_test.cpp: the streaming output parser, case by case.
// Protects: reasoning/content splitting, canonical DSML parsing into OpenAI argument JSON, each
// accepted repair (doubled/ASCII/short bars, missing newlines, missing closers, truncation, bad
// JSON values), reporting of unrepairable markup as text, chunking invariance, the UTF-8 rule and
// the hold-back bound.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat/parser_test_util.h"
#include "ds4/chat.h"

namespace ds4::chat {
namespace {

using testing::coalesce;
using testing::describe;
using testing::parse_in_chunks;
using testing::parse_whole;

OutputEvent T(std::string s) { return {OutputEventKind::kText, std::move(s), -1}; }
OutputEvent R(std::string s) { return {OutputEventKind::kReasoning, std::move(s), -1}; }
OutputEvent Begin(std::string name, int i) {
  return {OutputEventKind::kToolCallBegin, std::move(name), i};
}
OutputEvent Args(std::string json, int i) {
  return {OutputEventKind::kToolCallArguments, std::move(json), i};
}
OutputEvent End(int i) { return {OutputEventKind::kToolCallEnd, {}, i}; }
OutputEvent Done() { return {OutputEventKind::kDone, {}, -1}; }

OutputParserOptions thinking() { return {.thinking = true, .parse_tool_calls = true}; }

void expect_events(std::string_view text, const std::vector<OutputEvent>& want,
                   OutputParserOptions options = {}) {
  const auto got = coalesce(parse_whole(text, options));
  EXPECT_EQ(got, want) << "input: " << text << "\ngot:\n"
                       << describe(got) << "want:\n"
                       << describe(want);
  // Byte-at-a-time feeding gives the same result.
  std::vector<size_t> ones(text.size(), 1);
  EXPECT_EQ(coalesce(parse_in_chunks(text, ones, options)), want) << "1-byte chunks: " << text;
}

const std::string kCanonicalCall =
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

TEST(ChatOutputParser, PlainContent) {
  expect_events("Hello, world!\n\nBye <b>", {T("Hello, world!\n\nBye <b>"), Done()});
  expect_events("", {Done()});
}

TEST(ChatOutputParser, ReasoningThenContent) {
  expect_events("let me think</think>The answer is 4.",
                {R("let me think"), T("The answer is 4."), Done()}, thinking());
  // A leading <think> (the prompt already opened it) is dropped; later ones are reasoning text.
  expect_events("<think>a<think>b</think>c", {R("a<think>b"), T("c"), Done()}, thinking());
  // Never closed: everything is reasoning, and DSML inside reasoning is not executable.
  expect_events("hmm" + kCanonicalCall, {R("hmm" + kCanonicalCall), Done()}, thinking());
}

TEST(ChatOutputParser, CanonicalToolCall) {
  expect_events("Let me check." + kCanonicalCall,
                {T("Let me check."), Begin("get_weather", 0),
                 Args(R"({"city": "Paris", "days": 2})", 0), End(0), Done()});
  expect_events(
      "r</think>" + kCanonicalCall + "<｜end▁of▁sentence｜>",
      {R("r"), Begin("get_weather", 0), Args(R"({"city": "Paris", "days": 2})", 0), End(0), Done()},
      thinking());
}

TEST(ChatOutputParser, SeveralCallsAndEmptyArguments) {
  const std::string text =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"a\">\n\n</｜DSML｜invoke>\n"
      "<｜DSML｜invoke name=\"b\">\n<｜DSML｜parameter name=\"x\" string=\"false\">[1, "
      "{\"k\":null}]</｜DSML｜parameter>\n<｜DSML｜parameter name=\"y\" "
      "string=\"true\">two\nlines "
      "\"q\"</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  expect_events(text,
                {Begin("a", 0), Args("{}", 0), End(0), Begin("b", 1),
                 Args(R"({"x": [1, {"k": null}], "y": "two\nlines \"q\""})", 1), End(1), Done()});
}

TEST(ChatOutputParser, EscapedClosersDecode) {
  const std::string text =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"w\">\n<｜DSML｜parameter name=\"s\" "
      "string=\"true\">a&lt;/｜DSML｜parameter>b&amp;lt;/|DSML|c &lt; d</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  expect_events(text,
                {Begin("w", 0), Args(R"({"s": "a</｜DSML｜parameter>b&lt;/|DSML|c &lt; d"})", 0),
                 End(0), Done()});
}

TEST(ChatOutputParser, RepairsBarVariants) {
  const std::string doubled =
      "\n\n<｜｜DSML｜｜tool_calls>\n<｜｜DSML｜｜invoke name=\"f\">\n<｜｜DSML｜｜parameter "
      "name=\"a\" "
      "string=\"true\">1</｜｜DSML｜｜parameter>\n</｜｜DSML｜｜invoke>\n</｜｜DSML｜｜tool_calls>";
  const std::string ascii =
      "\n\n<|DSML|tool_calls>\n<|DSML|invoke name=\"f\">\n<|DSML|parameter name=\"a\" "
      "string=\"true\">1</|DSML|parameter>\n</|DSML|invoke>\n</|DSML|tool_calls>";
  const std::string short_form =
      "\n\n<DSML｜tool_calls>\n<DSML｜invoke name=\"f\">\n<DSML｜parameter name=\"a\" "
      "string=\"true\">1</DSML｜parameter>\n</DSML｜invoke>\n</DSML｜tool_calls>";
  for (const std::string& text : {doubled, ascii, short_form}) {
    expect_events("x" + text, {T("x"), Begin("f", 0), Args(R"({"a": "1"})", 0), End(0), Done()});
    EXPECT_GT(parse_output("x" + text).stats.repairs, 0) << text;
  }
  EXPECT_EQ(parse_output("x" + kCanonicalCall).stats.repairs, 0);
}

TEST(ChatOutputParser, RepairsMissingNewlinesAndWrappers) {
  // No newlines anywhere, content glued to the block.
  expect_events(
      "ok<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"a\" "
      "string=\"true\">1</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>",
      {T("ok"), Begin("f", 0), Args(R"({"a": "1"})", 0), End(0), Done()});
  // An invoke without the tool_calls wrapper, and a second one after it.
  expect_events(
      "see\n<｜DSML｜invoke name=\"f\">\n</｜DSML｜invoke><｜DSML｜invoke "
      "name=\"g\"></｜DSML｜invoke>",
      {T("see"), Begin("f", 0), Args("{}", 0), End(0), Begin("g", 1), Args("{}", 1), End(1),
       Done()});
  // Missing </parameter> (closed by </invoke>) and missing </invoke> (closed by the next invoke
  // or by </tool_calls>).
  expect_events(
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" "
      "string=\"true\">1</｜DSML｜invoke>\n<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter "
      "name=\"b\" string=\"false\">2</｜DSML｜parameter>\n<｜DSML｜invoke name=\"h\">\n"
      "</｜DSML｜tool_calls>",
      {Begin("f", 0), Args(R"({"a": "1"})", 0), End(0), Begin("g", 1), Args(R"({"b": 2})", 1),
       End(1), Begin("h", 2), Args("{}", 2), End(2), Done()});
}

TEST(ChatOutputParser, RepairsTruncationAtLengthLimit) {
  const std::string cut =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"write\">\n<｜DSML｜parameter "
      "name=\"path\" string=\"true\">a.txt</｜DSML｜parameter>\n<｜DSML｜parameter name=\"body\" "
      "string=\"true\">partial </｜DSML｜para";
  expect_events(
      cut, {Begin("write", 0), Args(R"({"path": "a.txt", "body": "partial </｜DSML｜para"})", 0),
            End(0), Done()});
  const ParsedOutput p = parse_output(cut);
  EXPECT_TRUE(p.stats.truncated);
  // Cut inside a JSON value: what arrived is kept (as a string when it is not JSON yet).
  expect_events(
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter "
      "name=\"n\" string=\"false\">[1, 2",
      {Begin("f", 0), Args(R"({"n": "[1, 2"})", 0), End(0), Done()});
  // Cut inside an invoke tag: no call started, the bytes are reported as text.
  expect_events("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f",
                {T("<｜DSML｜invoke name=\"f"), Done()});
  // Cut right after the block opened.
  const ParsedOutput open = parse_output("hi\n\n<｜DSML｜tool_calls>\n");
  EXPECT_EQ(open.content, "hi");
  EXPECT_TRUE(open.stats.truncated);
}

TEST(ChatOutputParser, JsonValueRepairs) {
  expect_events(
      "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"a\" "
      "string=\"false\"> </｜DSML｜parameter><｜DSML｜parameter name=\"b\" string=\"false\">not "
      "json</｜DSML｜parameter><｜DSML｜parameter name=\"c\">no attr</｜DSML｜parameter>"
      "<｜DSML｜parameter name=\"d\" string=\"false\"> {\"k\" :1.0e1} </｜DSML｜parameter>"
      "</｜DSML｜invoke></｜DSML｜tool_calls>",
      {Begin("f", 0), Args(R"({"a": null, "b": "not json", "c": "no attr", "d": {"k": 10.0}})", 0),
       End(0), Done()});
}

TEST(ChatOutputParser, UnrepairableMarkupIsText) {
  // An invoke without a name, a stray closer and stray text inside a block are all reported.
  expect_events(
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke>\nhello</｜DSML｜parameter>\n"
      "<｜DSML｜invoke name=\"f\">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
      {T("<｜DSML｜invoke>\nhello</｜DSML｜parameter>"), Begin("f", 0), Args("{}", 0), End(0),
       Done()});
  // Stray words keep their spaces; the whitespace around tags stays layout.
  expect_events(
      "<｜DSML｜tool_calls>\n I will call  f\n<｜DSML｜invoke name=\"f\">\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
      {T("\n I will call  f"), Begin("f", 0), Args("{}", 0), End(0), Done()});
  // A tag that never closes within its bound falls back to text.
  const std::string long_tag = "<｜DSML｜invoke name=\"" + std::string(4100, 'a');
  const ParsedOutput p = parse_output("\n\n<｜DSML｜tool_calls>" + long_tag);
  EXPECT_EQ(p.content, long_tag);
  EXPECT_TRUE(p.tool_calls.empty());
}

TEST(ChatOutputParser, EosEndsTheMessage) {
  expect_events("done<｜end▁of▁sentence｜>", {T("done"), Done()});
  // Bytes after EOS are reported, not dropped.
  expect_events("a\n\n<｜end▁of▁sentence｜>tail", {T("a\n\ntail"), Done()});
  EXPECT_TRUE(parse_output("a<｜end▁of▁sentence｜>").stats.eos);
  // EOS inside an open call closes it.
  expect_events("<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜end▁of▁sentence｜>",
                {Begin("f", 0), Args("{}", 0), End(0), Done()});
}

TEST(ChatOutputParser, ToolParsingCanBeOff) {
  const OutputParserOptions off{.thinking = false, .parse_tool_calls = false};
  expect_events("x" + kCanonicalCall, {T("x" + kCanonicalCall), Done()}, off);
}

TEST(ChatOutputParser, TextAfterBlockAndSecondBlock) {
  expect_events(
      kCanonicalCall + "\nmore" + kCanonicalCall,
      {Begin("get_weather", 0), Args(R"({"city": "Paris", "days": 2})", 0), End(0), T("\nmore"),
       Begin("get_weather", 1), Args(R"({"city": "Paris", "days": 2})", 1), End(1), Done()});
}

TEST(ChatOutputParser, ParseOutputCollectsEverything) {
  const ParsedOutput p = parse_output("why</think>Sure." + kCanonicalCall, thinking());
  EXPECT_EQ(p.reasoning, "why");
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(p.tool_calls[0].arguments_json, R"({"city": "Paris", "days": 2})");
  EXPECT_TRUE(p.stats.reasoning_closed);
  EXPECT_EQ(p.stats.tool_calls, 1);
}

TEST(ChatOutputParser, NeverSplitsUtf8Characters) {
  const std::string text = "é日本😀";  // 2-, 3-, 3- and 4-byte characters
  OutputParser parser;
  std::vector<OutputEvent> events;
  for (char c : text) parser.feed(std::string_view(&c, 1), &events);
  parser.finish(&events);
  std::vector<std::string> pieces;
  for (const auto& e : events) {
    if (e.kind == OutputEventKind::kText) pieces.push_back(e.text);
  }
  EXPECT_EQ(pieces, (std::vector<std::string>{"é", "日", "本", "😀"}));
  // The same inside a streamed string argument.
  const std::string call =
      "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter "
      "name=\"s\" string=\"true\">日本</｜DSML｜parameter></｜DSML｜invoke>";
  OutputParser p2;
  std::vector<OutputEvent> ev2;
  for (char c : call) p2.feed(std::string_view(&c, 1), &ev2);
  p2.finish(&ev2);
  for (const auto& e : ev2) {
    if (e.kind != OutputEventKind::kToolCallArguments) continue;
    EXPECT_TRUE(e.text != "\xE6" && e.text != "\xE6\x97") << "split character";
  }
}

TEST(ChatOutputParser, HoldsBackOnlyPossibleMarkers) {
  // Plain prose is released as soon as each character is complete.
  OutputParser parser({.thinking = true, .parse_tool_calls = true});
  std::vector<OutputEvent> events;
  for (char c : std::string("plain reasoning text")) {
    parser.feed(std::string_view(&c, 1), &events);
    EXPECT_EQ(parser.held_bytes(), 0u);
  }
  // A marker prefix is held; the moment it cannot be a marker, it is released.
  parser.feed("</thi", &events);
  EXPECT_EQ(parser.held_bytes(), 5u);
  parser.feed("s", &events);
  EXPECT_EQ(parser.held_bytes(), 0u);
  // Content: at most the longest marker prefix is ever held.
  OutputParser content;
  const std::string worst = "\n\n<｜｜DSML｜｜tool_calls";
  for (char c : worst + "!") {
    content.feed(std::string_view(&c, 1), &events);
    EXPECT_LE(content.held_bytes(), worst.size());
  }
  EXPECT_EQ(content.held_bytes(), 0u);
}

TEST(ChatOutputParser, ChunkingInvariance) {
  const std::vector<std::string> inputs = {
      "Let me check." + kCanonicalCall + "<｜end▁of▁sentence｜>",
      "<think>deep\n\nthought</think>\n\nanswer é日本" + kCanonicalCall,
      "x\n\n\n<｜｜DSML｜｜tool_calls>\n<|DSML|invoke name=\"f\">\n<DSML｜parameter name=\"a\" "
      "string=\"true\">&amp;lt;/｜DSML｜parameter>&lt;/|DSML|x</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"b\" string=\"false\">{\"z\": \"</x>\"}</｜DSML｜parameter>"
      "</｜DSML｜invoke>stray</｜DSML｜tool_calls>tail\n",
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" "
      "string=\"true\">&amp;amp;amp;x &\n<",
      "<｜end▁of▁sentence\n\n\n<|DSML|tool_call <｜DSML｜invoke name='q' x=1>&lt;",
  };
  std::mt19937 rng(7);
  for (const std::string& text : inputs) {
    for (bool think : {false, true}) {
      const OutputParserOptions o{.thinking = think, .parse_tool_calls = true};
      const auto want = coalesce(parse_whole(text, o));
      for (int trial = 0; trial < 50; ++trial) {
        const auto got =
            coalesce(parse_in_chunks(text, testing::random_chunks(text.size(), &rng), o));
        ASSERT_EQ(got, want) << text << "\n" << describe(got) << "vs\n" << describe(want);
      }
    }
  }
}

TEST(ChatOutputParser, EveryByteIsAccounted) {
  const std::string text = "r</think>c" + kCanonicalCall + "junk<｜end▁of▁sentence｜>x";
  const ParsedOutput p = parse_output(text, thinking());
  const OutputStats& s = p.stats;
  EXPECT_EQ(s.text_bytes + s.reasoning_bytes + s.markup_bytes + s.value_bytes, text.size());
  EXPECT_EQ(s.text_bytes, p.content.size());
  EXPECT_EQ(s.reasoning_bytes, p.reasoning.size());
}

}  // namespace
}  // namespace ds4::chat
