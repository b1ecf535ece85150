// src/decode/decoder.cpp: plain and speculative decode steps over one session.
#include "decode/decoder.h"

#include <algorithm>
#include <utility>

namespace ds4::decode {

Decoder::Decoder(Session& session, gen::Generation& gen, const SamplingParams& sampling, Rng& rng,
                 int limit, Drafting drafting, Hooks hooks)
    : session_(session),
      gen_(gen),
      sampling_(sampling),
      rng_(rng),
      limit_(std::max(0, limit)),
      drafting_(std::move(drafting)),
      hooks_(std::move(hooks)) {}

TokenId Decoder::take(std::span<const float> logits, std::optional<TokenId> draft,
                      std::vector<TokenId>* tokens, std::vector<gen::Event>* events) {
  const gen::Generation::Draw d = gen_.draw(sampling_, limit_ - taken_);
  std::optional<TokenId> sampled = d.forced;
  if (!sampled && hooks_.replace) sampled = hooks_.replace(logits);
  if (!sampled) {
    sampled = draft ? sample_draft(logits, d.params, *draft, rng_) : sample(logits, d.params, rng_);
  }
  const size_t before = events->size();
  const gen::Generation::Taken t = gen_.take(d, *sampled, events);
  ++taken_;
  tokens->push_back(t.id);
  const bool go_on =
      !hooks_.taken || hooks_.taken(t, std::span<const gen::Event>(*events).subspan(before));
  if (t.end) {
    end_ = t.end;
    next_.reset();
  } else if (!go_on) {
    stopped_ = true;
    next_.reset();
  } else {
    next_ = t.id;
  }
  return t.id;
}

Status Decoder::advance(std::vector<TokenId>* tokens, std::vector<gen::Event>* events) {
  if (done()) return Status::ok();
  if (!next_) {  // the first token, from the prompt's logits
    take(session_.logits(), std::nullopt, tokens, events);
    return Status::ok();
  }
  const int room = limit_ - taken_;  // tokens still to take; drafts leave one for the step's last
  if (drafting_.drafts > 0 && room >= 2 && (drafting_.source || session_.can_draft())) {
    const int n = std::min({drafting_.drafts, room - 1, 16});
    DS4_ASSIGN_OR_RETURN(std::vector<TokenId> drafts,
                         drafting_.source ? drafting_.source(*next_, n)
                                          : session_.draft(*next_, n, drafting_.margin));
    if (drafts.size() > static_cast<size_t>(n)) drafts.resize(static_cast<size_t>(n));
    if (!drafts.empty()) return speculate(drafts, tokens, events);
  }
  DS4_TRY(session_.eval(*next_));
  take(session_.logits(), std::nullopt, tokens, events);
  return Status::ok();
}

Status Decoder::speculate(const std::vector<TokenId>& drafts, std::vector<TokenId>* tokens,
                          std::vector<gen::Event>* events) {
  std::vector<TokenId> run{*next_};
  run.insert(run.end(), drafts.begin(), drafts.end());
  bool stopped = false;  // the output ended or reached its limit inside the run
  const auto accept = [&](int k, std::span<const float> logits) {
    if (stopped) return false;
    const TokenId got = take(logits, run[size_t(k)], tokens, events);
    // An ending token is taken but not evaluated, as decoding one by one leaves it.
    if (end_ || stopped_) stopped = true;
    if (stopped || got != run[size_t(k)]) return false;
    if (taken_ >= limit_) stopped = true;
    return true;
  };
  DS4_ASSIGN_OR_RETURN(const int kept, session_.verify(run, accept));
  ++acceptance_.steps;
  acceptance_.drafted += static_cast<int>(drafts.size());
  acceptance_.accepted += kept - 1;
  // Every draft kept and the output goes on: its next token comes from the last row's logits.
  // Otherwise the output ended, or the token taken in place of a refused draft waits in next_.
  if (kept == static_cast<int>(run.size()) && !done()) {
    take(session_.logits(), std::nullopt, tokens, events);
  }
  return Status::ok();
}

}  // namespace ds4::decode
