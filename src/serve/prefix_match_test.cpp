// Prefix reuse (features.md §1.13): live tokens that are a token prefix of the request are kept;
// live tokens whose decoded text is a byte prefix of the rendered prompt are kept too, with only
// the rest of the text tokenized; anything else is a miss that reuses only the common tokens.
#include "serve/prefix_match.h"

#include <gtest/gtest.h>

#include "tokenizer/test_vocab.h"

namespace ds4::serve {
namespace {

class PrefixMatch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = tokenizer::testing::vocab_tokenizer();  // loaded once per test binary
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  }
  static std::vector<TokenId> enc(std::string_view s) {
    return tok_->encode(s, SpecialTokens::kRecognize);
  }
  static Request request(const std::string& text) {
    return Request{.prompt = enc(text), .rendered = text};
  }
  static const Tokenizer* tok_;
};
const Tokenizer* PrefixMatch::tok_ = nullptr;

TEST_F(PrefixMatch, TokenPrefixKeepsTheRequestTokens) {
  const std::string head = "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜></think>";
  const auto live = enc(head);
  const Request r = request(head + "Hello!<｜end▁of▁sentence｜><｜User｜>More");
  const PromptPlan p = plan_prompt(live, *tok_, r);
  EXPECT_EQ(p.source, CacheSource::kTokens);
  EXPECT_EQ(p.reusable, live.size());
  EXPECT_EQ(p.tokens, r.prompt);
}

TEST_F(PrefixMatch, TextPrefixKeepsDifferentlySpelledLiveTokens) {
  // The live session spelled "hello" as two pieces; the full prompt tokenizes it as one.
  std::vector<TokenId> live = enc("<｜begin▁of▁sentence｜>hel");
  tok_->encode_append("lo", SpecialTokens::kRecognize, &live);
  const Request r = request("<｜begin▁of▁sentence｜>hello world");
  ASSERT_LT(common_prefix(live, r.prompt), live.size()) << "the spellings must differ";
  const PromptPlan p = plan_prompt(live, *tok_, r);
  EXPECT_EQ(p.source, CacheSource::kText);
  EXPECT_EQ(p.reusable, live.size());
  ASSERT_GE(p.tokens.size(), live.size());
  EXPECT_TRUE(std::equal(live.begin(), live.end(), p.tokens.begin()));
  EXPECT_EQ(tok_->decode(p.tokens), r.rendered);
}

TEST_F(PrefixMatch, DivergentHistoryIsAMiss) {
  const auto live = enc("<｜begin▁of▁sentence｜><｜User｜>Hi there");
  const Request r = request("<｜begin▁of▁sentence｜><｜User｜>Bye");
  const PromptPlan p = plan_prompt(live, *tok_, r);
  EXPECT_EQ(p.source, CacheSource::kMiss);
  EXPECT_EQ(p.tokens, r.prompt);
  EXPECT_EQ(p.reusable, common_prefix(live, r.prompt));
  EXPECT_GT(p.reusable, 0u);  // BOS and <｜User｜> are shared
}

TEST_F(PrefixMatch, EmptySessionIsAMiss) {
  const Request r = request("<｜begin▁of▁sentence｜>x");
  const PromptPlan p = plan_prompt({}, *tok_, r);
  EXPECT_EQ(p.source, CacheSource::kMiss);
  EXPECT_EQ(p.reusable, 0u);
}

}  // namespace
}  // namespace ds4::serve
