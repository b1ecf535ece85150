// src/gen/output_forcing.cpp: forced tool-call structure and reasoning budgets.
#include "gen/output_forcing.h"

namespace ds4::gen {
namespace {

using chat::kThinkEnd;
// Tokens kept in hand beyond the shortest close of a forced block: one sampled token can open a
// parameter, which adds its attribute and closing tag (about ten tokens) to that close.
constexpr int kCloseMargin = 16;

bool forces_tools(const OutputSpec& r) {
  // The test hook chooses the first tokens itself; a forced shape would fight it.
  return r.tools && r.parse_output && r.forced.empty() && r.tool_choice.mode != ToolMode::kAuto &&
         !r.tool_choice.names.empty();
}

}  // namespace

OutputForcing::OutputForcing(const Tokenizer& tok, const OutputSpec& spec)
    : tok_(&tok),
      force_tools_(forces_tools(spec)),
      budget_(spec.thinking ? spec.reasoning_budget : 0),
      phase_(spec.thinking  ? Phase::kReasoning
             : force_tools_ ? Phase::kBlock
                            : Phase::kFree),
      shape_(spec.tool_choice.names,
             spec.tool_choice.mode == ToolMode::kNamed || spec.tool_choice.one_call),
      reasoning_(chat::DsmlOptions{.thinking = true, .tool_calls = false}) {}

void OutputForcing::queue(std::string_view text) {
  for (TokenId id : tok_->encode(text, SpecialTokens::kRecognize)) queue_.push_back(id);
}

TokenId OutputForcing::pop() {
  const TokenId id = queue_.front();
  queue_.pop_front();
  return id;
}

int OutputForcing::tokens_of(std::string_view text) const {
  return static_cast<int>(tok_->encode(text, SpecialTokens::kRecognize).size());
}

std::optional<TokenId> OutputForcing::next(int remaining) {
  if (queue_.empty()) {
    if (phase_ == Phase::kReasoning && !closing_) {
      const bool over_budget = budget_ > 0 && reasoning_tokens_ >= budget_;
      // A forced block must still fit after the reasoning.
      if (force_tools_ && !reasoning_close_tokens_) {
        reasoning_close_tokens_ = tokens_of(std::string(kThinkEnd) + shape_.completion());
      }
      const bool no_room = force_tools_ && remaining <= *reasoning_close_tokens_ + kCloseMargin;
      if (over_budget || no_room) {
        closing_ = true;
        queue(kThinkEnd);
      }
    } else if (phase_ == Phase::kBlock && !shape_.done() && !shape_.broken()) {
      const std::string close = shape_.completion();
      if (remaining <= tokens_of(close) + kCloseMargin) {
        queue(close);  // the rest of the block would not fit: close it now
      } else if (const std::string d = shape_.determined(); !d.empty()) {
        queue(d);
      }
    }
  }
  if (queue_.empty()) return std::nullopt;
  return pop();
}

TokenId OutputForcing::vet(TokenId sampled) {
  const TokenId eos = tok_->special_ids().eos;
  if (phase_ == Phase::kReasoning) {
    if (!force_tools_ || sampled != eos) return sampled;
    closing_ = true;
    queue(kThinkEnd);  // the block comes after the reasoning: end the reasoning instead
    return pop();
  }
  if (phase_ != Phase::kBlock || shape_.done() || shape_.broken()) return sampled;
  if (sampled != eos && shape_.accepts(tok_->token_bytes(sampled))) return sampled;
  queue(shape_.completion());
  return pop();
}

void OutputForcing::after_reasoning(std::string_view rest) {
  phase_ = force_tools_ ? Phase::kBlock : Phase::kFree;
  if (phase_ == Phase::kBlock && !rest.empty()) shape_.feed(rest);
}

void OutputForcing::taken(TokenId id) {
  const std::string_view bytes = tok_->token_bytes(id);
  switch (phase_) {
    case Phase::kReasoning: {
      ++reasoning_tokens_;
      const size_t before = reasoning_fed_;
      reasoning_.feed(bytes, nullptr);
      reasoning_fed_ += bytes.size();
      if (reasoning_.counts().reasoning_closed) {
        // Bytes of this token after </think> belong to the output proper.
        after_reasoning(bytes.substr(reasoning_.counts().output_start - before));
      }
      return;
    }
    case Phase::kBlock: shape_.feed(bytes); return;
    case Phase::kFree: return;
  }
}

}  // namespace ds4::gen
