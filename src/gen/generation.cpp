// src/gen/generation.cpp: draw -> take -> detokenize -> stop strings -> output parser -> events.
#include "gen/generation.h"

#include <string_view>
#include <utility>

#include "gen/tool_id.h"

namespace ds4::gen {
namespace {

EventKind kind_of(chat::OutputEventKind k) {
  switch (k) {
    case chat::OutputEventKind::kReasoning: return EventKind::kReasoning;
    case chat::OutputEventKind::kText: return EventKind::kText;
    case chat::OutputEventKind::kToolCallBegin: return EventKind::kToolCallBegin;
    case chat::OutputEventKind::kToolCallArguments: return EventKind::kToolCallArguments;
    case chat::OutputEventKind::kToolCallEnd: return EventKind::kToolCallEnd;
    case chat::OutputEventKind::kDone: return EventKind::kDone;
  }
  return EventKind::kText;
}

}  // namespace

Generation::Generation(const Tokenizer& tok, OutputSpec spec)
    : spec_(std::move(spec)),
      eos_(tok.special_ids().eos),
      decoder_(tok),
      stop_(spec_.stop),
      parser_(
          chat::OutputParserOptions{.thinking = spec_.thinking, .parse_tool_calls = spec_.tools}),
      raw_dsml_(chat::DsmlOptions{.thinking = spec_.thinking, .tool_calls = true}),
      forcing_(tok, spec_) {}

Generation::Draw Generation::draw(const SamplingParams& base, int remaining) {
  // The test hook's tokens first, then what the output must say (a forced tool choice, a
  // reasoning budget), else the model's sample.
  const size_t i = static_cast<size_t>(generated_);
  Draw d{.forced = i < spec_.forced.size() ? std::optional<TokenId>(spec_.forced[i])
                                           : forced_next(remaining),
         .params = base};
  if (dsml_greedy()) d.params.temperature = 0.0f;  // protocol structure: greedy (§2.5)
  return d;
}

Generation::Taken Generation::take(const Draw& d, TokenId sampled, std::vector<Event>* out) {
  Taken t{.id = d.forced ? *d.forced : vet(sampled), .end = std::nullopt};
  ++generated_;
  if (raw_dsml_.phase() == chat::DsmlPhase::kReasoning) ++reasoning_tokens_;
  if (t.id == eos_) {
    t.end = tool_calls() > 0 ? FinishReason::kToolCalls : FinishReason::kStop;
  } else if (push(t.id, out)) {
    t.end = stop_hit() ? FinishReason::kStop : FinishReason::kToolCalls;
  }
  return t;
}

void Generation::convert(std::vector<chat::OutputEvent>* parsed, std::vector<Event>* out) {
  for (auto& p : *parsed) {
    if (p.kind == chat::OutputEventKind::kDone) continue;  // the caller ends the stream
    Event e{.kind = kind_of(p.kind), .text = std::move(p.text), .tool_index = p.tool_index};
    if (e.kind == EventKind::kToolCallBegin) {
      tool_ids_.push_back(new_tool_id());
      e.tool_id = tool_ids_.back();
    }
    out->push_back(std::move(e));
  }
  parsed->clear();
}

void Generation::emit(std::string_view bytes, std::vector<Event>* out) {
  if (bytes.empty()) return;
  if (!spec_.parse_output) {
    out->push_back(Event{.kind = EventKind::kText, .text = std::string(bytes)});
    return;
  }
  std::vector<chat::OutputEvent> parsed;
  parser_.feed(bytes, &parsed);
  convert(&parsed, out);
}

bool Generation::push(TokenId id, std::vector<Event>* out) {
  forcing_.taken(id);
  const std::string bytes = decoder_.push(id);
  raw_ += bytes;
  const int closed_before = raw_dsml_.counts().blocks_closed;
  raw_dsml_.feed(bytes, nullptr);
  emit(stop_.feed(bytes), out);
  // A block with calls closed with these bytes (an empty block does not end the output).
  if (spec_.tools && spec_.parse_output && !tool_ids_.empty() && raw_dsml_.counts().calls > 0 &&
      raw_dsml_.counts().blocks_closed > closed_before) {
    tool_block_closed_ = true;
  }
  return stop_.hit() || tool_block_closed_;
}

void Generation::finish(std::vector<Event>* out) {
  const std::string rest = decoder_.flush();
  raw_ += rest;
  emit(stop_.feed(rest), out);
  emit(stop_.flush(), out);
  if (!spec_.parse_output) return;
  std::vector<chat::OutputEvent> parsed;
  parser_.finish(&parsed);
  convert(&parsed, out);
}

}  // namespace ds4::gen
