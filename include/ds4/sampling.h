// include/ds4/sampling.h: turning a logits row into a token (model.md §7).
// Owns: sampling parameters, the seeded xorshift64* generator, greedy/temperature/top-k/top-p/min-p
// selection and top log-probabilities. Deterministic for a seed: the same logits, parameters and
// generator state always give the same token.
// Does not own: server-side overrides (thinking mode forcing T = 1, DSML syntax forcing T = 0).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ds4/types.h"

namespace ds4 {

struct SamplingParams {
  float temperature = 1.0f;  // <= 0: greedy
  int top_k = 0;             // <= 0: whole vocabulary; else at most 1024 candidates
  float top_p = 1.0f;        // outside (0, 1]: 1
  float min_p = 0.05f;       // relative to the best token's probability; < 0: 0
  uint64_t seed = 0;         // 0 is replaced by a fixed non-zero state
};

// xorshift64*: x ^= x >> 12; x ^= x << 25; x ^= x >> 27; out = x * 0x2545F4914F6CDD1D.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed == 0 ? 0x9e3779b97f4a7c15ull : seed) {}
  uint64_t next();
  // Uniform in [0, 1): the top 24 bits of the output over 2^24.
  float uniform() { return static_cast<float>((next() >> 40) & 0xFFFFFF) / 16777216.0f; }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

inline constexpr float kNegInf = -1.0e30f;  // logits at or below this are "minus infinity"

// How sample() draws under `params`, with top_p and min_p as it uses them: greedy (the argmax:
// temperature not above 0, NaN too), the whole vocabulary (no top-k, top_p 1: temperature and
// min_p alone; Engine::pick makes these two on a device too), or a sorted candidate list.
struct DrawRule {
  enum Kind { kGreedy, kWholeVocabulary, kSorted } kind;
  float top_p;  // outside (0, 1]: 1
  float min_p;  // below 0: 0
};
DrawRule draw_rule(const SamplingParams& params);

// Index of the largest logit, lowest index on ties; 0 when every logit is <= kNegInf or NaN.
TokenId argmax(std::span<const float> logits);

// Draws a token. Consumes exactly one uniform from `rng` unless the draw is greedy.
TokenId sample(std::span<const float> logits, const SamplingParams& params, Rng& rng);

// Speculative sampling with a drafted token (issue 51; model.md §8): a draw from exactly the
// distribution sample() draws from, made so that it returns `draft` as often as possible -- the
// draft with its probability p under `params`, otherwise a token drawn from the distribution
// without the draft (renormalised). Each token t != draft thus comes out with probability
// (1 - p) * q(t) / (1 - p) = q(t): the output is the target's distribution whatever the drafts
// are. Greedy params: argmax. Consumes one uniform, two when the draft is refused (so a seed gives
// other tokens than sample() gives, from the same distribution).
TokenId sample_draft(std::span<const float> logits, const SamplingParams& params, TokenId draft,
                     Rng& rng);

struct TokenLogprob {
  TokenId id;
  float logprob;
};
// The k most probable tokens with log-softmax values (log_sum_exp's normaliser), best first, lower
// id first on ties.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k);
// log(sum exp(logit)) over the finite logits, in double (each token's log-softmax is its logit
// less this); -infinity when none is finite.
double log_sum_exp(std::span<const float> logits);

}  // namespace ds4
