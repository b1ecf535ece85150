// src/sampling/sampler.cpp: the sampling rules of model.md §7. Candidates are ordered by logit
// descending with ties broken towards the lower id everywhere (ds4's full-vocabulary top-p path
// used an unstable sort; we fix the order so a seed fully determines the result).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ds4/sampling.h"

namespace ds4 {
namespace {

bool finite_logit(float v) { return v > kNegInf && std::isfinite(v); }

struct Cand {
  TokenId id;
  float logit;
};

// The distribution a draw picks from: candidate tokens with unnormalised weights, in the order
// the draw walks them, and the token taken when rounding leaves the walk without a pick.
struct Weighted {
  TokenId id;
  float w;
};
struct Weights {
  std::vector<Weighted> kept;
  float sum = 0.0f;
  TokenId fallback = 0;
};

// One uniform scaled to the weights' sum, walked down the candidates.
TokenId draw(const Weights& d, Rng& rng) {
  float r = rng.uniform() * d.sum;
  for (const Weighted& c : d.kept) {
    r -= c.w;
    if (r <= 0.0f) return c.id;
  }
  return d.fallback;
}

// Truncate the sorted candidates by min_p then top_p (model.md §7, top-k path).
Weights sorted_weights(const std::vector<Cand>& c, float t, float top_p, float min_p) {
  std::vector<float> p(c.size());
  float s = 0.0f;
  for (size_t i = 0; i < c.size(); ++i) {
    p[i] = std::exp((c[i].logit - c[0].logit) / t);
    s += p[i];
  }
  const float min_prob = (p[0] / s) * min_p;
  Weights d;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i > 0 && p[i] / s < min_prob) break;
    d.sum += p[i];
    d.kept.push_back({c[i].id, p[i]});
    if (d.sum / s >= top_p) break;
  }
  d.fallback = d.kept.back().id;
  return d;
}

// The largest finite logit, and argmax's token (the first largest value, NaN skipped), in one
// pass. Not inlined: inside the sampler GCC 12 kept the running maximum on the stack, a load and
// a store per token; out of line, a 129,280-token draw takes about half the time.
struct Extremes {
  float max;
  TokenId argmax;
};
[[gnu::noinline]] Extremes extremes(std::span<const float> logits) {
  float hi = kNegInf, best_v = kNegInf;
  TokenId best = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (v > best_v) best_v = v, best = static_cast<TokenId>(i);
    if (finite_logit(v) && v > hi) hi = v;
  }
  return {hi, best};
}

Weights full_vocab_weights(std::span<const float> logits, float t, float min_p) {
  // One pass for the extremes, one for the weights; the draw then walks only the tokens of
  // nonzero weight, in id order, as a walk over the whole vocabulary would (the server pays this
  // per decoded row).
  const Extremes ex = extremes(logits);
  const float max = ex.max;
  Weights d;
  d.fallback = ex.argmax;
  if (max <= kNegInf) return d;  // no candidate: the draw gives argmax
  // Below `cut` a token's weight is under min_p whatever exp's rounding (exp(cut) is 1% under
  // min_p), so its exponential is skipped: with the default min_p almost every token's is. The
  // weights are the same.
  const float cut = min_p > 0.0f ? std::log(min_p) - 0.01f : -INFINITY;
  auto weight = [&](float v) -> float {
    if (!finite_logit(v)) return 0.0f;
    const float z = (v - max) / t;
    if (z < cut) return 0.0f;
    const float p = std::exp(z);
    return p < min_p ? 0.0f : p;  // relative to the best token's probability (which is 1)
  };
  // A cheaper test first, with no division: a logit under `floor` is also under `cut`, by a
  // margin of 0.01 t that the roundings of (v - max) / t (relative 2^-24 of the operands) cannot
  // close at the temperatures it is used for, so skipping those tokens leaves the same weights.
  const bool prefilter = min_p > 0.0f && t >= 1e-3f;
  const float floor = prefilter ? max + (cut - 0.01f) * t : kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {  // the tokens of nonzero weight
    if (!(logits[i] >= floor)) continue;        // NaN and -inf too: their weight is 0
    const float p = weight(logits[i]);
    if (p == 0.0f) continue;
    d.sum += p;
    d.kept.push_back({static_cast<TokenId>(i), p});
  }
  return d;
}

// The weights sample() draws from with non-greedy `params`.
Weights weights(std::span<const float> logits, const SamplingParams& params) {
  const DrawRule rule = draw_rule(params);
  const float top_p = rule.top_p, min_p = rule.min_p;
  if (rule.kind == DrawRule::kWholeVocabulary)
    return full_vocab_weights(logits, params.temperature, min_p);
  std::vector<Cand> c;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (finite_logit(logits[i])) c.push_back({static_cast<TokenId>(i), logits[i]});
  }
  if (c.empty()) return Weights{.kept = {}, .sum = 0.0f, .fallback = argmax(logits)};
  auto better = [](const Cand& a, const Cand& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
  };
  if (params.top_k > 0) {
    const size_t k = std::min<size_t>({static_cast<size_t>(params.top_k), 1024, c.size()});
    std::partial_sort(c.begin(), c.begin() + static_cast<ptrdiff_t>(k), c.end(), better);
    c.resize(k);
  } else {
    std::sort(c.begin(), c.end(), better);
  }
  return sorted_weights(c, params.temperature, top_p, min_p);
}

}  // namespace

DrawRule draw_rule(const SamplingParams& params) {
  const float top_p = (params.top_p > 0.0f && params.top_p <= 1.0f) ? params.top_p : 1.0f;
  const float min_p = std::max(params.min_p, 0.0f);
  if (!(params.temperature > 0.0f)) return {DrawRule::kGreedy, top_p, min_p};
  if (params.top_k <= 0 && top_p >= 1.0f) return {DrawRule::kWholeVocabulary, top_p, min_p};
  return {DrawRule::kSorted, top_p, min_p};
}

uint64_t Rng::next() {
  uint64_t x = state_;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  state_ = x;
  return x * 0x2545F4914F6CDD1Dull;
}

TokenId argmax(std::span<const float> logits) {
  TokenId best = 0;
  float best_v = kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > best_v) {  // NaN compares false and is skipped
      best_v = logits[i];
      best = static_cast<TokenId>(i);
    }
  }
  return best;
}

TokenId sample(std::span<const float> logits, const SamplingParams& params, Rng& rng) {
  if (logits.empty()) return 0;
  if (draw_rule(params).kind == DrawRule::kGreedy) return argmax(logits);
  const Weights d = weights(logits, params);
  if (d.kept.empty()) return d.fallback;  // nothing finite: no uniform drawn, as before
  return draw(d, rng);
}

TokenId sample_draft(std::span<const float> logits, const SamplingParams& params, TokenId draft,
                     Rng& rng) {
  if (logits.empty()) return 0;
  if (draw_rule(params).kind == DrawRule::kGreedy) return argmax(logits);
  Weights d = weights(logits, params);
  if (d.kept.empty()) return d.fallback;
  auto it = std::find_if(d.kept.begin(), d.kept.end(),
                         [draft](const Weighted& c) { return c.id == draft; });
  if (it == d.kept.end()) return draw(d, rng);  // the draft cannot be drawn: the plain draw
  // Accept the draft with its probability p = w / sum; else draw from what is left, whose total
  // is (1 - p) of the distribution, so every other token keeps its probability w' / sum.
  const float w = it->w;
  if (rng.uniform() * d.sum < w) return draft;
  if (w >= d.sum) return draft;  // rounding: the draft was the whole distribution
  d.sum -= w;
  d.kept.erase(it);
  if (d.kept.empty()) return draft;
  if (d.fallback == draft) d.fallback = d.kept.back().id;
  return draw(d, rng);
}

double log_sum_exp(std::span<const float> logits) {
  double max = -INFINITY;
  for (float v : logits) {
    if (finite_logit(v)) max = std::max(max, static_cast<double>(v));
  }
  if (!std::isfinite(max)) return -INFINITY;
  double sum = 0.0;
  for (float v : logits) {
    if (finite_logit(v)) sum += std::exp(static_cast<double>(v) - max);
  }
  return max + std::log(sum);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k) {
  const double lse = log_sum_exp(logits);
  if (k <= 0 || !std::isfinite(lse)) return {};
  std::vector<TokenId> ids;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (finite_logit(logits[i])) ids.push_back(static_cast<TokenId>(i));
  }
  const size_t n = std::min(ids.size(), static_cast<size_t>(k));
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(),
      [&](TokenId a, TokenId b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
  std::vector<TokenLogprob> out;
  for (size_t i = 0; i < n; ++i) out.push_back({ids[i], static_cast<float>(logits[ids[i]] - lse)});
  return out;
}

}  // namespace ds4
