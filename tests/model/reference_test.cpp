// tests/model/reference_test.cpp: the CPU engine computes Hugging Face transformers'
// DeepseekV4ForCausalLM (float32) on the reference shapes -- for the GGUF written directly and for
// the one converted from an HF checkpoint of the same weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "model_test_util.h"

namespace ds4::test {
namespace {

// The gate: last-position logits within relative L2 1e-4 of HF. (Measured: <= 2e-6.)
constexpr double kLastLogitsRelL2 = 1e-4;
// HF's top-8 logits are stored rounded to 6 decimals; 1e-3 leaves a wide margin over that and
// over float32 reduction-order differences (measured max ~1e-5), yet catches any real defect.
constexpr double kTopLogitAbs = 1e-3;

class Reference : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Reference, MatchesHuggingFaceFloat32) {
  const auto& [shape, variant] = GetParam();
  auto engine = open_model(shape + "-" + variant, /*hf_mode=*/true);
  ASSERT_NE(engine, nullptr);
  const int n_vocab = engine->info().n_vocab;
  const auto cases = load_reference(shape);
  ASSERT_FALSE(cases.empty());
  for (const RefCase& c : cases) {
    SCOPED_TRACE("case of " + std::to_string(c.tokens.size()) + " tokens");
    auto session = engine->create_session({.n_ctx = 1024, .prefill_chunk = 128});
    ASSERT_TRUE(session.is_ok()) << session.status().message();
    Session& s = **session;
    std::vector<float> all;
    auto st = s.append(c.tokens, &all);
    ASSERT_TRUE(st.is_ok()) << st.status().message();
    EXPECT_EQ(st->evaluated, static_cast<int>(c.tokens.size()));
    int top1_mismatch = 0;
    double worst = 0.0;
    for (size_t p = 0; p < c.tokens.size(); ++p) {
      const std::span<const float> row(all.data() + p * n_vocab, n_vocab);
      if (argmax_of(row) != c.topk_ids[p][0]) ++top1_mismatch;
      for (size_t k = 0; k < c.topk_ids[p].size(); ++k) {
        worst = std::max(worst, std::fabs(double(row[c.topk_ids[p][k]]) - c.topk_logits[p][k]));
      }
    }
    EXPECT_EQ(top1_mismatch, 0) << "positions whose argmax differs from HF";
    EXPECT_LT(worst, kTopLogitAbs) << "largest |logit - HF| among HF's top 8 at any position";
    const double err = rel_l2(s.logits(), c.last_logits);
    EXPECT_LT(err, kLastLogitsRelL2);
    std::vector<TokenId> gen;
    for (size_t k = 0; k < c.continuation.size(); ++k) {
      gen.push_back(argmax_of(s.logits()));
      ASSERT_TRUE(s.eval(gen.back()).is_ok());
    }
    EXPECT_EQ(gen, c.continuation) << "32-token greedy continuation";
    std::printf("[ref] %s-%s %zu tokens: last-logits rel L2 %.3g, max top-8 |dlogit| %.3g\n",
                shape.c_str(), variant.c_str(), c.tokens.size(), err, worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Reference,
                         ::testing::Combine(::testing::Values("tiny", "small"),
                                            ::testing::Values("f32", "f32-converted")),
                         [](const auto& param_info) {
                           std::string n =
                               std::get<0>(param_info.param) + "_" + std::get<1>(param_info.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace ds4::test
