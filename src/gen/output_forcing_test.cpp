// Forced output through a Generation, with a stand-in for the model that samples one fixed token
// (or EOS) whatever the text says, as the random tiny model does: a named tool choice still ends
// in one well-formed call of that tool, a required choice in a call of a declared tool, thinking
// mode reasons first and has the block after </think>, what a real model writes inside the shape
// is kept, and a reasoning budget closes the reasoning after that many tokens.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gen/generation.h"
#include "tokenizer/test_vocab.h"

namespace ds4::gen {
namespace {

// The cap on a run (and the token limit the forcing is told of): a forced block closes well
// before it.
constexpr int kMaxSteps = 400;

class OutputForcingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = tokenizer::testing::vocab_tokenizer();  // loaded once per test binary
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  }

  struct Run {
    std::vector<Event> events;
    bool eos = false;
  };
  // The scheduler's decode loop without a model: `model(step)` is what it would sample.
  template <class Model>
  static Run drive(Generation& g, Model model, int limit = kMaxSteps) {
    Run r;
    for (int step = 0; step < limit; ++step) {
      auto f = g.forced_next(limit - step);
      const TokenId id = f ? *f : g.vet(model(step));
      if (id == tok_->special_ids().eos) {
        r.eos = true;
        break;
      }
      if (g.push(id, &r.events)) break;
    }
    g.finish(&r.events);
    return r;
  }
  static TokenId token(const std::string& text) {
    const auto ids = tok_->encode(text, SpecialTokens::kAsText);
    EXPECT_EQ(ids.size(), 1u) << text;
    return ids.front();
  }
  static std::vector<Event> of(const Run& r, EventKind kind) {
    std::vector<Event> out;
    for (const auto& e : r.events)
      if (e.kind == kind) out.push_back(e);
    return out;
  }
  static std::string joined(const Run& r, EventKind kind) {
    std::string s;
    for (const auto& e : of(r, kind)) s += e.text;
    return s;
  }
  static const Tokenizer* tok_;
};
const Tokenizer* OutputForcingTest::tok_ = nullptr;

TEST_F(OutputForcingTest, NamedChoiceGivesOneCallOfThatTool) {
  OutputSpec req{.tools = true,
                 .tool_choice = {.mode = ToolMode::kNamed, .names = {"get_weather"}}};
  Generation g(*tok_, req);
  const TokenId junk = token("hello");
  const Run r = drive(g, [&](int) { return junk; });
  EXPECT_TRUE(g.tool_block_closed());
  ASSERT_EQ(of(r, EventKind::kToolCallBegin).size(), 1u);
  EXPECT_EQ(of(r, EventKind::kToolCallBegin)[0].text, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(joined(r, EventKind::kToolCallArguments)),
            nlohmann::json::object());
  EXPECT_EQ(joined(r, EventKind::kText), "");
  // The raw output is the whole block, forced tokens included (what the replay map keeps).
  EXPECT_EQ(g.raw(),
            "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n</｜DSML｜invoke>\n"
            "</｜DSML｜tool_calls>");
}

TEST_F(OutputForcingTest, RequiredChoiceNamesADeclaredToolEvenOnEos) {
  OutputSpec req{.tools = true,
                 .tool_choice = {.mode = ToolMode::kRequired, .names = {"search", "get_weather"}}};
  Generation g(*tok_, req);
  const Run r = drive(g, [&](int) { return tok_->special_ids().eos; });
  EXPECT_FALSE(r.eos);
  ASSERT_EQ(of(r, EventKind::kToolCallBegin).size(), 1u);
  EXPECT_EQ(of(r, EventKind::kToolCallBegin)[0].text, "search");
}

TEST_F(OutputForcingTest, RequiredChoiceKeepsTheModelsNameAndParameter) {
  OutputSpec req{.tools = true,
                 .tool_choice = {.mode = ToolMode::kRequired, .names = {"search", "get_weather"}}};
  Generation g(*tok_, req);
  // A model that writes this block: at each step the first token of what is still missing.
  const std::string block =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
      "<｜DSML｜parameter name=\"city\" string=\"true\">Oslo</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  const Run r = drive(g, [&](int) {
    EXPECT_TRUE(block.starts_with(g.raw())) << g.raw();
    return tok_->encode(block.substr(g.raw().size()), SpecialTokens::kRecognize).front();
  });
  EXPECT_EQ(g.raw(), block);
  ASSERT_EQ(of(r, EventKind::kToolCallBegin).size(), 1u);
  EXPECT_EQ(of(r, EventKind::kToolCallBegin)[0].text, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(joined(r, EventKind::kToolCallArguments)),
            nlohmann::json::parse(R"({"city":"Oslo"})"));
}

TEST_F(OutputForcingTest, FewTokensLeftCloseTheBlockInTime) {
  // A model that keeps opening parameters and writing into them: the block still closes within
  // the limit, its last parameter cut short.
  OutputSpec req{.tools = true, .tool_choice = {.mode = ToolMode::kNamed, .names = {"f"}}};
  Generation g(*tok_, req);
  const std::string wants =
      "<｜DSML｜parameter name=\"a\" string=\"true\">" + std::string(200, 'x');
  constexpr int kLimit = 60;
  const Run r = drive(
      g,
      [&](int) {
        const std::string& raw = g.raw();
        const size_t at = raw.find("\">\n") + 3;  // after the forced invoke header
        const std::string done = raw.substr(at);
        return tok_
            ->encode(wants.substr(std::min(done.size(), wants.size() - 1)),
                     SpecialTokens::kRecognize)
            .front();
      },
      kLimit);
  EXPECT_TRUE(g.tool_block_closed()) << g.raw();
  ASSERT_EQ(of(r, EventKind::kToolCallBegin).size(), 1u);
  const auto args = nlohmann::json::parse(joined(r, EventKind::kToolCallArguments));
  ASSERT_TRUE(args.contains("a"));
  EXPECT_TRUE(args["a"].get<std::string>().starts_with("xx"));
}

TEST_F(OutputForcingTest, ThinkingModeReasonsThenCalls) {
  OutputSpec req{
      .thinking = true, .tools = true, .tool_choice = {.mode = ToolMode::kNamed, .names = {"f"}}};
  Generation g(*tok_, req);
  const TokenId word = token("hello");
  // Three reasoning tokens, then EOS: the EOS becomes </think> and the call follows.
  const Run r = drive(g, [&](int step) { return step < 3 ? word : tok_->special_ids().eos; });
  EXPECT_EQ(joined(r, EventKind::kReasoning), "hellohellohello");
  ASSERT_EQ(of(r, EventKind::kToolCallBegin).size(), 1u);
  EXPECT_EQ(of(r, EventKind::kToolCallBegin)[0].text, "f");
  EXPECT_TRUE(g.raw().starts_with("hellohellohello</think>\n\n<｜DSML｜tool_calls>")) << g.raw();
}

TEST_F(OutputForcingTest, AutoChoiceAndTheTestHookAreNotForced) {
  OutputSpec autochoice{.tools = true, .tool_choice = {.mode = ToolMode::kAuto, .names = {"f"}}};
  OutputSpec hooked{.tools = true,
                    .tool_choice = {.mode = ToolMode::kNamed, .names = {"f"}},
                    .forced = {token("hello")}};
  for (const OutputSpec* req : {&autochoice, &hooked}) {
    Generation g(*tok_, *req);
    EXPECT_FALSE(g.forced_next(kMaxSteps).has_value());
    EXPECT_EQ(g.vet(tok_->special_ids().eos), tok_->special_ids().eos);
  }
}

TEST_F(OutputForcingTest, ReasoningBudgetClosesTheReasoning) {
  constexpr int kBudget = 5;
  OutputSpec req{.thinking = true, .reasoning_budget = kBudget};
  Generation g(*tok_, req);
  const TokenId word = token("hello");
  const Run r = drive(g, [&](int step) { return step < 8 ? word : tok_->special_ids().eos; });
  EXPECT_EQ(joined(r, EventKind::kReasoning), "hellohellohellohellohello");
  EXPECT_EQ(joined(r, EventKind::kText), "hellohello");  // steps 6 and 7, after </think>
  EXPECT_TRUE(r.eos);
}

}  // namespace
}  // namespace ds4::gen
