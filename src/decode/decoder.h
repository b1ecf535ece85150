// src/decode/decoder.h: a request's decode loop over a Session and its generation core. Each
// advance() evaluates the token taken last and takes the next one -- or, with MTP drafting, drafts
// the tokens after it (Session::draft), verifies them in one batch (Session::verify) and takes
// every draft the request's own sampling confirms, so one forward pass may yield several tokens.
// Greedy requests keep a draft while it is the argmax; sampled ones by the speculative-sampling
// rule (sample_draft), so the output's distribution is the one of decoding token by token.
// Owns: the token taken but not yet evaluated, the request's token count against its limit, the
// acceptance counts.
// Does not own: the session, the generation core or the generator (the caller's, borrowed for the
// decoder's life), the prompt (evaluated before), interruption (the caller checks between
// advances).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "ds4/sampling.h"
#include "ds4/session.h"
#include "gen/event.h"
#include "gen/generation.h"

namespace ds4::decode {

// MTP speculative decoding (features.md §4's --mtp-draft / --mtp-margin, issue 51).
struct Drafting {
  int drafts = 0;       // tokens drafted per step; 0: none (or no MTP file: nothing to draft with)
  float margin = 0.0f;  // Session::draft's gate: stop before a draft led by less (logits)
  // Where drafts come from: empty, the session's MTP block (Session::draft, when can_draft());
  // else this, given the token about to be evaluated and the most drafts wanted (replaying a known
  // continuation: benchmarks' replay mode, tests of the acceptance rules).
  std::function<Result<std::vector<TokenId>>(TokenId next, int n)> source;
};

// Drafts proposed and drafts kept, over the advances that drafted.
struct Acceptance {
  int steps = 0;     // verification passes
  int drafted = 0;   // drafts proposed
  int accepted = 0;  // drafts kept
};

// What the caller does per token (ds4-agent: its own token feed, and watching the output as it
// streams).
struct Hooks {
  // A token to take in place of the model's sample, asked for (with the logits the sample would be
  // drawn from) when the generation core forces none; nullopt: sample. (Drafts are checked
  // against it as against a forced token.)
  std::function<std::optional<TokenId>(std::span<const float> logits)> replace;
  // Called after each token taken, with the events it completed; false ends the output after it
  // (the token taken but not evaluated). Its answer is ignored for a token that ends the output.
  std::function<bool(const gen::Generation::Taken&, std::span<const gen::Event> completed)> taken;
};

class Decoder {
 public:
  // `session` holds the prompt and its logits; `limit`: the tokens the request may take at most.
  Decoder(Session& session, gen::Generation& gen, const SamplingParams& sampling, Rng& rng,
          int limit, Drafting drafting, Hooks hooks = {});

  // Takes the next token(s): the first call takes the token after the prompt; each later one
  // evaluates the token taken before and takes at least one more. `tokens` gets every token taken
  // (the one that ends the output included), `events` what they complete. Does nothing once done().
  Status advance(std::vector<TokenId>* tokens, std::vector<gen::Event>* events);

  bool done() const { return end_.has_value() || stopped_ || taken_ >= limit_; }
  // Why the output ended (EOS, a stop string, a closed tool block); nullopt at the limit or before.
  std::optional<gen::FinishReason> end() const { return end_; }
  int taken() const { return taken_; }
  const Acceptance& acceptance() const { return acceptance_; }

 private:
  // Draws and takes one token from `logits` (`draft`: the token verified there, if any). Returns
  // the token the output takes.
  TokenId take(std::span<const float> logits, std::optional<TokenId> draft,
               std::vector<TokenId>* tokens, std::vector<gen::Event>* events);
  Status speculate(const std::vector<TokenId>& drafts, std::vector<TokenId>* tokens,
                   std::vector<gen::Event>* events);

  Session& session_;
  gen::Generation& gen_;
  SamplingParams sampling_;
  Rng& rng_;
  int limit_;
  Drafting drafting_;
  Hooks hooks_;
  std::optional<TokenId> next_;  // taken, not yet evaluated
  bool stopped_ = false;         // Hooks::taken ended the output
  std::optional<gen::FinishReason> end_;
  int taken_ = 0;
  Acceptance acceptance_;
};

}  // namespace ds4::decode
