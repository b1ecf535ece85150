// tests/model/speculate_test.cpp: Session::verify_greedy (speculative decoding's verification,
// model.md §8, issue 51) on the CPU backend: drafted tokens evaluated as one batch, the accepted
// prefix kept and the rest taken back exactly -- the session's snapshot after a verification is
// byte for byte the one of a session that decoded only the kept tokens, across the raw window's
// wrap (tiny: 16 rows) and the ratio-4 and ratio-128 compression boundaries, on f32 and q2 files.
#include <gtest/gtest.h>

#include <cstring>

#include "ds4/sampling.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

constexpr int kCtx = 512;
constexpr int kChunk = 64;
constexpr int kPrompt = 120;  // 8 short of position 128, where the ratio-128 layers emit

std::unique_ptr<Session> new_session(Engine& e) {
  auto s = e.create_session({.n_ctx = kCtx, .prefill_chunk = kChunk});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The greedy continuation of `prompt`, `n` tokens, decoded one by one.
std::vector<TokenId> greedy(Engine& e, const std::vector<TokenId>& prompt, int n) {
  auto s = new_session(e);
  EXPECT_TRUE(s->append(prompt).is_ok());
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(argmax(s->logits()));
    EXPECT_TRUE(s->eval(out.back()).is_ok());
  }
  return out;
}

// A session that decoded `prompt` then `tokens` one by one: the reference state.
std::vector<uint8_t> decoded_state(Engine& e, const std::vector<TokenId>& prompt,
                                   std::span<const TokenId> tokens) {
  auto s = new_session(e);
  EXPECT_TRUE(s->append(prompt).is_ok());
  for (TokenId t : tokens) EXPECT_TRUE(s->eval(t).is_ok());
  auto bytes = s->save();
  EXPECT_TRUE(bytes.is_ok());
  return bytes.is_ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

class SpeculateTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    engine_ = open_model(GetParam(), /*hf_mode=*/false);
    ASSERT_NE(engine_, nullptr);
    prompt_ = test_prompt(kPrompt, 81);
    cont_ = greedy(*engine_, prompt_, 24);
  }
  std::unique_ptr<Engine> engine_;
  std::vector<TokenId> prompt_, cont_;
};

TEST_P(SpeculateTest, TheModelsOwnContinuationIsKeptWhole) {
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(prompt_).is_ok());
  // Two verifications of 4, then one of 5: positions 120..132, over both compression boundaries.
  size_t at = 0;
  for (int n : {4, 4, 5}) {
    auto kept = s->verify_greedy(std::span(cont_).subspan(at, static_cast<size_t>(n)));
    ASSERT_TRUE(kept.is_ok()) << kept.status().message();
    EXPECT_EQ(*kept, n);
    at += static_cast<size_t>(n);
    auto bytes = s->save();
    ASSERT_TRUE(bytes.is_ok());
    EXPECT_EQ(*bytes, decoded_state(*engine_, prompt_, std::span(cont_).first(at)))
        << "after " << at << " drafted tokens";
  }
}

TEST_P(SpeculateTest, AWrongDraftKeepsThePrefixAndTakesTheRestBackExactly) {
  for (int wrong : {1, 2, 3}) {
    auto s = new_session(*engine_);
    ASSERT_TRUE(s->append(prompt_).is_ok());
    // Through the window's wrap and both compression boundaries first (positions 120..127).
    auto kept = s->verify_greedy(std::span(cont_).first(8));
    ASSERT_TRUE(kept.is_ok());
    ASSERT_EQ(*kept, 8);
    std::vector<TokenId> drafts(cont_.begin() + 8, cont_.begin() + 13);
    drafts[static_cast<size_t>(wrong)] = (drafts[static_cast<size_t>(wrong)] + 1) % 1000 + 3;
    kept = s->verify_greedy(drafts);
    ASSERT_TRUE(kept.is_ok()) << kept.status().message();
    EXPECT_EQ(*kept, wrong);
    const size_t n = 8 + static_cast<size_t>(wrong);
    auto bytes = s->save();
    ASSERT_TRUE(bytes.is_ok());
    EXPECT_EQ(*bytes, decoded_state(*engine_, prompt_, std::span(cont_).first(n)))
        << "a wrong draft at " << wrong;
    // And decoding goes on as if the rejected rows had never been seen.
    auto ref = new_session(*engine_);
    ASSERT_TRUE(ref->load(*bytes).is_ok());
    for (size_t i = n; i < n + 4; ++i) {
      ASSERT_EQ(argmax(s->logits()), cont_[i]);
      ASSERT_TRUE(s->eval(cont_[i]).is_ok());
      ASSERT_TRUE(ref->eval(cont_[i]).is_ok());
      EXPECT_TRUE(same_bits(s->logits(), ref->logits())) << "step " << i;
    }
  }
}

TEST_P(SpeculateTest, AWrongFirstDraftChangesNothing) {
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(prompt_).is_ok());
  auto before = s->save();
  std::vector<TokenId> drafts(cont_.begin(), cont_.begin() + 3);
  drafts[0] = (drafts[0] + 1) % 1000 + 3;
  auto kept = s->verify_greedy(drafts);
  ASSERT_TRUE(kept.is_ok());
  EXPECT_EQ(*kept, 0);
  EXPECT_EQ(*s->save(), *before);
  // Invalid tokens are refused before anything runs.
  EXPECT_FALSE(s->verify_greedy(std::vector<TokenId>{cont_[0], -4}).is_ok());
  EXPECT_EQ(*s->save(), *before);
}

// Greedy generation that takes drafts (right ones and wrong ones mixed) equals plain greedy
// generation, token for token and bit for bit.
TEST_P(SpeculateTest, SpeculativeGreedyEqualsPlainGreedy) {
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(prompt_).is_ok());
  std::vector<TokenId> got;
  uint32_t noise = 12345;
  while (got.size() < cont_.size()) {
    std::vector<TokenId> drafts;
    for (size_t k = got.size(); k < std::min(cont_.size(), got.size() + 3); ++k) {
      noise = noise * 1103515245u + 12345u;
      drafts.push_back((noise >> 16) % 5 == 0 ? cont_[k] % 900 + 7 : cont_[k]);
    }
    auto kept = s->verify_greedy(drafts);
    ASSERT_TRUE(kept.is_ok()) << kept.status().message();
    got.insert(got.end(), drafts.begin(), drafts.begin() + *kept);
    if (*kept == 0) {  // no draft taken: one plain step
      got.push_back(argmax(s->logits()));
      ASSERT_TRUE(s->eval(got.back()).is_ok());
    }
  }
  got.resize(cont_.size());
  EXPECT_EQ(got, cont_);
}

INSTANTIATE_TEST_SUITE_P(Files, SpeculateTest, ::testing::Values("tiny-f32", "tiny-q2"),
                         [](const auto& p) {
                           std::string n = p.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace ds4::test
