// tools/quality/score.h: `ds4-gguf quality` -- a model file scored against recorded continuations
// (vectors.h): per case the prompt rendered as a non-thinking user turn, then each recorded token
// forced in turn; at each step the log-likelihood of the recorded token, whether it is the model's
// top-1, and the KL divergence from the recorded top-k distribution to the model's on the same
// tokens (both renormalised over that support). Also the other direction: recording a model's own
// greedy continuations in the format (the vector set a test scores its quantized files against).
// Owns: that arithmetic (double precision) and the token-bytes -> id map. Does not own: the engine,
// the format (vectors.h), printing (apps/gguf/quality.cpp).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "tools/quality/vectors.h"

namespace ds4::quality {

struct CaseScore {
  std::string id;
  int steps = 0;
  double log_likelihood = 0;  // sum over the steps of log p(recorded token)
  int top1 = 0;               // steps whose recorded token is the model's argmax
  double kl_sum = 0;          // sum over the steps of KL(recorded || model) on the recorded top-k
  double kl_max = 0;
};

// Token bytes -> id for a vocabulary (the lowest id where several share their bytes).
class TokenIndex {
 public:
  explicit TokenIndex(const Tokenizer& tok);
  // The id of these bytes; kInvalidArgument naming them (hex) when no entry has them.
  Result<TokenId> find(const std::string& bytes) const;

 private:
  std::unordered_map<std::string, TokenId> ids_;
};

// The prompt's tokens: `text` as the user turn of a non-thinking chat (BOS, User, text,
// Assistant, </think>).
Result<std::vector<TokenId>> prompt_tokens(const Tokenizer& tok, const std::string& text);

// Scores one case (its prompt already read). Errors: a token no vocabulary entry has, a context
// too small for the prompt and steps, the engine's.
Result<CaseScore> score_case(Engine& engine, const Tokenizer& tok, const TokenIndex& index,
                             const VectorCase& c, const std::string& prompt_text);

// The model's own greedy continuation of the prompt, `steps` tokens, each with its top `top_n`
// logprobs: a case of the format (id, ctx and prompt file from `like`).
Result<VectorCase> record_case(Engine& engine, const Tokenizer& tok, const VectorCase& like,
                               const std::string& prompt_text, int steps, int top_n);

}  // namespace ds4::quality
