// The DSML automaton's phases, as the server's forced-greedy rule reads them (features.md §2.5,
// DsmlAutomaton::structural()): structure inside a tool-call block is greedy,
// string bodies and JSON string literals are payload (sampled), a partial closing tag is
// structure again, text before or after the block is free, and DSML inside reasoning is not a
// block. Fed byte by byte, so markers split across tokens are covered.
#include "chat/dsml_automaton.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ds4::chat {
namespace {

// greedy() after each prefix that ends right after `upto`.
bool greedy_after(bool thinking, const std::string& text, const std::string& upto) {
  const size_t end = text.find(upto);
  EXPECT_NE(end, std::string::npos) << upto;
  DsmlAutomaton d(DsmlOptions{.thinking = thinking});
  for (size_t i = 0; i < end + upto.size(); ++i) d.feed(text.substr(i, 1), nullptr);
  return d.structural();
}

const std::string kBlock =
    "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n"
    "<｜DSML｜parameter name=\"path\" string=\"true\">a<b.txt</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"opts\" string=\"false\">{\"k\": \"x</｜DSML｜y\", \"n\": 1}"
    "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>after";

TEST(DsmlAutomaton, StructureIsGreedyPayloadIsSampled) {
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

TEST(DsmlAutomaton, ReasoningIsNeverABlock) {
  const std::string text = "plan <｜DSML｜tool_calls>\n</think>" + kBlock;
  EXPECT_FALSE(greedy_after(true, text, "plan <｜DSML｜tool_calls>\n"));
  EXPECT_TRUE(greedy_after(true, text, "</think>Checking.\n\n<｜DSML｜tool_calls>"));
}

TEST(DsmlAutomaton, WholeChunksAndBytesAgree) {
  DsmlAutomaton whole;
  whole.feed(kBlock.substr(0, kBlock.find("\"n\": 1") + 6), nullptr);
  EXPECT_TRUE(whole.structural());
  whole.feed(kBlock.substr(kBlock.find("\"n\": 1") + 6), nullptr);
  EXPECT_FALSE(whole.structural());
}

// Records events, merging adjacent byte fragments of one kind (chunking is not part of the
// contract).
struct Recorder final : DsmlListener {
  std::vector<std::string> seen;
  DsmlEventKind last = DsmlEventKind::kEndOfSentence;
  void on_dsml(const DsmlEvent& e) override {
    const bool bytes = e.kind == DsmlEventKind::kText || e.kind == DsmlEventKind::kReasoning ||
                       e.kind == DsmlEventKind::kPayload;
    if (bytes && !seen.empty() && last == e.kind) {
      seen.back().insert(seen.back().size() - 1, e.bytes);
    } else {
      std::string s = to_string(e.kind);
      if (e.kind == DsmlEventKind::kParamOpen) s += e.string_value ? "(string)" : "(json)";
      if (bytes || e.kind == DsmlEventKind::kCallOpen || e.kind == DsmlEventKind::kParamOpen) {
        s += "[" + std::string(e.bytes) + "]";
      }
      seen.push_back(s);
    }
    last = e.kind;
  }
};

std::vector<std::string> events_of(const std::string& text, DsmlOptions options = {}) {
  Recorder r;
  DsmlAutomaton d(options);
  for (char c : text) d.feed(std::string_view(&c, 1), &r);
  d.finish(&r);
  return r.seen;
}

TEST(DsmlAutomaton, SaysWhatEveryByteIs) {
  const std::vector<std::string> want = {"text[Checking.]",
                                         "block_open",
                                         "call_open[f]",
                                         "param_open(string)[path]",
                                         "payload[a<b.txt]",
                                         "param_close",
                                         "param_open(json)[opts]",
                                         "payload[{\"k\": \"x</｜DSML｜y\", \"n\": 1}]",
                                         "param_close",
                                         "call_close",
                                         "block_close",
                                         "text[after]"};
  EXPECT_EQ(events_of(kBlock), want);
}

TEST(DsmlAutomaton, CountsBlocksAndWhereTheOutputStarts) {
  DsmlAutomaton d(DsmlOptions{.thinking = true});
  const std::string reasoning = "<think>plan</think>";
  d.feed(reasoning + kBlock, nullptr);
  EXPECT_TRUE(d.counts().reasoning_closed);
  EXPECT_EQ(d.counts().output_start, reasoning.size());
  EXPECT_EQ(d.counts().calls, 1);
  EXPECT_EQ(d.counts().blocks_closed, 1);
  EXPECT_EQ(d.counts().repairs, 0);
  EXPECT_EQ(d.phase(), DsmlPhase::kOutside);
}

TEST(DsmlAutomaton, DriftFormsAreStructureToo) {
  // The short form (no first bar) and ASCII bars open blocks as well; each is a repair.
  for (const std::string opener : {"<DSML｜tool_calls>", "<|DSML|tool_calls>"}) {
    DsmlAutomaton d;
    d.feed("x\n\n" + opener + "\n", nullptr);
    EXPECT_EQ(d.phase(), DsmlPhase::kStructure) << opener;
    EXPECT_TRUE(d.structural()) << opener;
    EXPECT_EQ(d.counts().repairs, 1) << opener;
  }
}

TEST(DsmlAutomaton, AnEscapedCloserStaysPayload) {
  const std::string text =
      "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"w\">\n<｜DSML｜parameter name=\"s\" "
      "string=\"true\">a&lt;/｜DSML｜parameter>b</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
      "</｜DSML｜tool_calls>";
  const auto seen = events_of(text);
  ASSERT_GE(seen.size(), 5u);
  EXPECT_EQ(seen[3], "payload[a</｜DSML｜parameter>b]");
  EXPECT_EQ(seen[4], "param_close");
}

TEST(DsmlAutomaton, FinishClosesATruncatedCall) {
  DsmlAutomaton d;
  Recorder r;
  d.feed(
      "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"w\">\n<｜DSML｜parameter name=\"s\" "
      "string=\"true\">par",
      &r);
  EXPECT_EQ(d.phase(), DsmlPhase::kStringPayload);
  d.finish(&r);
  EXPECT_TRUE(d.counts().truncated);
  ASSERT_GE(r.seen.size(), 2u);
  EXPECT_EQ(r.seen[r.seen.size() - 2], "param_close");
  EXPECT_EQ(r.seen.back(), "call_close");
}

}  // namespace
}  // namespace ds4::chat
