// tests/model/cuda_test.cpp (label cuda): the CUDA backend against the Hugging Face reference and
// against the CPU backend. Skips where no GPU (or no CUDA build) is available; on the GPU machine,
// which lacks GoogleTest, the same checks run through tools/cuda/verify_all.sh (steps check, long).
#include <gtest/gtest.h>

#include "model_test_util.h"

namespace ds4::test {
namespace {

std::unique_ptr<Engine> open_cuda(const std::string& name, bool hf_mode) {
  EngineOptions o;
  o.model_path = model_path(name);
  o.backend = BackendKind::kCuda;
  o.qat_simulation = !hf_mode;
  o.f16_kv_rows = !hf_mode;
  auto e = Engine::open(o);
  return e.is_ok() ? std::move(e).value() : nullptr;
}

TEST(CudaBackend, MatchesHuggingFaceAndTheCpuBackend) {
  auto gpu = open_cuda("tiny-f32", true);
  if (gpu == nullptr) GTEST_SKIP() << "no CUDA device";
  for (const RefCase& c : load_reference("tiny")) {
    auto s = gpu->create_session({.n_ctx = 1024, .prefill_chunk = 128});
    ASSERT_TRUE(s.is_ok());
    ASSERT_TRUE((*s)->append(c.tokens).is_ok());
    EXPECT_LT(rel_l2((*s)->logits(), c.last_logits), 1e-4);
  }
  auto cpu = open_model("tiny-q2", false);
  auto gq = open_cuda("tiny-q2", false);
  ASSERT_NE(gq, nullptr);
  const auto toks = load_reference("tiny").back().tokens;
  auto a = cpu->create_session({.n_ctx = 1024, .prefill_chunk = 128});
  auto b = gq->create_session({.n_ctx = 1024, .prefill_chunk = 128});
  ASSERT_TRUE((*a)->append(toks).is_ok() && (*b)->append(toks).is_ok());
  EXPECT_LT(rel_l2((*b)->logits(), (*a)->logits()), 1e-4);
}

}  // namespace
}  // namespace ds4::test
