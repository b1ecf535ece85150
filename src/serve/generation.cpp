// src/serve/generation.cpp: detokenize -> stop strings -> output parser -> serve events.
#include "serve/generation.h"

#include <string_view>

#include "serve/tool_id.h"

namespace ds4::serve {
namespace {

constexpr std::string_view kToolBlockEnd = "</｜DSML｜tool_calls>";

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
      syntax_(request.thinking),
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
  const size_t before = raw_.size();
  raw_ += bytes;
  if (tools_) syntax_.feed(bytes);
  emit(stop_.feed(bytes), out);
  if (tools_ && parse_output_ && !tool_ids_.empty()) {
    // The closing marker may straddle tokens: search from just before the new bytes.
    const size_t from = before >= kToolBlockEnd.size() ? before - kToolBlockEnd.size() : 0;
    tool_block_closed_ = raw_.find(kToolBlockEnd, from) != std::string::npos;
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
