// src/serve/generation.cpp: detokenize -> stop strings -> output parser -> serve events.
#include "serve/generation.h"

#include <string_view>

#include "serve/tool_id.h"

namespace ds4::serve {
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

Generation::Generation(const Tokenizer& tok, const Request& request)
    : decoder_(tok),
      stop_(request.stop),
      parse_output_(request.parse_output),
      tools_(request.tools),
      parser_(chat::OutputParserOptions{.thinking = request.thinking,
                                        .parse_tool_calls = request.tools}),
      raw_dsml_(chat::DsmlOptions{.thinking = request.thinking, .tool_calls = true}),
      forcing_(tok, request) {}

void Generation::convert(std::vector<chat::OutputEvent>* parsed, std::vector<Event>* out) {
  for (auto& p : *parsed) {
    if (p.kind == chat::OutputEventKind::kDone) continue;  // the scheduler ends the stream
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
  if (!parse_output_) {
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
  if (tools_) raw_dsml_.feed(bytes, nullptr);
  emit(stop_.feed(bytes), out);
  // A block with calls closed with these bytes (an empty block does not end the output).
  if (tools_ && parse_output_ && !tool_ids_.empty() && raw_dsml_.counts().calls > 0 &&
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
  if (!parse_output_) return;
  std::vector<chat::OutputEvent> parsed;
  parser_.finish(&parsed);
  convert(&parsed, out);
}

}  // namespace ds4::serve
