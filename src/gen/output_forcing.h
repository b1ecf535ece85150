// src/gen/output_forcing.h: tokens the server writes into a request's output in place of the
// model's, for a forced tool choice and for a reasoning budget.
// Owns: when the output proper starts (at once, or after </think> in thinking mode); with
// tool_choice required / named (output_spec.h ToolChoice) the DSML shape of the block written there
// (dsml_shape.h): the text that is the only way on is forced, every sampled token inside the
// block is vetted against the shape, and one that cannot continue it (EOS included) is replaced
// by the shortest text that closes the block; an EOS sampled inside the reasoning becomes
// </think>, so the block still comes; when the tokens left would not hold the rest, the reasoning
// or the block is closed early (a forced call ends well-formed rather than cut by max_tokens);
// with a reasoning budget, </think> once the reasoning has that many tokens. Forced tokens are
// output tokens: the session evaluates them, the raw output (and so the remembered DSML block)
// holds them, and the prompt is not changed. Where the reasoning ends is the DSML automaton's
// call (chat/dsml_automaton.h), as for the output parser. Does not own: sampling (the
// scheduler), greedy structure (the automaton), events (Generation).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "chat/dsml_automaton.h"
#include "ds4/chat.h"
#include "ds4/tokenizer.h"
#include "gen/dsml_shape.h"
#include "gen/output_spec.h"

namespace ds4::gen {

class OutputForcing {
 public:
  OutputForcing(const Tokenizer& tok, const OutputSpec& spec);

  // The token to take instead of sampling one, if the output must go on with a known text.
  // `remaining`: the tokens the request may still generate, this one included.
  std::optional<TokenId> next(int remaining);
  // The sampled token, or the first token of the text that replaces it.
  TokenId vet(TokenId sampled);
  // Every token taken (forced, vetted or from the test hook), in order, EOS excepted.
  void taken(TokenId id);

 private:
  enum class Phase { kReasoning, kBlock, kFree };
  void queue(std::string_view text);
  TokenId pop();
  void after_reasoning(std::string_view rest);
  int tokens_of(std::string_view text) const;

  const Tokenizer* tok_;
  bool force_tools_;
  int budget_;
  Phase phase_;
  DsmlShape shape_;
  std::deque<TokenId> queue_;      // forced tokens not taken yet
  chat::DsmlAutomaton reasoning_;  // the taken bytes, while the reasoning lasts
  size_t reasoning_fed_ = 0;       // bytes fed to it
  int reasoning_tokens_ = 0;
  bool closing_ = false;  // </think> is queued
  // Tokens of "</think>" plus the forced block's shortest close. The shape is not fed during
  // the reasoning, so this is the same at every reasoning step: counted once, when first asked.
  std::optional<int> reasoning_close_tokens_;
};

}  // namespace ds4::gen
