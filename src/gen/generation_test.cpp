// One request's tokens -> serve events: reasoning and content are split at </think>, a stop
// string ends the output before it, a DSML block becomes a tool call with an unguessable id whose
// arguments are the JSON object, and the block's close ends generation with the raw bytes kept.
#include "gen/generation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "tokenizer/test_vocab.h"

namespace ds4::gen {
namespace {

class GenerationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = tokenizer::testing::vocab_tokenizer();  // loaded once per test binary
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  }

  // Feeds `text` token by token; returns the events and the index of the token that ended it.
  struct Run {
    std::vector<Event> events;
    int ended_at = -1;
    int n_tokens = 0;
  };
  static Run feed(Generation& g, const std::string& text) {
    Run r;
    const auto ids = tok_->encode(text, SpecialTokens::kRecognize);
    r.n_tokens = static_cast<int>(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (g.push(ids[i], &r.events)) {
        r.ended_at = static_cast<int>(i);
        break;
      }
    }
    g.finish(&r.events);
    return r;
  }
  static std::string joined(const std::vector<Event>& events, EventKind kind) {
    std::string s;
    for (const auto& e : events)
      if (e.kind == kind) s += e.text;
    return s;
  }
  static const Tokenizer* tok_;
};
const Tokenizer* GenerationTest::tok_ = nullptr;

TEST_F(GenerationTest, ReasoningContentAndStopString) {
  OutputSpec req{.stop = {"STOP"}, .parse_output = true, .thinking = true};
  Generation g(*tok_, req);
  const Run r = feed(g, "Let me think.</think>The answer is 4. STOP and then more");
  EXPECT_EQ(joined(r.events, EventKind::kReasoning), "Let me think.");
  EXPECT_EQ(joined(r.events, EventKind::kText), "The answer is 4. ");
  EXPECT_TRUE(g.stop_hit());
  EXPECT_GE(r.ended_at, 0);
  EXPECT_LT(r.ended_at, r.n_tokens - 1);  // stopped before the text after STOP
}

TEST_F(GenerationTest, RawModeKeepsThinkTags) {
  OutputSpec req{.parse_output = false, .thinking = true};
  Generation g(*tok_, req);
  const Run r = feed(g, "a</think>b");
  EXPECT_EQ(joined(r.events, EventKind::kText), "a</think>b");
  EXPECT_EQ(joined(r.events, EventKind::kReasoning), "");
}

TEST_F(GenerationTest, ToolCallBlockBecomesEventsAndEndsGeneration) {
  OutputSpec req{.parse_output = true, .thinking = false, .tools = true};
  Generation g(*tok_, req);
  const std::string block = chat::encode_tool_calls(std::vector<chat::ToolCall>{
      {.name = "get_weather", .arguments_json = R"({"city":"Paris","days":3})"}});
  const Run r = feed(g, "Checking." + block + "trailing text the model never writes");
  EXPECT_TRUE(g.tool_block_closed());
  EXPECT_EQ(
      r.ended_at,
      static_cast<int>(tok_->encode("Checking." + block, SpecialTokens::kRecognize).size()) - 1);
  EXPECT_EQ(joined(r.events, EventKind::kText), "Checking.");
  int begins = 0, ends = 0;
  for (const auto& e : r.events) {
    if (e.kind == EventKind::kToolCallBegin) {
      ++begins;
      EXPECT_EQ(e.text, "get_weather");
      EXPECT_TRUE(std::regex_match(e.tool_id, std::regex("call_[0-9a-f]{32}"))) << e.tool_id;
    }
    if (e.kind == EventKind::kToolCallEnd) ++ends;
  }
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 1);
  const auto args = nlohmann::json::parse(joined(r.events, EventKind::kToolCallArguments));
  EXPECT_EQ(args, nlohmann::json::parse(R"({"city":"Paris","days":3})"));
  EXPECT_NE(g.raw().find(block), std::string::npos);  // the sampled bytes are kept exactly
}

TEST_F(GenerationTest, ToolIdsDiffer) {
  OutputSpec req{.tools = true};
  Generation a(*tok_, req), b(*tok_, req);
  const std::string block =
      chat::encode_tool_calls(std::vector<chat::ToolCall>{{.name = "f", .arguments_json = "{}"}});
  const Run ra = feed(a, block), rb = feed(b, block);
  std::string ia, ib;
  for (const auto& e : ra.events)
    if (e.kind == EventKind::kToolCallBegin) ia = e.tool_id;
  for (const auto& e : rb.events)
    if (e.kind == EventKind::kToolCallBegin) ib = e.tool_id;
  EXPECT_FALSE(ia.empty());
  EXPECT_NE(ia, ib);
}

TEST_F(GenerationTest, DsmlStructureIsGreedyOnlyWithTools) {
  const std::string head = "ok\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f";
  OutputSpec with{.tools = true}, without{.tools = false};
  Generation a(*tok_, with), b(*tok_, without);
  std::vector<Event> ev;
  for (TokenId id : tok_->encode(head, SpecialTokens::kRecognize)) {
    a.push(id, &ev);
    b.push(id, &ev);
  }
  EXPECT_TRUE(a.dsml_greedy());
  EXPECT_FALSE(b.dsml_greedy());
}

// The loop the scheduler and the CLI run: the test hook's tokens come first whatever is sampled,
// the draw turns greedy on DSML structure, EOS ends with kToolCalls after a call (kStop
// before), and every taken token, EOS included, counts.
TEST_F(GenerationTest, DrawAndTakeRunTheLoop) {
  const std::string head = "ok\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n";
  const std::string tail = "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  OutputSpec spec{.tools = true, .forced = tok_->encode(head, SpecialTokens::kRecognize)};
  Generation g(*tok_, spec);
  const SamplingParams base{.temperature = 0.7f};
  const TokenId eos = tok_->special_ids().eos;
  std::vector<Event> events;
  for (size_t i = 0; i < spec.forced.size(); ++i) {
    const Generation::Draw d = g.draw(base, 100);
    ASSERT_TRUE(d.forced.has_value());
    const Generation::Taken t = g.take(d, eos, &events);  // the sample is ignored
    EXPECT_EQ(t.id, spec.forced[i]);
    EXPECT_FALSE(t.end.has_value());
  }
  const Generation::Draw greedy = g.draw(base, 100);
  EXPECT_FALSE(greedy.forced.has_value());
  EXPECT_EQ(greedy.params.temperature, 0.0f);  // inside the invoke: structure
  std::optional<FinishReason> end;
  for (TokenId id : tok_->encode(tail, SpecialTokens::kRecognize)) {
    end = g.take(g.draw(base, 100), id, &events).end;
  }
  EXPECT_EQ(end, FinishReason::kToolCalls);  // the block closed
  EXPECT_EQ(g.tool_calls(), 1);
  Generation plain(*tok_, OutputSpec{});
  EXPECT_EQ(plain.draw(base, 100).params.temperature, 0.7f);
  EXPECT_EQ(plain.take(plain.draw(base, 100), eos, &events).end, FinishReason::kStop);
  EXPECT_EQ(plain.generated(), 1);
}

}  // namespace
}  // namespace ds4::gen
