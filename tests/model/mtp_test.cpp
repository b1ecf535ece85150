// tests/model/mtp_test.cpp: MTP speculative decoding on the CPU backend (model.md §8, issue 51):
// Session::step_greedy (the MTP block's drafts after the greedy token, verified as one batch)
// against plain greedy decoding, and the block's window kept up to date by every path that
// appends (a prefill, a verification keeping several rows, one-token steps): the drafts after
// the same tokens are the same whichever way the session got there.
#include <gtest/gtest.h>

#include "ds4/sampling.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

constexpr int kCtx = 512;
constexpr int kChunk = 64;

std::unique_ptr<Engine> open_with_mtp(const char* model) {
  EngineOptions o;
  o.model_path = model_path(model);
  o.mtp_path = model_path("tiny-mtp");
  auto e = Engine::open(o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

std::unique_ptr<Session> new_session(Engine& e) {
  auto s = e.create_session({.n_ctx = kCtx, .prefill_chunk = kChunk});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

// The block's drafts after the session's greedy token.
Result<std::vector<TokenId>> draft_after_greedy(Session& s, int n) {
  if (s.logits().empty()) return Status::unavailable("no logits");
  return s.draft(argmax(s.logits()), n);
}

class MtpTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    engine_ = open_with_mtp(GetParam());
    ASSERT_NE(engine_, nullptr);
    prompt_ = test_prompt(100, 7);  // over a prefill chunk, and 28 short of position 128
  }
  std::unique_ptr<Engine> engine_;
  std::vector<TokenId> prompt_;
};

// Greedy decoding with drafts verified N at a time is plain greedy decoding, token for token and
// (the CPU verifies exactly) state byte for byte.
TEST_P(MtpTest, SpeculativeGreedyEqualsPlainGreedy) {
  auto plain = new_session(*engine_);
  ASSERT_TRUE(plain->append(prompt_).is_ok());
  std::vector<TokenId> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back(argmax(plain->logits()));
    ASSERT_TRUE(plain->eval(want.back()).is_ok());
  }
  for (int drafts : {1, 2, 4}) {
    SCOPED_TRACE(drafts);
    auto s = new_session(*engine_);
    ASSERT_TRUE(s->append(prompt_).is_ok());
    ASSERT_TRUE(s->can_draft());
    int steps = 0;
    while (s->n_tokens() < plain->n_tokens()) {
      auto n = s->step_greedy(drafts);
      ASSERT_TRUE(n.is_ok()) << n.status().message();
      ASSERT_GE(*n, 1);
      ASSERT_LE(*n, drafts + 1);
      ++steps;
    }
    std::vector<TokenId> got(s->tokens().begin() + prompt_.size(), s->tokens().end());
    got.resize(want.size());
    EXPECT_EQ(got, want);
    if (s->n_tokens() == plain->n_tokens()) {
      EXPECT_EQ(*s->save(), *plain->save());
    }
    std::printf("[mtp] %s, %d drafts: 40 tokens in %d steps\n", GetParam(), drafts, steps);
  }
}

// The drafts depend only on the tokens seen: a session that got them from one prefill, one that
// got them through verifications (several rows kept at once) and one-token evaluations, and one
// that drafted in between, all draft the same tokens. Drafting changes nothing in the session.
TEST_P(MtpTest, TheBlocksWindowFollowsEveryWayOfAppending) {
  auto ref = new_session(*engine_);
  ASSERT_TRUE(ref->append(prompt_).is_ok());
  std::vector<TokenId> cont;
  for (int i = 0; i < 12; ++i) {
    cont.push_back(argmax(ref->logits()));
    ASSERT_TRUE(ref->eval(cont.back()).is_ok());
  }
  auto verified = new_session(*engine_);
  ASSERT_TRUE(verified->append(prompt_).is_ok());
  auto first = draft_after_greedy(*verified, 3);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(*draft_after_greedy(*verified, 3), *first) << "drafting again gives the same drafts";
  auto kept = verified->verify_greedy(std::span(cont).first(5));
  ASSERT_TRUE(kept.is_ok());
  ASSERT_EQ(*kept, 5);
  for (size_t i = 5; i < 9; ++i) ASSERT_TRUE(verified->eval(cont[i]).is_ok());
  kept = verified->verify_greedy(std::span(cont).subspan(9, 3));
  ASSERT_TRUE(kept.is_ok());
  ASSERT_EQ(*kept, 3);

  std::vector<TokenId> all = prompt_;
  all.insert(all.end(), cont.begin(), cont.end());
  auto prefilled = new_session(*engine_);
  ASSERT_TRUE(prefilled->append(all).is_ok());
  const auto before = prefilled->save();
  auto want = draft_after_greedy(*prefilled, 4);
  ASSERT_TRUE(want.is_ok());
  EXPECT_EQ(*prefilled->save(), *before) << "drafting changed the session";
  EXPECT_EQ(*draft_after_greedy(*verified, 4), *want);
  EXPECT_EQ(*draft_after_greedy(*ref, 4), *want);
}

// Without a draft state the speculative step is a plain one. A loaded snapshot has none (the
// block's window is not in it); the window starts again with the next tokens, and once it has seen
// the n_swa - 1 positions a draft attends to, the drafts are those of a session that saw
// everything.
TEST_P(MtpTest, ASessionLoadedFromASnapshotDraftsAgainOnceTheWindowIsFull) {
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(prompt_).is_ok());
  const auto bytes = s->save();
  ASSERT_TRUE(bytes.is_ok());
  auto loaded = new_session(*engine_);
  ASSERT_TRUE(loaded->load(*bytes).is_ok());
  EXPECT_FALSE(loaded->can_draft());
  const auto refused = draft_after_greedy(*loaded, 2);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("has not seen"), std::string::npos);
  const TokenId next = argmax(loaded->logits());
  auto n = loaded->step_greedy(4);
  ASSERT_TRUE(n.is_ok()) << n.status().message();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(loaded->tokens().back(), next);
  ASSERT_TRUE(s->eval(next).is_ok());
  const int window = 16;  // the tiny shape's n_swa (src/model/shape.cpp)
  const std::vector<TokenId> more = test_prompt(window - 2, 11);
  ASSERT_TRUE(loaded->append(more).is_ok());
  ASSERT_TRUE(s->append(more).is_ok());
  EXPECT_FALSE(loaded->can_draft()) << "the window holds n_swa - 2 of the rows a draft reads";
  ASSERT_TRUE(loaded->eval(5).is_ok());
  ASSERT_TRUE(s->eval(5).is_ok());
  ASSERT_TRUE(loaded->can_draft());
  EXPECT_EQ(*draft_after_greedy(*loaded, 3), *draft_after_greedy(*s, 3));
  // A rewind to nothing and a new prompt give the block its whole context again.
  ASSERT_TRUE(loaded->rewind(0).is_ok());
  ASSERT_TRUE(loaded->append(prompt_).is_ok());
  EXPECT_TRUE(loaded->can_draft());
  auto fresh = new_session(*engine_);
  ASSERT_TRUE(fresh->append(prompt_).is_ok());
  EXPECT_EQ(*draft_after_greedy(*loaded, 2), *draft_after_greedy(*fresh, 2));
}

// A batched step (prefill chunks of some sessions with decode rows of others) keeps every
// session's window as its own appends would: the drafts are those of a session alone.
TEST_P(MtpTest, ABatchedStepKeepsEverySessionsWindow) {
  auto a = new_session(*engine_), b = new_session(*engine_);
  auto ref_a = new_session(*engine_), ref_b = new_session(*engine_);
  const std::vector<TokenId> other = test_prompt(70, 13);
  ASSERT_TRUE(a->append(std::span(prompt_).first(40)).is_ok());
  std::vector<StepEntry> step{{.session = a.get(), .tokens = std::span(prompt_).subspan(40)},
                              {.session = b.get(), .tokens = other}};
  ASSERT_TRUE(engine_->step(step).is_ok());
  ASSERT_TRUE(step[0].status.is_ok() && step[1].status.is_ok());
  ASSERT_TRUE(ref_a->append(prompt_).is_ok());
  ASSERT_TRUE(ref_b->append(other).is_ok());
  for (int i = 0; i < 6; ++i) {
    const TokenId ta = argmax(a->logits()), tb = argmax(b->logits());
    step = {{.session = a.get(), .tokens = std::span(&ta, 1)},
            {.session = b.get(), .tokens = std::span(&tb, 1)}};
    ASSERT_TRUE(engine_->step(step).is_ok());
    ASSERT_TRUE(ref_a->eval(ta).is_ok());
    ASSERT_TRUE(ref_b->eval(tb).is_ok());
  }
  ASSERT_TRUE(a->can_draft());
  ASSERT_TRUE(b->can_draft());
  EXPECT_EQ(*draft_after_greedy(*a, 3), *draft_after_greedy(*ref_a, 3));
  EXPECT_EQ(*draft_after_greedy(*b, 3), *draft_after_greedy(*ref_b, 3));
}

// Verifications of several sessions in one Engine::step (StepEntry::accept) beside a plain decode
// row: each session ends exactly as Session::verify of its run alone leaves it -- kept count,
// logits, snapshot bytes and the MTP block's next drafts -- one run kept whole, one cut at a wrong
// draft; a verification of a session without logits is refused while the others run.
TEST_P(MtpTest, VerificationsInABatchedStepEqualVerifyingAlone) {
  const std::vector<TokenId> prompt_b = test_prompt(70, 13), prompt_c = test_prompt(50, 29);
  auto a = new_session(*engine_), b = new_session(*engine_), c = new_session(*engine_);
  auto ra = new_session(*engine_), rb = new_session(*engine_), rc = new_session(*engine_);
  auto empty = new_session(*engine_);
  ASSERT_TRUE(a->append(prompt_).is_ok() && ra->append(prompt_).is_ok());
  ASSERT_TRUE(b->append(prompt_b).is_ok() && rb->append(prompt_b).is_ok());
  ASSERT_TRUE(c->append(prompt_c).is_ok() && rc->append(prompt_c).is_ok());
  // The greedy continuations the runs draw from, decoded one by one elsewhere.
  const auto continuation = [&](const std::vector<TokenId>& prompt, int n) {
    auto g = new_session(*engine_);
    EXPECT_TRUE(g->append(prompt).is_ok());
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(argmax(g->logits()));
      EXPECT_TRUE(g->eval(out.back()).is_ok());
    }
    return out;
  };
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    std::vector<TokenId> run_a =
        continuation(std::vector<TokenId>(a->tokens().begin(), a->tokens().end()), 4);
    std::vector<TokenId> run_b =
        continuation(std::vector<TokenId>(b->tokens().begin(), b->tokens().end()), 4);
    run_b[2] = (run_b[2] + 1) % 900 + 7;  // kept: run_b[0], run_b[1]
    const TokenId next_c = argmax(c->logits());
    const auto rule = [](const std::vector<TokenId>& run) {
      return Session::DraftAccept([&run](int k, std::span<const float> logits) {
        return run[size_t(k)] == argmax(logits);
      });
    };
    const Session::DraftAccept accept_a = rule(run_a), accept_b = rule(run_b);
    const TokenId lone = 11;
    // The cut run first: the rows after it are not at the offsets of the kept ones.
    std::vector<StepEntry> step{
        {.session = b.get(), .tokens = run_b, .accept = &accept_b},
        {.session = a.get(), .tokens = run_a, .accept = &accept_a},
        {.session = empty.get(), .tokens = std::span(&lone, 1), .accept = &accept_a},
        {.session = c.get(), .tokens = std::span(&next_c, 1)}};
    ASSERT_TRUE(engine_->step(step).is_ok());
    ASSERT_TRUE(step[0].status.is_ok() && step[1].status.is_ok() && step[3].status.is_ok());
    EXPECT_FALSE(step[2].status.is_ok()) << "a verification without logits";
    EXPECT_EQ(step[2].kept, 0);
    EXPECT_EQ(empty->n_tokens(), 0);
    EXPECT_EQ(step[0].kept, 2);
    EXPECT_EQ(step[1].kept, 4);
    EXPECT_EQ(step[3].kept, 1);
    auto ka = ra->verify(run_a, accept_a), kb = rb->verify(run_b, accept_b);
    ASSERT_TRUE(ka.is_ok() && kb.is_ok());
    EXPECT_EQ(*ka, step[1].kept);
    EXPECT_EQ(*kb, step[0].kept);
    ASSERT_TRUE(rc->eval(next_c).is_ok());
    for (auto [got, want] :
         {std::pair{a.get(), ra.get()}, {b.get(), rb.get()}, {c.get(), rc.get()}}) {
      ASSERT_EQ(got->n_tokens(), want->n_tokens());
      EXPECT_TRUE(std::equal(got->logits().begin(), got->logits().end(), want->logits().begin()));
      EXPECT_EQ(*got->save(), *want->save());
      ASSERT_TRUE(got->can_draft() && want->can_draft());
      EXPECT_EQ(*draft_after_greedy(*got, 3), *draft_after_greedy(*want, 3));
    }
  }
}

// The margin gate: drafting stops before a draft the block is not sure of by `margin` logits.
TEST_P(MtpTest, TheMarginGateDropsUnsureDrafts) {
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(prompt_).is_ok());
  const TokenId next = argmax(s->logits());
  const auto all = s->draft(next, 4);
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 4u);
  const auto none = s->draft(next, 4, 1e9f);
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->empty());
  const auto step = s->step_greedy(4, 1e9f);
  ASSERT_TRUE(step.is_ok());
  EXPECT_EQ(*step, 1);
  EXPECT_FALSE(s->draft(-1, 2).is_ok()) << "a token outside the vocabulary";
}

INSTANTIATE_TEST_SUITE_P(Files, MtpTest, ::testing::Values("tiny-f32", "tiny-q2"),
                         [](const auto& p) {
                           std::string n = p.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// The small shape (n_swa 128, a prompt past the window; the decisive law's peaked logits): the
// speculative steps give plain greedy decoding's tokens and, the CPU verifying exactly, its state.
TEST(MtpSmallTest, SpeculativeGreedyEqualsPlainGreedy) {
  EngineOptions o;
  o.model_path = model_path("small-q2-decisive");
  o.mtp_path = model_path("small-mtp");
  auto e = Engine::open(o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  const std::vector<TokenId> prompt = test_prompt(150, 17);
  auto plain = new_session(**e);
  ASSERT_TRUE(plain->append(prompt).is_ok());
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(plain->eval(argmax(plain->logits())).is_ok());
  auto s = new_session(**e);
  ASSERT_TRUE(s->append(prompt).is_ok());
  ASSERT_TRUE(s->can_draft());
  int steps = 0;
  while (s->n_tokens() < plain->n_tokens()) {
    auto n = s->step_greedy(std::min(2, plain->n_tokens() - s->n_tokens() - 1));
    ASSERT_TRUE(n.is_ok()) << n.status().message();
    ++steps;
  }
  ASSERT_EQ(s->n_tokens(), plain->n_tokens());
  EXPECT_TRUE(std::equal(s->tokens().begin(), s->tokens().end(), plain->tokens().begin()));
  EXPECT_EQ(*s->save(), *plain->save());
  std::printf("[mtp] small: 16 tokens in %d steps\n", steps);
}

TEST(MtpTest, WithoutAnMtpFileThereIsNothingToDraft) {
  auto e = open_model("tiny-q2", false);
  ASSERT_NE(e, nullptr);
  auto s = new_session(*e);
  ASSERT_TRUE(s->append(test_prompt(20, 3)).is_ok());
  EXPECT_FALSE(s->can_draft());
  EXPECT_NE(draft_after_greedy(*s, 1).status().message().find("no MTP file"), std::string::npos);
  auto n = s->step_greedy(2);
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(*n, 1);
}

}  // namespace
}  // namespace ds4::test
