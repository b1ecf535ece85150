// tests/model/cuda_test.cpp (label cuda): batched sessions on the CUDA backend against their runs
// alone, the batched decode step of one row per sequence run twice, and speculative verification.
// The Hugging Face and CPU-vs-CUDA gates are in cuda_gates_test.cpp. Every case skips where no GPU
// (or no CUDA build) is available; on the GPU machine `tools/cuda/verify_all.sh gtest` runs them
// (ctest -L cuda). Session state to and from the device: cuda_session_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "batch_driver.h"
#include "model_test_util.h"

namespace ds4::test {
namespace {

constexpr const char* kNoCuda = "no CUDA device (or a build without the CUDA backend)";

// Continuous batching on the CUDA backend: the schedules of batch_test.cpp,
// each request alone (Session::append) and all together (Engine::step, one forward pass per step,
// rows of several sequences). The CUDA attention op cuts a batch into runs of one sequence's
// consecutive rows and the MoE groups all rows' slots by expert, but the kernels are chosen by the
// step's row count (one-row kernels and graphs for a decode row alone; cuBLAS for products of 16
// rows or more; the split HC pre-step from 32), and those add in other orders. So a row in a
// batch is within float rounding of the same row alone, not equal to it. With the FP8 / int8
// simulations on (canonical mode) those roundings flip codes: on the H200 the first mixed step of
// tiny-q2 was already percents apart and its greedy tokens then diverged. Hence the test runs the
// f32 models in Hugging Face mode (simulations off), where only the summation order differs,
// under the Hugging Face gate of cuda_gates_test.cpp; quantized rows are held to its
// distribution gates.
constexpr double kCudaBatchRelL2 = 1e-3;

TEST(CudaBackend, BatchedSessionsMatchTheirRunsAlone) {
  for (const char* name : {"tiny-f32", "small-f32"}) {
    SCOPED_TRACE(name);
    if (!cuda_available()) GTEST_SKIP() << kNoCuda;
    auto gpu = open_cuda_model(name, true);
    ASSERT_NE(gpu, nullptr);
    const std::vector<BatchPlan> plans = batch_plans_for(name);
    const BatchRun alone = run_alone(*gpu, plans);
    const BatchRun batched = run_batched(*gpu, plans);
    ASSERT_EQ(batched.plans.size(), plans.size());
    for (size_t i = 0; i < plans.size(); ++i) {
      EXPECT_EQ(compare_traces(alone.plans[i], batched.plans[i], kCudaBatchRelL2), "")
          << "plan " << i;
      const TraceDistance d = trace_distance(alone.plans[i], batched.plans[i]);
      std::printf("[batch] %s plan %zu: %d of %d entries bit-identical, max rel L2 %.3g\n", name, i,
                  d.bit_identical, d.entries, d.max_rel_l2);
    }
  }
}

// A decode step of kManySeqs one-row sequences (more than the 16 rows from which a single run's
// attention takes the batch kernel, more than the 8 side lanes), batched first on a fresh engine
// so that no one-row step has sized the attention scratch: the step's split kernels need partial
// sums of their own (attention_seqs_scratch_floats). Such a step used to get none and write out
// of bounds (compute-sanitizer on ds4-server with 16 clients, tools/cuda/serve_sanitize.sh).
// Prompts of 24 to 43 tokens: on tiny (top-k 4) every sequence selects.
TEST(CudaBackend, ManySequencesInOneDecodeStepMatchTheirRunsAlone) {
  constexpr int kManySeqs = 20;
  std::vector<BatchPlan> plans;
  for (int i = 0; i < kManySeqs; ++i) {
    plans.push_back({.prompt = test_prompt(24 + i, static_cast<uint32_t>(100 + i)),
                     .start_step = 0,
                     .chunk = 64,
                     .n_decode = 6});
  }
  if (!cuda_available()) GTEST_SKIP() << kNoCuda;
  auto gpu = open_cuda_model("tiny-f32", true);
  ASSERT_NE(gpu, nullptr);
  const BatchRun batched = run_batched(*gpu, plans);
  gpu = open_cuda_model("tiny-f32", true);
  ASSERT_NE(gpu, nullptr);
  const BatchRun alone = run_alone(*gpu, plans);
  EXPECT_TRUE(std::any_of(batched.steps.begin(), batched.steps.end(), [](const StepShape& s) {
    return s.entries == kManySeqs && s.rows == kManySeqs;
  })) << "no step of one row in each of the sequences";
  ASSERT_EQ(batched.plans.size(), plans.size());
  ASSERT_EQ(alone.plans.size(), plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(compare_traces(alone.plans[i], batched.plans[i], kCudaBatchRelL2), "")
        << "plan " << i;
  }
}

// A step of one decode row in each of several sequences launches its RoPE stores and sink
// attention once for all rows, while the compressors and indexer of each sequence run on side
// streams (CudaBackend::attend_sequences). The same schedule on two fresh engines must give the
// same bits: the side streams' joins order every read after its write, and nothing in the step
// depends on which stream finishes first. Quantized canonical mode too (tiny's indexer top_k of
// 4 makes every sequence past position 19 select its own compressed rows), where a race would
// flip an int8 or FP8 code.
TEST(CudaBackend, StepsOfOneRowPerSequenceAreReproducible) {
  for (const auto& [name, hf_mode] : {std::pair{"tiny-q2", false}, std::pair{"small-f32", true}}) {
    SCOPED_TRACE(name);
    if (!cuda_available()) GTEST_SKIP() << kNoCuda;
    const std::vector<BatchPlan> plans = batch_plans_for(name);
    BatchRun runs[2];
    for (BatchRun& run : runs) {
      auto gpu = open_cuda_model(name, hf_mode);
      ASSERT_NE(gpu, nullptr);
      run = run_batched(*gpu, plans);
    }
    const bool decode_step = std::any_of(runs[1].steps.begin(), runs[1].steps.end(), [](auto& s) {
      return s.entries >= 2 && s.rows == s.entries;
    });
    EXPECT_TRUE(decode_step) << "no step of one row in each of several sequences";
    ASSERT_EQ(runs[0].plans.size(), plans.size());
    ASSERT_EQ(runs[1].plans.size(), plans.size());
    for (size_t i = 0; i < plans.size(); ++i)
      EXPECT_EQ(compare_traces(runs[0].plans[i], runs[1].plans[i], 0.0), "") << "plan " << i;
  }
}

// Speculative verification on the CUDA backend (Session::verify_greedy; issue 51): drafted rows run
// as one batch, the rejected ones taken back by the backend's rewind (the compressor lanes' logs,
// CudaBackend::rewind_sequence). A batch of rows is within float rounding of the same rows decoded
// one by one (kCudaBatchRelL2, f32 files in Hugging Face mode), so the reference is a session that
// decoded the kept tokens one by one, held to that tolerance at every step of the continuation,
// which crosses ratio-4 and ratio-128 boundaries that read the restored frontiers. What a rewind
// leaves must also be all there is: a session loaded from its snapshot continues bit for bit.
struct SpecCase {
  std::unique_ptr<Engine> gpu;
  std::vector<TokenId> prompt, cont;
  std::vector<std::vector<float>> logits;  // one-by-one decode: after prompt + cont[0..i)
};

SpecCase spec_case(const char* name, int prompt_len, bool hf_mode = true) {
  SpecCase c;
  c.gpu = open_cuda_model(name, hf_mode);
  if (c.gpu == nullptr) return c;
  c.prompt = test_prompt(prompt_len, 81);
  auto s = c.gpu->create_session({.n_ctx = 512, .prefill_chunk = 64});
  EXPECT_TRUE(s.is_ok());
  EXPECT_TRUE((*s)->append(c.prompt).is_ok());
  for (int i = 0; i < 16; ++i) {
    c.logits.emplace_back((*s)->logits().begin(), (*s)->logits().end());
    c.cont.push_back(argmax_of((*s)->logits()));
    EXPECT_TRUE((*s)->eval(c.cont.back()).is_ok());
  }
  c.logits.emplace_back((*s)->logits().begin(), (*s)->logits().end());
  return c;
}

TEST(CudaBackend, SpeculativeVerificationKeepsTheModelsOwnTokens) {
  for (const char* name : {"tiny-f32", "small-f32"}) {
    SCOPED_TRACE(name);
    if (!cuda_available()) GTEST_SKIP() << kNoCuda;
    SpecCase c = spec_case(name, 120);
    ASSERT_NE(c.gpu, nullptr);
    auto s = c.gpu->create_session({.n_ctx = 512, .prefill_chunk = 64});
    ASSERT_TRUE(s.is_ok() && (*s)->append(c.prompt).is_ok());
    size_t at = 0;
    for (int n : {4, 4, 5}) {  // positions 120..132: both compression boundaries
      auto kept = (*s)->verify_greedy(std::span(c.cont).subspan(at, static_cast<size_t>(n)));
      ASSERT_TRUE(kept.is_ok()) << kept.status().message();
      EXPECT_EQ(*kept, n);
      at += static_cast<size_t>(*kept);
      EXPECT_LE(rel_l2((*s)->logits(), c.logits[at]), kCudaBatchRelL2) << "after " << at;
    }
  }
}

// Greedy decoding with drafts must give the tokens of one-row decode on the GPU too (issue 51),
// and on random weights (the synthesized Flash file) the top two logits are often closer than a
// rounding: so a verification's rows must have the bits of the same rows decoded one at a time,
// not logits within a tolerance. The kernels take a few rows (up to 7: --mtp-draft 4 verifies 5)
// by the one-row kernels' arithmetic (kernels/matmul_q_test.cpp
// FewSlotsGiveEachSlotTheBitsOfItsRowAlone); here the whole forward, in the quantized canonical
// mode that runs the published files (FP8 / FP4 simulations on) and in Hugging Face mode, runs of
// 2 to 5 rows across both compression boundaries.
TEST(CudaBackend, VerificationRowsHaveTheBitsOfDecodedRows) {
  for (const char* name : {"tiny-q2", "small-q2", "small-f32"}) {
    for (bool hf_mode : {false, true}) {
      SCOPED_TRACE(std::string(name) + (hf_mode ? " hf" : " canonical"));
      if (!cuda_available()) GTEST_SKIP() << kNoCuda;
      SpecCase c = spec_case(name, 118, hf_mode);
      ASSERT_NE(c.gpu, nullptr);
      auto s = c.gpu->create_session({.n_ctx = 512, .prefill_chunk = 64});
      ASSERT_TRUE(s.is_ok() && (*s)->append(c.prompt).is_ok());
      size_t at = 0;
      for (int n : {2, 2, 3, 3, 5}) {  // positions 118..133
        auto kept = (*s)->verify_greedy(std::span(c.cont).subspan(at, static_cast<size_t>(n)));
        ASSERT_TRUE(kept.is_ok()) << kept.status().message();
        EXPECT_EQ(*kept, n) << "at " << at;
        at += static_cast<size_t>(*kept);
        EXPECT_EQ(rel_l2((*s)->logits(), c.logits[at]), 0.0) << "after " << at;
      }
    }
  }
}

TEST(CudaBackend, SpeculativeVerificationTakesRejectedRowsBack) {
  for (const char* name : {"tiny-f32", "small-f32"}) {
    SCOPED_TRACE(name);
    if (!cuda_available()) GTEST_SKIP() << kNoCuda;
    // Drafts at positions 125..129: the rejected rows include 127 (both lanes emit) and 128 (a
    // ratio-128 frontier row of the next window, over one of the window just emitted).
    SpecCase c = spec_case(name, 125);
    ASSERT_NE(c.gpu, nullptr);
    for (int wrong : {1, 2, 3}) {
      SCOPED_TRACE(wrong);
      auto s = c.gpu->create_session({.n_ctx = 512, .prefill_chunk = 64});
      ASSERT_TRUE(s.is_ok() && (*s)->append(c.prompt).is_ok());
      std::vector<TokenId> drafts(c.cont.begin(), c.cont.begin() + 5);
      drafts[static_cast<size_t>(wrong)] = (drafts[static_cast<size_t>(wrong)] + 1) % 900 + 7;
      auto kept = (*s)->verify_greedy(drafts);
      ASSERT_TRUE(kept.is_ok()) << kept.status().message();
      ASSERT_EQ(*kept, wrong);
      auto bytes = (*s)->save();
      ASSERT_TRUE(bytes.is_ok());
      auto loaded = c.gpu->create_session({.n_ctx = 512, .prefill_chunk = 64});
      ASSERT_TRUE(loaded.is_ok() && (*loaded)->load(*bytes).is_ok());
      for (size_t i = static_cast<size_t>(wrong); i < c.cont.size(); ++i) {
        EXPECT_LE(rel_l2((*s)->logits(), c.logits[i]), kCudaBatchRelL2) << "position " << i;
        EXPECT_EQ(rel_l2((*s)->logits(), (*loaded)->logits()), 0.0) << "position " << i;
        ASSERT_TRUE((*s)->eval(c.cont[i]).is_ok());
        ASSERT_TRUE((*loaded)->eval(c.cont[i]).is_ok());
      }
    }
  }
}

// MTP drafting on the CUDA backend (model.md §8): greedy decoding through Session::step_greedy
// (the block's drafts after each greedy token, verified as one batch, rejected rows taken back)
// gives the tokens of plain greedy decoding on the same engine (f32, Hugging Face mode: the
// batched and one-row logits agree within kCudaBatchRelL2, far inside the random model's margins).
TEST(CudaBackend, MtpSpeculativeGreedyEqualsPlainGreedy) {
  if (!cuda_available()) GTEST_SKIP() << kNoCuda;
  EngineOptions o;
  o.model_path = model_path("tiny-f32");
  o.mtp_path = model_path("tiny-mtp");
  o.backend = BackendKind::kCuda;
  o.qat_simulation = false;
  o.f16_kv_rows = false;
  auto e = Engine::open(o);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  const std::vector<TokenId> prompt = test_prompt(100, 7);
  auto plain = (*e)->create_session({.n_ctx = 512, .prefill_chunk = 64});
  ASSERT_TRUE(plain.is_ok() && (*plain)->append(prompt).is_ok());
  std::vector<TokenId> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back(argmax_of((*plain)->logits()));
    ASSERT_TRUE((*plain)->eval(want.back()).is_ok());
  }
  for (int drafts : {1, 3}) {
    auto s = (*e)->create_session({.n_ctx = 512, .prefill_chunk = 64});
    ASSERT_TRUE(s.is_ok() && (*s)->append(prompt).is_ok());
    ASSERT_TRUE((*s)->can_draft());
    while ((*s)->n_tokens() < (*plain)->n_tokens()) {
      auto n = (*s)->step_greedy(drafts);
      ASSERT_TRUE(n.is_ok()) << n.status().message();
    }
    std::vector<TokenId> got((*s)->tokens().begin() + prompt.size(), (*s)->tokens().end());
    got.resize(want.size());
    EXPECT_EQ(got, want) << drafts << " drafts";
  }
}

}  // namespace
}  // namespace ds4::test
