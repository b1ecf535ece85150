// tests/model/session_test.cpp: Session invariants on the tiny shape with the canonical numerics
// (FP8/FP4 simulations and f16 KV rows on): chunked prefill equals token-by-token decode bit for
// bit, sync evaluates only new tokens, rewind and snapshots are exact, bad input changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "gguf/test_util.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

std::unique_ptr<Session> new_session(Engine& e, int n_ctx = 512, int chunk = 64) {
  auto s = e.create_session({.n_ctx = n_ctx, .prefill_chunk = chunk});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = open_model("tiny-f32", /*hf_mode=*/false);
    ASSERT_NE(engine_, nullptr);
  }
  std::unique_ptr<Engine> engine_;
};

// The CPU backend runs every cache-dependent step row by row and every product with the same dot
// call, so prefill in any chunk size equals decoding token by token, bit for bit.
TEST_F(SessionTest, ChunkedPrefillIsBitIdenticalToTokenByTokenDecode) {
  const auto toks = test_prompt(150, 7);  // past the window (16) and many compressed rows
  auto ref = new_session(*engine_, 512, 1);
  std::vector<float> ref_all;
  ASSERT_TRUE(ref->append(toks, &ref_all).is_ok());
  for (int chunk : {7, 64, 150}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    auto s = new_session(*engine_, 512, chunk);
    std::vector<float> all;
    ASSERT_TRUE(s->append(toks, &all).is_ok());
    EXPECT_TRUE(same_bits(all, ref_all));
  }
  auto dec = new_session(*engine_, 512, 64);
  for (TokenId t : toks) ASSERT_TRUE(dec->eval(t).is_ok());
  EXPECT_TRUE(same_bits(dec->logits(), ref->logits()));
}

TEST_F(SessionTest, SyncEvaluatesOnlyTheNewSuffix) {
  const auto full = test_prompt(90, 11);
  const std::vector<TokenId> head(full.begin(), full.begin() + 50);
  auto s = new_session(*engine_);
  auto a = s->sync(head);
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->evaluated, 50);
  EXPECT_EQ(a->reused, 0);
  auto b = s->sync(full);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->reused, 50);
  EXPECT_EQ(b->evaluated, 40);
  auto c = s->sync(full);  // nothing new
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->evaluated, 0);
  auto fresh = new_session(*engine_);
  ASSERT_TRUE(fresh->sync(full).is_ok());
  EXPECT_TRUE(same_bits(s->logits(), fresh->logits()));
  // A diverging prompt rebuilds and still equals a fresh evaluation.
  auto other = test_prompt(60, 99);
  auto d = s->sync(other);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->evaluated, 60);
  auto fresh2 = new_session(*engine_);
  ASSERT_TRUE(fresh2->sync(other).is_ok());
  EXPECT_TRUE(same_bits(s->logits(), fresh2->logits()));
}

TEST_F(SessionTest, RewindEqualsNeverHavingEvaluated) {
  const auto toks = test_prompt(70, 3);
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(toks).is_ok());
  ASSERT_TRUE(s->rewind(41).is_ok());
  EXPECT_EQ(s->n_tokens(), 41);
  auto fresh = new_session(*engine_);
  ASSERT_TRUE(fresh->append(std::span(toks).first(41)).is_ok());
  EXPECT_TRUE(same_bits(s->logits(), fresh->logits()));
  EXPECT_FALSE(s->rewind(42).is_ok());
  EXPECT_FALSE(s->rewind(-1).is_ok());
}

TEST_F(SessionTest, SnapshotThenLoadThenContinueEqualsNeverSaving) {
  const auto toks = test_prompt(77, 5);  // not a multiple of 4: live frontier rows
  auto a = new_session(*engine_);
  ASSERT_TRUE(a->append(toks).is_ok());
  auto saved = a->save();
  ASSERT_TRUE(saved.is_ok()) << saved.status().message();
  auto b = new_session(*engine_);
  ASSERT_TRUE(b->load(*saved).is_ok());
  EXPECT_EQ(std::vector<TokenId>(b->tokens().begin(), b->tokens().end()), toks);
  EXPECT_TRUE(same_bits(a->logits(), b->logits()));
  auto again = b->save();
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *saved) << "load then save must reproduce the payload byte for byte";
  {
    // A payload inside a file buffer starts anywhere: loaded from an odd address (the layers are
    // read where they lie), it is the same session.
    std::vector<uint8_t> odd(saved->size() + 3);
    std::copy(saved->begin(), saved->end(), odd.begin() + 3);
    auto d = new_session(*engine_);
    ASSERT_TRUE(d->load(std::span<const uint8_t>(odd).subspan(3)).is_ok());
    EXPECT_EQ(*d->save(), *saved);
  }
  for (int k = 0; k < 12; ++k) {
    const TokenId t = argmax_of(a->logits());
    ASSERT_TRUE(a->eval(t).is_ok());
    ASSERT_TRUE(b->eval(t).is_ok());
    ASSERT_TRUE(same_bits(a->logits(), b->logits())) << "step " << k;
  }
  // Through a file, and into a larger context (same window and chunk).
  gguf::testing::TempDir dir;  // removed with the file when the test ends, whatever its outcome
  const std::string path = dir.file("ds4_snapshot_test.dsv4");
  ASSERT_TRUE(a->save_file(path).is_ok());
  auto c = new_session(*engine_, 2048, 64);
  ASSERT_TRUE(c->load_file(path).is_ok());
  EXPECT_TRUE(same_bits(a->logits(), c->logits()));
}

// save_to writes save()'s payload over memory reused from an earlier, larger save (what the
// server's disk cache does), whatever that memory held; a span of another size is refused before
// anything is written.
TEST_F(SessionTest, SaveToWritesTheSavePayloadOverReusedMemory) {
  auto s = new_session(*engine_);
  EXPECT_EQ(s->save_bytes(), 0u);
  std::vector<uint8_t> none;
  EXPECT_EQ(s->save_to(none).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(s->append(test_prompt(40, 3)).is_ok());
  auto big = s->save();
  ASSERT_TRUE(big.is_ok());
  ASSERT_EQ(s->save_bytes(), big->size());
  ASSERT_TRUE(s->rewind(17).is_ok());  // fewer tokens: a smaller payload
  auto small = s->save();
  ASSERT_TRUE(small.is_ok());
  ASSERT_EQ(s->save_bytes(), small->size());
  ASSERT_LT(small->size(), big->size());

  std::vector<uint8_t> reused = *big;  // an earlier payload's bytes underneath
  const std::span<uint8_t> out = std::span<uint8_t>(reused).first(small->size());
  ASSERT_TRUE(s->save_to(out).is_ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), small->begin()));
  std::fill(reused.begin(), reused.end(), uint8_t{0xA5});
  // What the ready callback announces is final when announced: the counts grow, the first is the
  // head (tokens and logits, before the backend's layers), the last the whole payload.
  std::vector<size_t> counts;
  ASSERT_TRUE(s->save_to(out, [&](size_t n) {
                 ASSERT_LE(n, out.size());
                 EXPECT_TRUE(std::equal(out.begin(), out.begin() + static_cast<ptrdiff_t>(n),
                                        small->begin()))
                     << "bytes announced at " << n << " are not the payload's";
                 counts.push_back(n);
               }).is_ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), small->begin()));
  ASSERT_GE(counts.size(), 2u);
  EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
  EXPECT_LT(counts.front(), out.size());
  EXPECT_EQ(counts.back(), out.size());

  for (size_t n : {small->size() - 1, small->size() + 1}) {
    std::fill(reused.begin(), reused.end(), uint8_t{0x5A});
    const Status st = s->save_to(std::span<uint8_t>(reused).first(n));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << n;
    EXPECT_TRUE(std::all_of(reused.begin(), reused.end(), [](uint8_t b) { return b == 0x5A; }))
        << "a refused save_to wrote into the buffer";
  }
}

TEST_F(SessionTest, SnapshotPayloadFollowsTheSpecifiedLayout) {
  const auto toks = test_prompt(21, 8);
  auto s = new_session(*engine_, 256, 32);
  ASSERT_TRUE(s->append(toks).is_ok());
  auto p = s->save();
  ASSERT_TRUE(p.is_ok());
  auto u32 = [&](size_t field) {
    uint32_t v;
    std::memcpy(&v, p->data() + 4 * field, 4);
    return v;
  };
  EXPECT_EQ(std::memcmp(p->data(), "DSV4", 4), 0);
  EXPECT_EQ(u32(1), 2u);    // version
  EXPECT_EQ(u32(2), 256u);  // context
  EXPECT_EQ(u32(3), 32u);   // prefill chunk
  EXPECT_EQ(u32(4), 16u);   // raw ring = window of the tiny shape
  EXPECT_EQ(u32(5), 16u);
  EXPECT_EQ(u32(6), 256u / 4 + 2);
  EXPECT_EQ(u32(7), 21u);
  EXPECT_EQ(u32(8), 6u);
  EXPECT_EQ(u32(9), 512u);
  EXPECT_EQ(u32(10), 128u);
  EXPECT_EQ(u32(11), 129280u);
  EXPECT_EQ(u32(12), 16u);  // live raw rows = min(T, window)
  for (size_t i = 0; i < toks.size(); ++i) EXPECT_EQ(u32(13 + i), static_cast<uint32_t>(toks[i]));
  float first_logit;
  std::memcpy(&first_logit, p->data() + 4 * (13 + toks.size()), 4);
  EXPECT_EQ(first_logit, s->logits()[0]);
  // Size: header, tokens, logits, 2 x 6 counts, then per layer (tiny: sliding, sliding, CSA, HCA,
  // CSA, HCA) raw rows, compressed rows + frontiers, indexer rows + frontiers.
  const size_t raw = 16 * 512, csa = 5 * 512 + 2 * 8 * 1024 + 5 * 128 + 2 * 8 * 256,
               hca = 0 * 512 + 2 * 128 * 512;
  const size_t floats = 129280 + 6 * raw + 2 * csa + 2 * hca;
  EXPECT_EQ(p->size(), 4 * (13 + toks.size() + 12) + 4 * floats);
}

TEST_F(SessionTest, BadSnapshotsAreRefusedAndLeaveTheSessionUnchanged) {
  auto a = new_session(*engine_);
  ASSERT_TRUE(a->append(test_prompt(30, 1)).is_ok());
  auto payload = a->save();
  ASSERT_TRUE(payload.is_ok());
  auto b = new_session(*engine_);
  const auto mine = test_prompt(12, 2);
  ASSERT_TRUE(b->append(mine).is_ok());
  const std::vector<float> before(b->logits().begin(), b->logits().end());
  auto unchanged = [&] {
    EXPECT_EQ(std::vector<TokenId>(b->tokens().begin(), b->tokens().end()), mine);
    EXPECT_TRUE(same_bits(b->logits(), before));
  };
  const std::span<const uint8_t> bytes(*payload);
  EXPECT_FALSE(b->load(bytes.first(bytes.size() - 1)).is_ok());  // truncated
  unchanged();
  std::vector<uint8_t> trailing(bytes.begin(), bytes.end());
  trailing.push_back(0);
  EXPECT_FALSE(b->load(trailing).is_ok());
  unchanged();
  auto small_ctx = new_session(*engine_, 256, 64);  // payload written for ctx 512
  const Status st = small_ctx->load(bytes);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("context"), std::string::npos) << st.message();
  auto other_chunk = new_session(*engine_, 512, 32);
  EXPECT_FALSE(other_chunk->load(bytes).is_ok());
  // Another model's payload: the small shape has 8 layers and a wider window.
  std::vector<uint8_t> other_model(bytes.begin(), bytes.end());
  const uint32_t layers = 8;
  std::memcpy(other_model.data() + 4 * 8, &layers, 4);
  EXPECT_FALSE(b->load(other_model).is_ok());
  unchanged();
  // The session still continues exactly as before.
  auto fresh = new_session(*engine_);
  ASSERT_TRUE(fresh->append(mine).is_ok());
  ASSERT_TRUE(b->eval(42).is_ok());
  ASSERT_TRUE(fresh->eval(42).is_ok());
  EXPECT_TRUE(same_bits(b->logits(), fresh->logits()));
}

TEST_F(SessionTest, InvalidTokensAndFullContextAreErrorsThatChangeNothing) {
  auto s = new_session(*engine_, 32, 8);
  const auto toks = test_prompt(20, 4);
  ASSERT_TRUE(s->append(toks).is_ok());
  EXPECT_EQ(s->eval(-1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->eval(129280).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->append(test_prompt(12, 9)).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->n_tokens(), 20);
  EXPECT_FALSE(s->sync({}).is_ok());
  ASSERT_TRUE(s->append(test_prompt(11, 9)).is_ok());  // 31 < 32 fits
  EXPECT_EQ(s->eval(5).code(), StatusCode::kOutOfRange);
}

TEST_F(SessionTest, SamplingIsDeterministicForASeed) {
  auto s = new_session(*engine_);
  ASSERT_TRUE(s->append(test_prompt(10, 12)).is_ok());
  const SamplingParams p{
      .temperature = 1.0f, .top_k = 40, .top_p = 0.95f, .min_p = 0.0f, .seed = 7};
  auto run = [&] {
    auto t = new_session(*engine_);
    EXPECT_TRUE(t->append(test_prompt(10, 12)).is_ok());
    Rng rng(p.seed);
    std::vector<TokenId> out;
    for (int i = 0; i < 16; ++i) {
      out.push_back(t->sample(p, rng));
      EXPECT_TRUE(t->eval(out.back()).is_ok());
    }
    return out;
  };
  EXPECT_EQ(run(), run());
  const auto lp = s->top_logprobs(5);
  ASSERT_EQ(lp.size(), 5u);
  EXPECT_EQ(lp[0].id, argmax_of(s->logits()));
  EXPECT_LE(lp[0].logprob, 0.0f);
}

}  // namespace
}  // namespace ds4::test
