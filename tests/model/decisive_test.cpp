// tests/model/decisive_test.cpp: the decisive synthetic law (docs/synth.md) makes a random-weight
// file's discrete choices independent of an engine's rounding. On the small shape's q2 file written
// with --decisive (make_models.sh), the greedy continuation of a prompt long enough for the indexer
// to choose (its compressed rows outnumber the top-k) is the law's successor chain, in the
// canonical numerics and in Hugging Face mode alike: two numerics whose logits differ by far more
// than two engines' rounding do, making the same choices. This is what lets bench/compat.md compare
// ours with the ds4 engine position by position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "tools/synth/synth.h"

namespace ds4::test {
namespace {

constexpr uint64_t kSeed = 1;       // make_models.sh writes every file with seed 1
constexpr int kPromptTokens = 300;  // 75 ratio-4 rows > the small shape's indexer top-k (64)
constexpr int kGenerated = 16;
// The smallest top-1 margin (nats) a decisive step must have: the two numerics' logits differ by
// about 2e-2 relative (printed below), a few hundredths of a nat at the top; a margin of 2 nats
// cannot be crossed by rounding.
constexpr float kMinMargin = 2.0f;

struct Greedy {
  std::vector<TokenId> greedy;
  std::vector<float> last_logits;  // after the prompt
  float min_margin = 1e30f;
};

Greedy run(bool hf_mode, const std::vector<TokenId>& prompt) {
  Greedy r;
  auto e = open_model("small-q2-decisive", hf_mode);
  EXPECT_NE(e, nullptr);
  if (e == nullptr) return r;
  auto s = e->create_session({.n_ctx = 1024, .prefill_chunk = 128});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  if (!s.is_ok()) return r;
  auto& session = **s;
  EXPECT_TRUE(session.append(prompt).is_ok());
  r.last_logits.assign(session.logits().begin(), session.logits().end());
  for (int i = 0; i < kGenerated; ++i) {
    const auto top = session.top_logprobs(2);
    r.min_margin = std::min(r.min_margin, top[0].logprob - top[1].logprob);
    r.greedy.push_back(top[0].id);
    EXPECT_TRUE(session.eval(top[0].id).is_ok());
  }
  return r;
}

TEST(DecisiveLaw, GreedyContinuationIsTheSuccessorChainInBothNumerics) {
  auto map = synth::successor_map(DS4_TEST_VOCAB_PATH, 129280, kSeed);
  ASSERT_TRUE(map.is_ok()) << map.status().message();
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 5);
  std::vector<TokenId> chain;
  for (TokenId t = prompt.back(); chain.size() < kGenerated;)
    chain.push_back(t = map->successor(t));

  const Greedy canonical = run(false, prompt);
  const Greedy hf = run(true, prompt);
  EXPECT_EQ(canonical.greedy, chain);
  EXPECT_EQ(hf.greedy, chain);
  EXPECT_GE(canonical.min_margin, kMinMargin);
  EXPECT_GE(hf.min_margin, kMinMargin);
  // The two numerics do differ (the simulations change every layer's KV rows): the agreement
  // above is the law's, not two identical computations.
  const double d = rel_l2(hf.last_logits, canonical.last_logits);
  std::printf("canonical vs HF mode: last-logits rel L2 %.3g, min margins %.2f / %.2f nats\n", d,
              canonical.min_margin, hf.min_margin);
  EXPECT_GT(d, 1e-4);
}

}  // namespace
}  // namespace ds4::test
