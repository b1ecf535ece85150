// tests/model/batch_test.cpp (labels unit, model): Engine::step on the CPU backend. Protects the
// exactness of continuous batching: a request's logits and greedy tokens are the
// same whether its session runs alone (Session::append, the reference) or in one forward pass with
// other sessions -- at different positions, a prefill chunk mixed with decode rows, a session
// finishing (dropped) while the others go on, and compression boundaries (ratio-4 and ratio-128
// rows emitted, the indexer selecting) crossed inside mixed steps. Also: a refused entry changes
// nothing and does not stop the others.
// Tolerance: none. The CPU backend computes every row with the same dot calls and walks the
// attention state row by row per sequence, so a row's arithmetic does not depend on which other
// rows share its batch: bit-identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "batch_driver.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

// Returns the batched run, for checks of what its schedule covered.
BatchRun expect_batched_equals_alone(Engine& engine, const std::vector<BatchPlan>& plans) {
  const BatchRun alone = run_alone(engine, plans);
  BatchRun batched = run_batched(engine, plans);
  EXPECT_EQ(alone.plans.size(), plans.size());
  EXPECT_EQ(batched.plans.size(), plans.size());
  if (alone.plans.size() != plans.size() || batched.plans.size() != plans.size()) return batched;
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(compare_traces(alone.plans[i], batched.plans[i], 0.0), "") << "plan " << i;
    EXPECT_EQ(static_cast<int>(batched.plans[i].generated.size()), plans[i].n_decode);
  }
  // The schedule really exercised what this test protects.
  EXPECT_TRUE(mixed_prefill_and_decode(batched));
  EXPECT_TRUE(mixed_step_crosses(batched, 127)) << "no ratio-128 row emitted in a mixed step";
  EXPECT_TRUE(mixed_step_crosses(batched, 127, 2)) << "no prefill chunk across 127 in a mixed step";
  EXPECT_TRUE(mixed_step_crosses(batched, 3)) << "no ratio-4 row emitted in a mixed step";
  int first_finish = 1 << 30, last_step = 0;
  for (const PlanTrace& t : batched.plans) {
    first_finish = std::min(first_finish, t.finished_at);
    last_step = std::max(last_step, t.finished_at);
  }
  EXPECT_LT(first_finish, last_step) << "no session finished while others ran on";
  int most = 0;
  for (const StepShape& s : batched.steps) most = std::max(most, s.entries);
  EXPECT_GE(most, 3);
  return batched;
}

class BatchModels : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchModels, EverySessionMatchesItsRunAlone) {
  const std::string name = GetParam();
  auto engine = open_model(name, /*hf_mode=*/false);
  ASSERT_NE(engine, nullptr);
  const BatchRun batched = expect_batched_equals_alone(*engine, batch_plans_for(name));
  if (name.rfind("small", 0) == 0) {  // rows past 256: the indexer keeps 64 of 65+ rows
    EXPECT_TRUE(mixed_step_crosses(batched, 256, 2)) << "no chunk where the indexer selects";
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, BatchModels, ::testing::Values("tiny-f32", "tiny-q2", "small-f32"),
                         [](const auto& p) {
                           std::string n = p.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

class BatchStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = open_model("tiny-f32", /*hf_mode=*/false);
    ASSERT_NE(engine_, nullptr);
  }
  std::unique_ptr<Session> session(int n_ctx = 64) {
    auto s = engine_->create_session({.n_ctx = n_ctx, .prefill_chunk = 16});
    EXPECT_TRUE(s.is_ok()) << s.status().message();
    return s.is_ok() ? std::move(s).value() : nullptr;
  }
  std::unique_ptr<Engine> engine_;
};

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Refused entries leave their session exactly as it was; the accepted ones run as if alone.
TEST_F(BatchStepTest, RefusedEntriesChangeNothingAndTheOthersRun) {
  const auto p = test_prompt(20, 9);
  auto good = session(), bad_id = session(), full = session(), dup = session();
  auto ref = session();
  ASSERT_TRUE(bad_id->append(std::span(p).first(5)).is_ok());
  ASSERT_TRUE(full->append(std::span(p).first(5)).is_ok());
  const std::vector<float> bad_logits(bad_id->logits().begin(), bad_id->logits().end());
  auto other_engine = open_model("tiny-f32", false);
  ASSERT_NE(other_engine, nullptr);
  auto foreign = other_engine->create_session({.n_ctx = 64, .prefill_chunk = 16});
  ASSERT_TRUE(foreign.is_ok());

  const std::vector<TokenId> bad_tokens{5, -1, 7};
  const std::vector<TokenId> too_many(59, 1000);  // 5 + 59 = 64 > n_ctx - 1
  std::vector<StepEntry> entries{{good.get(), std::span(p).first(12), {}},
                                 {bad_id.get(), bad_tokens, {}},
                                 {full.get(), too_many, {}},
                                 {dup.get(), std::span(p).first(2), {}},
                                 {nullptr, std::span(p).first(1), {}},
                                 {dup.get(), std::span(p).first(3), {}},
                                 {foreign->get(), std::span(p).first(4), {}}};
  ASSERT_TRUE(engine_->step(entries).is_ok());
  EXPECT_TRUE(entries[0].status.is_ok());
  EXPECT_EQ(entries[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries[2].status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(entries[3].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries[4].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries[5].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries[6].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_id->n_tokens(), 5);
  EXPECT_TRUE(same_bits(bad_id->logits(), bad_logits));
  EXPECT_EQ(full->n_tokens(), 5);
  EXPECT_EQ(dup->n_tokens(), 0);
  EXPECT_EQ((*foreign)->n_tokens(), 0);
  ASSERT_TRUE(ref->append(std::span(p).first(12)).is_ok());
  EXPECT_EQ(good->n_tokens(), 12);
  EXPECT_TRUE(same_bits(good->logits(), ref->logits()));
  // The refused sessions still work: the state was not touched.
  ASSERT_TRUE(bad_id->append(std::span(p).subspan(5, 7)).is_ok());
  EXPECT_TRUE(same_bits(bad_id->logits(), ref->logits()));
}

TEST_F(BatchStepTest, EmptyEntriesAndEmptyStepsDoNothing) {
  auto s = session();
  std::vector<StepEntry> none;
  EXPECT_TRUE(engine_->step(none).is_ok());
  std::vector<StepEntry> empty{{s.get(), {}, {}}};
  EXPECT_TRUE(engine_->step(empty).is_ok());
  EXPECT_TRUE(empty[0].status.is_ok());
  EXPECT_EQ(s->n_tokens(), 0);
  EXPECT_TRUE(s->logits().empty());
}

// More than kMaxStepRows rows in all: the whole step is refused before anything runs, though each
// entry alone would fit.
TEST_F(BatchStepTest, AStepOverTheRowLimitIsRefusedWhole) {
  const int half = Engine::kMaxStepRows / 2 + 1;
  auto a = session(half + 8), b = session(half + 8);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<TokenId> t(static_cast<size_t>(half), 1000);
  std::vector<StepEntry> entries{{a.get(), t, {}}, {b.get(), t, {}}};
  const Status st = engine_->step(entries);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries[0].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(entries[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->n_tokens(), 0);
  EXPECT_EQ(b->n_tokens(), 0);
}

// A decode step of several sessions equals each session's own eval, and sessions of different
// contexts share a step.
TEST_F(BatchStepTest, DecodeRowsOfManySessionsMatchEval) {
  std::vector<std::unique_ptr<Session>> batched, alone;
  for (int i = 0; i < 5; ++i) {
    batched.push_back(session(64 + 32 * i));
    alone.push_back(session(64 + 32 * i));
    const auto p = test_prompt(1 + 7 * i, 20 + i);  // positions 1, 8, 15, 22, 29
    ASSERT_TRUE(batched.back()->append(p).is_ok());
    ASSERT_TRUE(alone.back()->append(p).is_ok());
  }
  for (int step = 0; step < 6; ++step) {
    std::vector<TokenId> next(batched.size());
    std::vector<StepEntry> entries;
    for (size_t i = 0; i < batched.size(); ++i) {
      next[i] = argmax_of(batched[i]->logits());
      entries.push_back({.session = batched[i].get(), .tokens = std::span(&next[i], 1)});
    }
    ASSERT_TRUE(engine_->step(entries).is_ok());
    for (size_t i = 0; i < batched.size(); ++i) {
      ASSERT_TRUE(entries[i].status.is_ok());
      ASSERT_TRUE(alone[i]->eval(argmax_of(alone[i]->logits())).is_ok());
      EXPECT_TRUE(same_bits(batched[i]->logits(), alone[i]->logits())) << "session " << i;
      EXPECT_EQ(batched[i]->tokens().back(), alone[i]->tokens().back());
    }
  }
}

// Engine::pick on the CPU backend: every entry's token and generator state are those of the
// host sampler on the session's logits, for each rule (greedy, whole vocabulary, top-k, top-p,
// a NaN temperature), with and without a parallel_for; a session with no logits gives 0.
TEST_F(BatchStepTest, PicksAreTheSamplersDrawsOfEachSession) {
  std::vector<std::unique_ptr<Session>> ss;
  std::vector<StepEntry> entries;
  std::vector<TokenId> next;
  for (int i = 0; i < 3; ++i) {
    ss.push_back(session());
    ASSERT_TRUE(ss.back()->append(test_prompt(6 + i, 30 + i)).is_ok());
    next.push_back(argmax_of(ss.back()->logits()));
  }
  for (size_t i = 0; i < ss.size(); ++i) {
    entries.push_back({.session = ss[i].get(), .tokens = std::span(&next[i], 1)});
  }
  ASSERT_TRUE(engine_->step(entries).is_ok());
  auto empty = session();
  const std::vector<SamplingParams> rules = {
      {.temperature = 0.0f},
      {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.05f},
      {.temperature = 0.7f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f},
      {.temperature = 0.8f, .top_k = 20, .top_p = 1.0f, .min_p = 0.05f},
      {.temperature = 1.2f, .top_k = 0, .top_p = 0.9f, .min_p = 0.0f},
      {.temperature = std::nanf(""), .top_k = 0, .top_p = 1.0f, .min_p = 0.05f}};
  int calls = 0;
  const ParallelFor inline_pool = [&calls](int64_t n, const std::function<void(int64_t)>& task) {
    ++calls;
    for (int64_t k = n - 1; k >= 0; --k) task(k);  // another order than the plain loop's
  };
  for (bool pooled : {false, true}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      std::vector<Rng> got, want;
      std::vector<PickEntry> picks;
      for (size_t r = 0; r < rules.size(); ++r) {
        for (const Session* s : {ss[0].get(), ss[1].get(), ss[2].get(), empty.get()}) {
          got.emplace_back(seed * 100 + picks.size());
          want.emplace_back(seed * 100 + picks.size());
          picks.push_back({.session = s, .params = rules[r]});
        }
      }
      for (size_t k = 0; k < picks.size(); ++k) picks[k].rng = &got[k];
      engine_->pick(picks, pooled ? inline_pool : ParallelFor{});
      for (size_t k = 0; k < picks.size(); ++k) {
        const TokenId host = sample(picks[k].session->logits(), picks[k].params, want[k]);
        EXPECT_EQ(picks[k].token, host) << "pick " << k;
        EXPECT_EQ(got[k].state(), want[k].state()) << "pick " << k;
        if (picks[k].session == empty.get()) {
          EXPECT_EQ(picks[k].token, 0);
        }
      }
    }
  }
  EXPECT_GT(calls, 0);
}

}  // namespace
}  // namespace ds4::test
