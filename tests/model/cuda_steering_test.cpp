// tests/model/cuda_steering_test.cpp (label cuda): directional steering (features.md §8) and
// observers on the CUDA backend, f32 files in Hugging Face mode (the simulations off, so only
// summation orders differ between the backends): steered logits against the CPU's in prefill, in
// one-row decode steps (recorded as CUDA graphs) and in a batched step whose sessions steer by
// different scales; zero scales leave the CUDA logits bit for bit as without a direction file;
// an observer sees on CUDA what it sees on the CPU (the routed experts' inputs, the sublayers'
// outputs), on a file whose routing is decisive (the same experts on both backends).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ds4/engine.h"
#include "model_test_util.h"
#include "temp_folder.h"

namespace ds4::test {
namespace {

constexpr const char* kNoCuda = "no CUDA device (or a build without the CUDA backend)";
// CUDA against the CPU in Hugging Face mode on an f32 file: the bound of cuda_gates_test.cpp's
// kHfRelL2 (float rounding in other summation orders), which steering (one dot product and an
// update per row) does not widen.
constexpr double kSteeredRelL2 = 1e-3;

std::string write_directions(const TempFolder& dir, int layers, int64_t n_embd) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g;
  std::vector<float> d(static_cast<size_t>(layers * n_embd));
  for (int il = 0; il < layers; ++il) {
    double ss = 0;
    float* row = d.data() + il * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) {
      row[i] = g(rng);
      ss += double{row[i]} * row[i];
    }
    for (int64_t i = 0; i < n_embd; ++i) row[i] = static_cast<float>(row[i] / std::sqrt(ss));
  }
  const std::string path = dir.file("dirs.f32");
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (f != nullptr) {
    EXPECT_EQ(std::fwrite(d.data(), sizeof(float), d.size(), f), d.size());
    std::fclose(f);
  }
  return path;
}

// A generated f32 file in Hugging Face mode, with a direction file and an observer if given.
std::unique_ptr<Engine> open_hf(BackendKind backend, const std::string& steering_file,
                                Observer* observer = nullptr,
                                const std::string& name = "tiny-f32") {
  EngineOptions o;
  o.model_path = model_path(name);
  o.backend = backend;
  o.qat_simulation = false;
  o.f16_kv_rows = false;
  o.steering_file = steering_file;
  o.observer = observer;
  auto e = Engine::open(o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

TEST(CudaSteering, MatchesTheCpuInPrefillDecodeAndBatches) {
  if (!cuda_available()) GTEST_SKIP() << kNoCuda;
  TempFolder dir;
  auto plain_cpu = open_hf(BackendKind::kCpu, "");
  ASSERT_NE(plain_cpu, nullptr);
  const std::string file =
      write_directions(dir, plain_cpu->info().n_layer, plain_cpu->info().n_embd);
  auto cpu = open_hf(BackendKind::kCpu, file);
  auto cuda = open_hf(BackendKind::kCuda, file);
  auto plain_cuda = open_hf(BackendKind::kCuda, "");
  ASSERT_TRUE(cpu && cuda && plain_cuda);
  const std::vector<TokenId> prompt = test_prompt(40, 4), more = test_prompt(6, 12);
  const Steering s{.attn = 0.75f, .ffn = 1.5f};
  auto make = [](Engine& e, std::optional<Steering> st) {
    auto x = e.create_session({.n_ctx = 256, .prefill_chunk = 64, .steering = st});
    EXPECT_TRUE(x.is_ok());
    return std::move(x).value();
  };
  // Zero scales: the steering op is not issued, the bits are those without a file.
  auto zero = make(*cuda, std::nullopt), none = make(*plain_cuda, std::nullopt);
  ASSERT_TRUE(zero->append(prompt).is_ok() && none->append(prompt).is_ok());
  EXPECT_TRUE(std::equal(zero->logits().begin(), zero->logits().end(), none->logits().begin()));

  // Prefill, then one-row decode steps (graphs), then a batched step with the plain session.
  auto c = make(*cpu, s), g = make(*cuda, s), g_plain = make(*cuda, std::nullopt);
  auto c_plain = make(*plain_cpu, std::nullopt);
  ASSERT_TRUE(c->append(prompt).is_ok() && g->append(prompt).is_ok());
  ASSERT_TRUE(c_plain->append(prompt).is_ok() && g_plain->append(prompt).is_ok());
  EXPECT_LE(rel_l2(g->logits(), c->logits()), kSteeredRelL2) << "prefill";
  EXPECT_GT(rel_l2(c->logits(), c_plain->logits()), 10 * kSteeredRelL2) << "steering acts";
  for (size_t i = 0; i < more.size(); ++i) {
    const TokenId one[] = {more[i]};
    if (i < 3) {
      ASSERT_TRUE(g->eval(more[i]).is_ok());
      ASSERT_TRUE(g_plain->eval(more[i]).is_ok());
    } else {  // two sessions, two scales, one step: the rows' scales go to the device
      std::vector<StepEntry> step{{.session = g.get(), .tokens = one},
                                  {.session = g_plain.get(), .tokens = one}};
      ASSERT_TRUE(cuda->step(step).is_ok());
      ASSERT_TRUE(step[0].status.is_ok() && step[1].status.is_ok());
    }
    ASSERT_TRUE(c->eval(more[i]).is_ok() && c_plain->eval(more[i]).is_ok());
    EXPECT_LE(rel_l2(g->logits(), c->logits()), kSteeredRelL2) << "step " << i;
    EXPECT_LE(rel_l2(g_plain->logits(), c_plain->logits()), kSteeredRelL2) << "step " << i;
  }
}

// What an observer keeps of a pass: every report, flattened in call order.
struct Recorded : Observer {
  std::vector<int32_t> experts;
  std::vector<float> in, weights, down_in, outputs;
  int expert_calls = 0, sublayer_calls = 0;
  void on_expert_inputs(const ExpertInputs& x) override {
    ++expert_calls;
    experts.insert(experts.end(), x.experts.begin(), x.experts.end());
    in.insert(in.end(), x.in.begin(), x.in.end());
    weights.insert(weights.end(), x.weights.begin(), x.weights.end());
    down_in.insert(down_in.end(), x.down_in.begin(), x.down_in.end());
  }
  void on_sublayer_outputs(const SublayerOutputs& o) override {
    ++sublayer_calls;
    outputs.insert(outputs.end(), o.values.begin(), o.values.end());
  }
};

TEST(CudaObserver, ReportsWhatTheCpuReports) {
  if (!cuda_available()) GTEST_SKIP() << kNoCuda;
  Recorded on_cpu, on_cuda;
  auto cpu = open_hf(BackendKind::kCpu, "", &on_cpu, "tiny-f32d");
  auto cuda = open_hf(BackendKind::kCuda, "", &on_cuda, "tiny-f32d");
  ASSERT_TRUE(cpu && cuda);
  const std::vector<TokenId> prompt = test_prompt(24, 6), more = test_prompt(3, 13);
  for (auto* e : {cpu.get(), cuda.get()}) {  // a prefill, then one-row steps
    auto s = e->create_session({.n_ctx = 128, .prefill_chunk = 64});
    ASSERT_TRUE(s.is_ok() && (*s)->append(prompt).is_ok());
    for (TokenId t : more) ASSERT_TRUE((*s)->eval(t).is_ok());
  }
  EXPECT_EQ(on_cuda.expert_calls, on_cpu.expert_calls);
  EXPECT_EQ(on_cuda.sublayer_calls, on_cpu.sublayer_calls);
  EXPECT_EQ(on_cuda.experts, on_cpu.experts) << "decisive routing: the same experts";
  ASSERT_EQ(on_cuda.in.size(), on_cpu.in.size());
  ASSERT_EQ(on_cuda.down_in.size(), on_cpu.down_in.size());
  ASSERT_EQ(on_cuda.outputs.size(), on_cpu.outputs.size());
  EXPECT_LE(rel_l2(on_cuda.weights, on_cpu.weights), kSteeredRelL2);
  EXPECT_LE(rel_l2(on_cuda.in, on_cpu.in), kSteeredRelL2);
  EXPECT_LE(rel_l2(on_cuda.down_in, on_cpu.down_in), kSteeredRelL2);
  EXPECT_LE(rel_l2(on_cuda.outputs, on_cpu.outputs), kSteeredRelL2);
}

}  // namespace
}  // namespace ds4::test
