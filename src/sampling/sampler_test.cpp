// Protects: the sampling rules of model.md §7 -- the xorshift64* stream, greedy ties, min-p/top-p/
// top-k truncation, determinism for a seed, and that draws follow softmax(logits / T) (checked
// statistically against probabilities computed here in double).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "ds4/sampling.h"

namespace ds4 {
namespace {

TEST(Sampling, RngIsXorshift64Star) {
  Rng rng(12345);
  uint64_t x = 12345;
  for (int i = 0; i < 1000; ++i) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ASSERT_EQ(rng.next(), x * 0x2545F4914F6CDD1Dull);
  }
  EXPECT_EQ(Rng(0).state(), 0x9e3779b97f4a7c15ull);  // a zero state would stay zero forever
  Rng u(7);
  for (int i = 0; i < 10000; ++i) {
    const float v = u.uniform();
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
  }
}

TEST(Sampling, ArgmaxTiesAndDegenerateRows) {
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{kNegInf, kNegInf}), 0);
  EXPECT_EQ(argmax(std::vector<float>{NAN, 0.5f, NAN}), 1);
  Rng rng(1);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  EXPECT_EQ(sample(std::vector<float>{0, 5, 5}, greedy, rng), 1);
  EXPECT_EQ(rng.state(), 1u);  // greedy consumes no randomness
}

std::map<TokenId, double> frequencies(const std::vector<float>& logits, const SamplingParams& p,
                                      int n) {
  Rng rng(p.seed);
  std::map<TokenId, double> f;
  for (int i = 0; i < n; ++i) f[sample(logits, p, rng)] += 1.0 / n;
  return f;
}

std::vector<double> softmax(const std::vector<float>& l, double t) {
  double m = -1e300, s = 0;
  for (float v : l) m = std::max(m, double(v));
  std::vector<double> p;
  for (float v : l) p.push_back(std::exp((v - m) / t)), s += p.back();
  for (double& v : p) v /= s;
  return p;
}

TEST(Sampling, DrawsFollowTheTemperatureSoftmax) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f};
  for (float t : {0.7f, 1.0f, 1.5f}) {
    for (int top_k : {0, 5}) {
      SamplingParams p;
      p.temperature = t;
      p.min_p = 0.0f;
      p.top_k = top_k;
      p.seed = 99;
      const auto f = frequencies(logits, p, 200000);
      const auto want = softmax(logits, t);
      for (size_t i = 0; i < logits.size(); ++i) {
        // 200k draws: the standard error of a frequency is below 0.0012; allow 4.5 sigma.
        EXPECT_NEAR(f.count(TokenId(i)) ? f.at(TokenId(i)) : 0.0, want[i], 0.0055)
            << "T=" << t << " k=" << top_k;
      }
    }
  }
}

TEST(Sampling, MinPTopPAndTopKTruncate) {
  const std::vector<float> logits = {3.0f, 2.9f, 0.0f, -5.0f, 1.0f};
  SamplingParams p;
  p.seed = 5;
  p.min_p = 0.1f;  // exp(-3) = 0.05 and exp(-8) are below 0.1 of the best: ids 2 and 3 never drawn
  auto f = frequencies(logits, p, 20000);
  EXPECT_EQ(f.count(2), 0u);
  EXPECT_EQ(f.count(3), 0u);
  EXPECT_GT(f[4], 0.0);  // exp(-2) = 0.135 stays
  p.min_p = 0.0f;
  p.top_p = 0.5f;  // the best token alone holds 0.49 of the mass: the top two are kept
  f = frequencies(logits, p, 20000);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_GT(f[0], f[1]);
  p.top_p = 1.0f;
  p.top_k = 1;
  f = frequencies(logits, p, 1000);
  EXPECT_EQ(f.size(), 1u);
  EXPECT_EQ(f.count(0), 1u);
  p.top_k = 2;
  f = frequencies(std::vector<float>{1, 5, 5, 5}, p, 2000);  // ties keep the lower ids
  EXPECT_EQ(f.count(3), 0u);
}

// The full-vocabulary path skips the exponentials of tokens far under min_p; tokens just above
// the cut keep their weight and tokens just under it none, at temperatures above and below 1.
TEST(Sampling, MinPBoundaryIsExactOnTheFullVocabularyPath) {
  for (const float t : {0.6f, 1.0f, 1.7f}) {
    SamplingParams p;
    p.seed = 11;
    p.temperature = t;
    p.min_p = 0.05f;
    const float edge = std::log(p.min_p) * t;  // logit offset whose weight is exactly min_p
    const std::vector<float> logits = {0.0f, edge + 1e-3f * t, edge - 1e-3f * t, -40.0f};
    auto f = frequencies(logits, p, 40000);
    EXPECT_GT(f[1], 0.03) << t;  // weight ~0.05 of ~1.05: drawn ~4.8% of the time
    EXPECT_EQ(f.count(2), 0u) << t;
    EXPECT_EQ(f.count(3), 0u) << t;
  }
}

// The full-vocabulary draw skips tokens far under min_p before dividing by the temperature and
// walks only the kept tokens; it must draw exactly what the plain rule draws: every token's
// weight exp((v - max) / t), zero under min_p, one uniform scaled by their sum, walked in id order.
TEST(Sampling, FullVocabularyDrawEqualsThePlainWalk) {
  std::vector<float> logits(129280);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(float(i) * 0.37f) * 9.0f;
  logits[5] = NAN;
  logits[6] = kNegInf;
  for (const float t : {0.05f, 0.7f, 1.0f, 2.5f}) {
    for (const float min_p : {0.0f, 0.05f, 0.3f}) {
      SamplingParams p;
      p.temperature = t;
      p.min_p = min_p;
      Rng fast(99), plain(99);
      for (int n = 0; n < 16; ++n) {
        float max = kNegInf;
        for (float v : logits) {
          if (std::isfinite(v)) max = std::max(max, v);
        }
        auto w = [&](float v) {
          if (!std::isfinite(v)) return 0.0f;
          const float q = std::exp((v - max) / t);
          return q < min_p ? 0.0f : q;
        };
        float sum = 0.0f;
        for (float v : logits) sum += w(v);
        float r = plain.uniform() * sum;
        TokenId want = argmax(logits);
        for (size_t i = 0; i < logits.size(); ++i) {
          const float q = w(logits[i]);
          if (q == 0.0f) continue;
          r -= q;
          if (r <= 0.0f) {
            want = static_cast<TokenId>(i);
            break;
          }
        }
        ASSERT_EQ(sample(logits, p, fast), want)
            << "t " << t << " min_p " << min_p << " draw " << n;
      }
    }
  }
}

TEST(Sampling, SameSeedSameTokensAndNonFiniteLogitsAreNeverDrawn) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(float(i)) * 3;
  logits[7] = INFINITY;
  logits[8] = NAN;
  logits[9] = kNegInf;
  SamplingParams p;
  p.seed = 2026;
  p.min_p = 0.0f;
  Rng a(p.seed), b(p.seed);
  for (int i = 0; i < 500; ++i) {
    const TokenId x = sample(logits, p, a);
    ASSERT_EQ(x, sample(logits, p, b));
    ASSERT_TRUE(x != 7 && x != 8 && x != 9) << x;
  }
}

// Speculative sampling: whatever token is drafted, sample_draft draws from the distribution
// sample() draws from (each path: full vocabulary with and without min_p, top-k, top-p), and it
// returns the draft with the draft's probability. 200k draws each: a frequency's standard error
// is below 0.0012; 4.5 sigma allowed.
TEST(Sampling, DraftedDrawsFollowThePlainDistribution) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, kNegInf};
  struct Case {
    float t, min_p, top_p;
    int top_k;
  };
  for (const Case c : {Case{1.0f, 0.0f, 1.0f, 0}, Case{0.7f, 0.1f, 1.0f, 0},
                       Case{1.3f, 0.0f, 1.0f, 4}, Case{1.0f, 0.0f, 0.8f, 0}}) {
    SamplingParams p;
    p.temperature = c.t;
    p.min_p = c.min_p;
    p.top_p = c.top_p;
    p.top_k = c.top_k;
    p.seed = 31;
    const auto plain = frequencies(logits, p, 200000);
    for (const TokenId draft : {0, 2, 4, 5}) {  // 4 is cut by some cases, 5 is never drawable
      Rng rng(77 + draft);
      std::map<TokenId, double> f;
      for (int i = 0; i < 200000; ++i) f[sample_draft(logits, p, draft, rng)] += 1.0 / 200000;
      for (TokenId id = 0; id < TokenId(logits.size()); ++id) {
        const double want = plain.count(id) ? plain.at(id) : 0.0;
        const double got = f.count(id) ? f.at(id) : 0.0;
        EXPECT_NEAR(got, want, 0.0075)
            << "T=" << c.t << " min_p=" << c.min_p << " top_p=" << c.top_p << " k=" << c.top_k
            << " draft " << draft << " token " << id;
        if (want == 0.0) {
          EXPECT_EQ(got, 0.0) << "a token the plain draw never gives: " << id;
        }
      }
    }
  }
  // Greedy: argmax, whatever the draft, and no randomness used.
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Rng rng(5);
  EXPECT_EQ(sample_draft(logits, greedy, 3, rng), 0);
  EXPECT_EQ(rng.state(), 5u);
}

TEST(Sampling, TopLogprobsAreLogSoftmax) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, -2.0f, kNegInf};
  const auto top = top_logprobs(logits, 10);
  ASSERT_EQ(top.size(), 4u);  // the -inf token is excluded
  EXPECT_EQ(top[0].id, 1);
  EXPECT_EQ(top[1].id, 2);
  const auto want = softmax({1.0f, 3.0f, 3.0f, -2.0f}, 1.0);
  double total = 0;
  for (const auto& t : top) {
    EXPECT_NEAR(t.logprob, std::log(want[t.id]), 1e-6);
    total += std::exp(double(t.logprob));
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
}

}  // namespace
}  // namespace ds4
