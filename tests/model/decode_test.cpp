// tests/model/decode_test.cpp: the decode loop (src/decode/decoder.h) on the tiny models with the
// tiny MTP file (issue 51): with drafting, greedy output is the output without; the test hook's
// forced tokens come out in order whatever the drafts (every refused draft's replacement taken);
// the limit holds inside a verified run; and sampled output with drafts has the distribution of
// sampled output without (token frequencies over many seeds).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "decode/decoder.h"
#include "model_test_util.h"
#include "tokenizer/test_vocab.h"

namespace ds4::test {
namespace {

constexpr int kCtx = 256;

class DecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = tokenizer::testing::vocab_tokenizer();
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
    EngineOptions o;
    o.model_path = model_path("tiny-q2");
    o.mtp_path = model_path("tiny-mtp");
    auto e = Engine::open(o);
    ASSERT_TRUE(e.is_ok()) << e.status().message();
    engine_ = std::move(e).value();
  }

  std::unique_ptr<Session> new_session() {
    auto s = engine_->create_session({.n_ctx = kCtx, .prefill_chunk = 32});
    EXPECT_TRUE(s.is_ok());
    return std::move(s).value();
  }

  // The model's greedy continuation of `context` (n tokens), computed once per context: drafts
  // that greedy decoding keeps every time, and that sampling keeps with their probability.
  std::vector<TokenId> greedy_after(const std::vector<TokenId>& context, int n) {
    auto& known = oracle_[context];
    if (static_cast<int>(known.size()) < n) {
      if (!oracle_session_) oracle_session_ = new_session();
      EXPECT_TRUE(oracle_session_->sync(context).is_ok());
      known.clear();
      for (int i = 0; i < n; ++i) {
        known.push_back(argmax(oracle_session_->logits()));
        EXPECT_TRUE(oracle_session_->eval(known.back()).is_ok());
      }
    }
    return {known.begin(), known.begin() + n};
  }

  enum class Drafts { kMtp, kGreedyReplay };
  struct Run {
    std::vector<TokenId> tokens;
    decode::Acceptance acceptance;
    std::vector<TokenId> session;  // the session's tokens at the end
  };
  // Decodes up to `limit` tokens after `prompt` (no stop strings, no parsing: only EOS ends), with
  // `drafts` per step from the MTP block (a session prefilled with the prompt) or replayed from the
  // model's greedy continuation (a session loaded from the prompt's snapshot: faster).
  Run decode(const std::vector<TokenId>& prompt, const SamplingParams& p, int limit, int drafts,
             Drafts from = Drafts::kMtp, std::vector<TokenId> forced = {}) {
    auto s = new_session();
    if (from == Drafts::kMtp) {
      EXPECT_TRUE(s->append(prompt).is_ok());
    } else {
      auto& snap = snapshots_[prompt];
      if (snap.empty()) {
        EXPECT_TRUE(s->append(prompt).is_ok());
        snap = *s->save();
      } else {
        EXPECT_TRUE(s->load(snap).is_ok());
      }
    }
    gen::Generation g(*tok_, gen::OutputSpec{.parse_output = false, .forced = std::move(forced)});
    Rng rng(p.seed);
    decode::Drafting drafting{.drafts = drafts, .margin = 0.0f, .source = {}};
    Session* live = s.get();
    if (from == Drafts::kGreedyReplay) {
      drafting.source = [this, live](TokenId next, int n) -> Result<std::vector<TokenId>> {
        std::vector<TokenId> context(live->tokens().begin(), live->tokens().end());
        context.push_back(next);
        return greedy_after(context, n);
      };
    }
    decode::Decoder d(*s, g, p, rng, limit, drafting);
    Run r;
    std::vector<gen::Event> events;
    while (!d.done()) {
      const Status st = d.advance(&r.tokens, &events);
      EXPECT_TRUE(st.is_ok()) << st.message();
      if (!st.is_ok()) break;
    }
    EXPECT_EQ(static_cast<int>(r.tokens.size()), d.taken());
    r.acceptance = d.acceptance();
    r.session.assign(s->tokens().begin(), s->tokens().end());
    return r;
  }

  std::map<std::vector<TokenId>, std::vector<TokenId>> oracle_;
  std::map<std::vector<TokenId>, std::vector<uint8_t>> snapshots_;
  const Tokenizer* tok_ = nullptr;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> oracle_session_;  // after engine_: destroyed before it
};

constexpr SamplingParams kGreedy{.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};

TEST_F(DecodeTest, GreedyWithDraftsIsGreedyWithout) {
  const std::vector<TokenId> prompt = test_prompt(40, 5);
  const Run plain = decode(prompt, kGreedy, 30, 0);
  ASSERT_EQ(plain.tokens.size(), 30u);
  EXPECT_EQ(plain.acceptance.steps, 0);
  for (const Drafts from : {Drafts::kMtp, Drafts::kGreedyReplay}) {
    for (int drafts : {1, 2, 4}) {
      const Run spec = decode(prompt, kGreedy, 30, drafts, from);
      EXPECT_EQ(spec.tokens, plain.tokens) << drafts << " drafts";
      EXPECT_GT(spec.acceptance.steps, 0) << "the drafts were verified";
      EXPECT_LE(spec.acceptance.accepted, spec.acceptance.drafted);
      if (from == Drafts::kGreedyReplay) {
        EXPECT_EQ(spec.acceptance.accepted, spec.acceptance.drafted) << "the model's own tokens";
      }
      // The session holds the prompt and every taken token but perhaps the last (not evaluated).
      ASSERT_GE(spec.session.size(), prompt.size() + 29);
      EXPECT_TRUE(std::equal(spec.session.begin() + std::ptrdiff_t(prompt.size()),
                             spec.session.end(), spec.tokens.begin()));
      std::printf("[decode] %s, %d drafts: %d of %d kept in %d steps\n",
                  from == Drafts::kMtp ? "mtp" : "replay", drafts, spec.acceptance.accepted,
                  spec.acceptance.drafted, spec.acceptance.steps);
    }
  }
}

// The test hook's tokens are not the model's: nearly every draft is refused and the forced token
// taken in its place. They come out in order, and the session evaluates exactly them.
TEST_F(DecodeTest, ForcedTokensComeOutInOrderWhateverTheDrafts) {
  const std::vector<TokenId> prompt = test_prompt(24, 9);
  const std::vector<TokenId> forced = test_prompt(12, 77);
  const Run plain = decode(prompt, kGreedy, 12, 0, Drafts::kMtp, forced);
  EXPECT_EQ(plain.tokens, forced);
  for (const Drafts from : {Drafts::kMtp, Drafts::kGreedyReplay}) {
    const Run spec = decode(prompt, kGreedy, 12, 3, from, forced);
    EXPECT_EQ(spec.tokens, forced);
    EXPECT_GT(spec.acceptance.steps, 0);
    std::vector<TokenId> want = prompt;
    want.insert(want.end(), forced.begin(), forced.end() - 1);
    ASSERT_GE(spec.session.size(), want.size());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), spec.session.begin()));
  }
}

// A limit that falls inside a verified run: exactly `limit` tokens, the greedy ones.
TEST_F(DecodeTest, TheLimitHoldsInsideARun) {
  const std::vector<TokenId> prompt = test_prompt(30, 3);
  const Run plain = decode(prompt, kGreedy, 9, 0);
  for (int limit : {1, 2, 3, 5}) {
    const Run spec = decode(prompt, kGreedy, limit, 4, Drafts::kGreedyReplay);
    ASSERT_EQ(static_cast<int>(spec.tokens.size()), limit);
    EXPECT_TRUE(std::equal(spec.tokens.begin(), spec.tokens.end(), plain.tokens.begin()));
    EXPECT_EQ(spec.acceptance.accepted, std::max(0, limit - 2)) << limit;
  }
}

// Sampled decoding keeps a draft by the speculative-sampling rule, so its output has the
// distribution of decoding one token at a time: the frequencies of the second and third tokens
// over many seeds, with drafts and without, agree within what sampling noise allows. A wrong rule
// (keeping every draft, or keeping them with a biased probability) moves them far outside.
TEST_F(DecodeTest, SampledOutputWithDraftsHasTheDistributionWithout) {
  const std::vector<TokenId> prompt = test_prompt(12, 21);
  // Four candidates at temperature 1.5: each keeps a probability worth measuring.
  SamplingParams p{.temperature = 1.5f, .top_k = 4, .top_p = 1.0f, .min_p = 0.0f};
  constexpr int kRuns = 500;
  std::map<std::pair<int, TokenId>, double> plain, spec;
  int drafted = 0, accepted = 0;
  for (int i = 0; i < kRuns; ++i) {
    p.seed = 1000 + uint64_t(i);
    const Run a = decode(prompt, p, 3, 0, Drafts::kGreedyReplay);
    p.seed = 900000 + uint64_t(i);
    const Run b = decode(prompt, p, 3, 2, Drafts::kGreedyReplay);
    ASSERT_EQ(a.tokens.size(), 3u);
    ASSERT_EQ(b.tokens.size(), 3u);
    for (int k = 1; k < 3; ++k) {
      plain[{k, a.tokens[size_t(k)]}] += 1.0 / kRuns;
      spec[{k, b.tokens[size_t(k)]}] += 1.0 / kRuns;
    }
    drafted += b.acceptance.drafted;
    accepted += b.acceptance.accepted;
  }
  std::printf("[decode] sampled: %d of %d drafts kept\n", accepted, drafted);
  EXPECT_GT(accepted, kRuns / 10) << "too few drafts kept for the test to mean anything";
  EXPECT_LT(accepted, drafted) << "some drafts must be refused";
  std::map<std::pair<int, TokenId>, double> all = plain;
  for (const auto& [key, f] : spec) all[key] += 0.0;
  for (const auto& [key, unused] : all) {
    const double fa = plain.count(key) ? plain.at(key) : 0.0;
    const double fb = spec.count(key) ? spec.at(key) : 0.0;
    // Two independent frequencies of probability ~f: the difference has standard deviation
    // sqrt(2 f (1 - f) / kRuns); 4.5 of those, and at least 0.03 for rare tokens.
    const double f = (fa + fb) / 2;
    const double tol = std::max(0.03, 4.5 * std::sqrt(2 * f * (1 - f) / kRuns));
    EXPECT_NEAR(fb, fa, tol) << "token " << key.second << " at output position " << key.first;
  }
}

}  // namespace
}  // namespace ds4::test
