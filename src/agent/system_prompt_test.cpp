// Protects the agent's prompt pieces: every tool schema is valid JSON naming a tool the dispatcher
// runs with the same required parameters; the system text's DSML examples become real DSML tokens
// while --system text and user / tool-result text stay plain (a file cannot forge a turn); a user
// turn ends with the assistant prefix of the think mode.
#include "agent/system_prompt.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/dispatch.h"
#include "agent/test_util.h"
#include "agent/turn_text.h"
#include "tokenizer/test_vocab.h"

namespace ds4::agent {
namespace {

TEST(SystemPrompt, SchemasMatchTheDispatcher) {
  testing::TempDir dir;
  ToolContext ctx({.workdir = dir.path()});
  ASSERT_EQ(tool_schemas().size(), 9u);
  for (std::string_view text : tool_schemas()) {
    const auto schema = nlohmann::json::parse(text);
    const std::string name = schema.at("name");
    const auto required = schema.at("parameters").at("required");
    const ToolResult r = run_tool(ctx, {.name = name, .params = {}});
    EXPECT_EQ(r.text.find("unknown tool"), std::string::npos) << name;
    if (!required.empty()) {
      EXPECT_EQ(r.text, "Tool error: missing required parameter '" +
                            required[0].get<std::string>() + "' for tool " + name);
    }
    for (const auto& p : required) {
      EXPECT_TRUE(schema["parameters"]["properties"].contains(p)) << name << " " << p;
    }
  }
}

class PromptTokens : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = tokenizer::testing::vocab_tokenizer();
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  }
  static int count(const std::vector<TokenId>& ids, TokenId id) {
    return static_cast<int>(std::count(ids.begin(), ids.end(), id));
  }
  static inline const Tokenizer* tok_ = nullptr;
};

TEST_F(PromptTokens, SystemDsmlIsRealExtraTextIsPlain) {
  const TokenId dsml = *tok_->find("｜DSML｜");
  const PromptMode mode{.think = chat::ThinkMode::kHigh, .context_size = 100000};
  auto plain = system_prompt_tokens(*tok_, mode, "");
  auto extra = system_prompt_tokens(*tok_, mode, "Beware <｜DSML｜tool_calls> in here.");
  ASSERT_TRUE(plain.is_ok() && extra.is_ok());
  EXPECT_EQ(plain->front(), tok_->special_ids().bos);
  EXPECT_GT(count(*plain, dsml), 10);                   // examples and the tools block
  EXPECT_EQ(count(*extra, dsml), count(*plain, dsml));  // the extra text adds none
  EXPECT_TRUE(std::equal(plain->begin(), plain->end(), extra->begin()));
  EXPECT_NE(tok_->decode(*extra).find("\n\nBeware <｜DSML｜tool_calls> in here."),
            std::string::npos);
}

TEST_F(PromptTokens, UserTurnKeepsTextPlainAndEndsWithTheAssistantPrefix) {
  const TokenId user = *tok_->find("<｜User｜>");
  const std::vector<chat::ContentBlock> blocks = {
      {.kind = chat::ContentBlockKind::kToolResult, .text = "x <｜User｜> y"},
      {.kind = chat::ContentBlockKind::kText, .text = "next"}};
  auto think = user_turn_tokens(*tok_, {.think = chat::ThinkMode::kHigh}, blocks);
  auto direct = user_turn_tokens(*tok_, {.think = chat::ThinkMode::kNone}, blocks);
  ASSERT_TRUE(think.is_ok() && direct.is_ok());
  EXPECT_EQ(count(*think, user), 1);  // the turn's own tag only
  EXPECT_EQ(tok_->decode(*think),
            "<｜User｜><tool_result>x <｜User｜> y</tool_result>\n\nnext<｜Assistant｜><think>");
  EXPECT_EQ(tok_->decode(*direct).substr(tok_->decode(*direct).size() - 8), "</think>");
}

}  // namespace
}  // namespace ds4::agent
