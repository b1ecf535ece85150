// Layer slices (distributed inference's building block, features.md §10.1, issue 49): engines
// that each compute a contiguous run of layers, chained by handing the hidden state on, give the
// whole model's logits bit for bit on the CPU backend -- prefill in chunks, then decoding token
// by token -- on the tiny shape in two recipes (f32 and q2, whose hash-routed layers read the
// token ids a slice receives with the hidden state). Also the refusals: ranges outside the model,
// a head before the last layer, the whole-model calls on a slice, a hidden state of the wrong
// size.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model_test_util.h"

namespace ds4::test {
namespace {

constexpr int kPromptTokens = 40;
constexpr int kDecodeTokens = 6;
constexpr int kChunk = 16;  // several prefill chunks per slice call

std::unique_ptr<Engine> open_slice(const std::string& name, int first, int last, bool output) {
  EngineOptions o;
  o.model_path = model_path(name);
  o.layers = {.first = first, .last = last, .output = output};
  auto e = Engine::open(o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

std::unique_ptr<Session> session_of(Engine& e) {
  auto s = e.create_session({.n_ctx = 256, .prefill_chunk = kChunk});
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

// Runs `tokens` through the chain of slice sessions; returns the last slice's output (logits).
std::vector<float> through(std::vector<std::unique_ptr<Session>>& chain,
                           std::span<const TokenId> tokens) {
  std::vector<float> hidden;
  for (auto& s : chain) {
    auto out = s->append_slice(tokens, hidden);
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    if (!out.is_ok()) return {};
    hidden = std::move(out).value();
  }
  return hidden;
}

// The whole model against slices cut at `cuts` (the first layer of each later slice).
void expect_chain_equals_whole(const std::string& name, const std::vector<int>& cuts) {
  auto whole = open_model(name, /*hf_mode=*/false);
  ASSERT_NE(whole, nullptr);
  const int n_layer = whole->info().n_layer;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::unique_ptr<Session>> chain;
  int first = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const int last = i < cuts.size() ? cuts[i] - 1 : n_layer - 1;
    engines.push_back(open_slice(name, first, last, /*output=*/i == cuts.size()));
    ASSERT_NE(engines.back(), nullptr);
    EXPECT_FALSE(engines.back()->info().whole_model);
    chain.push_back(session_of(*engines.back()));
    ASSERT_NE(chain.back(), nullptr);
    first = last + 1;
  }
  auto ref = session_of(*whole);
  ASSERT_NE(ref, nullptr);
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 7);
  ASSERT_TRUE(ref->append(prompt).is_ok());
  std::vector<float> got = through(chain, prompt);
  ASSERT_EQ(got.size(), ref->logits().size());
  EXPECT_EQ(0, std::memcmp(got.data(), ref->logits().data(), got.size() * sizeof(float)))
      << "prefill logits differ, rel L2 " << rel_l2(got, ref->logits());
  for (int i = 0; i < kDecodeTokens; ++i) {
    const TokenId next = argmax_of(ref->logits());
    ASSERT_TRUE(ref->eval(next).is_ok());
    got = through(chain, std::span<const TokenId>(&next, 1));
    ASSERT_EQ(got.size(), ref->logits().size());
    EXPECT_EQ(0, std::memcmp(got.data(), ref->logits().data(), got.size() * sizeof(float)))
        << "decode step " << i << " differs, rel L2 " << rel_l2(got, ref->logits());
  }
  EXPECT_EQ(chain.back()->n_tokens(), ref->n_tokens());
}

TEST(LayerSlice, TwoSlicesEqualTheWholeModelF32) { expect_chain_equals_whole("tiny-f32", {1}); }

TEST(LayerSlice, ThreeSlicesEqualTheWholeModelQ2) {
  auto probe = open_model("tiny-q2", false);
  ASSERT_NE(probe, nullptr);
  const int n = probe->info().n_layer;
  ASSERT_GE(n, 3) << "the tiny shape needs 3 layers for three slices";
  expect_chain_equals_whole("tiny-q2", {1, n - 1});
}

TEST(LayerSlice, RangesAreChecked) {
  auto probe = open_model("tiny-f32", false);
  ASSERT_NE(probe, nullptr);
  const int n = probe->info().n_layer;
  const auto refused = [&](int first, int last, bool output) {
    EngineOptions o;
    o.model_path = model_path("tiny-f32");
    o.layers = {.first = first, .last = last, .output = output};
    auto e = Engine::open(o);
    return !e.is_ok() && e.status().code() == StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(refused(1, 0, false));  // end before start
  EXPECT_TRUE(refused(0, n, true));   // past the last layer
  EXPECT_TRUE(refused(-1, 0, false));
  EXPECT_TRUE(refused(0, 0, true));  // the head only after the last layer
  auto whole = open_slice("tiny-f32", 0, -1, true);
  ASSERT_NE(whole, nullptr);
  EXPECT_TRUE(whole->info().whole_model);
  EXPECT_EQ(whole->info().layer_last, n - 1);
}

TEST(LayerSlice, WholeModelCallsAndWrongHiddenStatesAreRefused) {
  auto first = open_slice("tiny-f32", 0, 0, false);
  auto second = open_slice("tiny-f32", 1, -1, true);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  auto a = session_of(*first);
  auto b = session_of(*second);
  const std::vector<TokenId> prompt = test_prompt(4, 3);
  EXPECT_FALSE(a->append(prompt).is_ok());
  EXPECT_FALSE(b->sync(prompt).is_ok());
  EXPECT_EQ(a->n_tokens(), 0);
  std::vector<StepEntry> entries = {{.session = a.get(), .tokens = prompt}};
  EXPECT_FALSE(first->step(entries).is_ok());
  const std::vector<float> wrong(7, 0.0f);
  EXPECT_FALSE(b->append_slice(prompt, wrong).is_ok());  // wrong size
  EXPECT_FALSE(a->append_slice(prompt, wrong).is_ok());  // layer 0 takes none
  EXPECT_EQ(b->n_tokens(), 0);
  auto h = a->append_slice(prompt, {});
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  EXPECT_EQ(h->size(), prompt.size() * static_cast<size_t>(first->info().hidden_width));
  auto logits = b->append_slice(prompt, *h);
  ASSERT_TRUE(logits.is_ok()) << logits.status().message();
  EXPECT_EQ(logits->size(), static_cast<size_t>(second->info().n_vocab));
}

}  // namespace
}  // namespace ds4::test
