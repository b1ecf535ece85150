// tests/model/cuda_session_test.cpp (label cuda): a session's state saved from and loaded into the
// CUDA backend (session_io.cpp: straight between the device and the payload), checked against the
// CPU backend's payload
// of the same tokens and by the sessions that continue after a load; and Engine::pick where the
// logits stay on the device. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "model_test_util.h"

namespace ds4::test {
namespace {

constexpr const char* kNoCuda = "no CUDA device (or a build without the CUDA backend)";
// CPU and CUDA states of the same f32 tokens in Hugging Face mode differ by float rounding
// (summation orders), as their logits do (cuda_test.cpp's kCudaBatchRelL2, the same reason).
constexpr double kBackendStateRelL2 = 1e-3;
// Past tiny's raw ring (16-row window + 511 rows of a run = 527 slots): the saved window wraps.
constexpr int kPromptTokens = 600;

std::vector<float> as_floats(std::span<const uint8_t> bytes) {
  std::vector<float> f(bytes.size() / sizeof(float));
  std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
  return f;
}

// save()'s payload, checked against save_to over memory that held other bytes.
std::vector<uint8_t> saved(const Session& s) {
  auto bytes = s.save();
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().message();
  if (!bytes.is_ok()) return {};
  std::vector<uint8_t> over(bytes->size(), uint8_t{0xC3});
  EXPECT_TRUE(s.save_to(over).is_ok());
  EXPECT_EQ(over, *bytes) << "save_to differs from save";
  return *bytes;
}

// A new session of `engine` loaded from `payload` placed at an odd address.
std::unique_ptr<Session> load_at_odd_address(Engine& engine, const std::vector<uint8_t>& payload) {
  auto s = engine.create_session({.n_ctx = 1024, .prefill_chunk = 128});
  EXPECT_TRUE(s.is_ok());
  if (!s.is_ok()) return nullptr;
  std::vector<uint8_t> shifted(payload.size() + 1);
  std::copy(payload.begin(), payload.end(), shifted.begin() + 1);
  const Status st = (*s)->load(std::span<const uint8_t>(shifted).subspan(1));
  EXPECT_TRUE(st.is_ok()) << st.message();
  return st.is_ok() ? std::move(*s) : nullptr;
}

TEST(CudaSessionState, SavesAndLoadsAgainstTheCpuBackend) {
  if (!cuda_available()) GTEST_SKIP() << kNoCuda;
  auto gpu = open_cuda_model("tiny-f32", true);
  auto cpu = open_model("tiny-f32", true);
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  const std::vector<TokenId> prompt = test_prompt(kPromptTokens, 7);
  const std::vector<TokenId> next = test_prompt(8, 11);
  auto g = gpu->create_session({.n_ctx = 1024, .prefill_chunk = 128});
  auto c = cpu->create_session({.n_ctx = 1024, .prefill_chunk = 128});
  ASSERT_TRUE(g.is_ok() && (*g)->append(prompt).is_ok());
  ASSERT_TRUE(c.is_ok() && (*c)->append(prompt).is_ok());

  // The payload has the CPU payload's size and is within rounding of it (a raw row out of order
  // or a frontier row not normalised would be far off).
  const std::vector<uint8_t> on_gpu = saved(**g);
  const std::vector<uint8_t> on_cpu = saved(**c);
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  EXPECT_LE(rel_l2(as_floats(on_gpu), as_floats(on_cpu)), kBackendStateRelL2);

  // Loaded from any address and saved again: the same bytes; and the loaded session continues
  // exactly as the one that computed the state.
  std::unique_ptr<Session> back = load_at_odd_address(*gpu, on_gpu);
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(saved(*back) == on_gpu);
  EXPECT_EQ(rel_l2(back->logits(), (*g)->logits()), 0.0);
  // The CPU's payload on CUDA and CUDA's on the CPU continue as the sessions that computed them.
  std::unique_ptr<Session> cpu_on_gpu = load_at_odd_address(*gpu, on_cpu);
  std::unique_ptr<Session> gpu_on_cpu = load_at_odd_address(*cpu, on_gpu);
  ASSERT_TRUE(back && cpu_on_gpu && gpu_on_cpu);
  for (TokenId t : next) {
    for (Session* s : {g->get(), c->get(), back.get(), cpu_on_gpu.get(), gpu_on_cpu.get()}) {
      ASSERT_TRUE(s->eval(t).is_ok());
    }
    EXPECT_EQ(rel_l2(back->logits(), (*g)->logits()), 0.0);
    EXPECT_LE(rel_l2(cpu_on_gpu->logits(), (*c)->logits()), kBackendStateRelL2);
    EXPECT_LE(rel_l2(gpu_on_cpu->logits(), (*g)->logits()), kBackendStateRelL2);
  }
}

// Engine::pick on CUDA (issue 55): after a batched step the logits stay on the device and the
// picks come back alone. Greedy picks are the argmax of the logits the session reports; a
// whole-vocabulary draw advances the generator as the host's draw does and picks a token min_p
// keeps; a top-k draw is the host's (it runs there).
TEST(CudaSessionState, EnginePicksAgreeWithTheHostRules) {
  if (!cuda_available()) GTEST_SKIP() << kNoCuda;
  auto gpu = open_cuda_model("tiny-f32", true);
  ASSERT_NE(gpu, nullptr);
  std::vector<std::unique_ptr<Session>> ss;
  for (uint32_t seed : {3u, 4u, 5u}) {
    auto s = gpu->create_session({.n_ctx = 512, .prefill_chunk = 64});
    ASSERT_TRUE(s.is_ok() && (*s)->append(test_prompt(40, seed)).is_ok());
    ss.push_back(std::move(*s));
  }
  const std::vector<TokenId> next = test_prompt(3, 9);
  std::vector<StepEntry> entries;
  for (size_t i = 0; i < ss.size(); ++i) {
    entries.push_back({.session = ss[i].get(), .tokens = std::span<const TokenId>(&next[i], 1)});
  }
  ASSERT_TRUE(gpu->step(entries).is_ok());
  const SamplingParams greedy{.temperature = 0.0f};
  const SamplingParams whole{.temperature = 0.8f, .top_k = 0, .top_p = 1.0f, .min_p = 0.05f};
  const SamplingParams top_k{.temperature = 0.8f, .top_k = 40, .top_p = 1.0f, .min_p = 0.05f};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::vector<Rng> device(3 * ss.size(), Rng(seed)), host = device;
    std::vector<PickEntry> picks;
    for (size_t i = 0; i < ss.size(); ++i) {
      for (const SamplingParams* p : {&greedy, &whole, &top_k}) {
        picks.push_back({.session = ss[i].get(), .params = *p, .rng = &device[picks.size()]});
      }
    }
    gpu->pick(picks);
    for (size_t k = 0; k < picks.size(); ++k) {
      const std::span<const float> logits = picks[k].session->logits();
      const TokenId want = sample(logits, picks[k].params, host[k]);
      EXPECT_EQ(device[k].state(), host[k].state()) << "pick " << k;
      if (k % 3 != 1) {
        EXPECT_EQ(picks[k].token, want) << "pick " << k;
        continue;
      }
      // Kept by min_p: its probability at least min_p of the best token's.
      const float best = logits[static_cast<size_t>(argmax(logits))];
      EXPECT_GE((logits[static_cast<size_t>(picks[k].token)] - best) / whole.temperature,
                std::log(whole.min_p) - 1e-4f)
          << "pick " << k;
    }
  }
}

}  // namespace
}  // namespace ds4::test
