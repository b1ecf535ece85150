// src/chat/parse_output.cpp: parse_output() -- the whole-text convenience over OutputParser.
// Owns: folding the event stream into a ParsedOutput. Does not own: any parsing decision.
#include <utility>

#include "base/check.h"
#include "ds4/chat.h"

namespace ds4::chat {

ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options) {
  OutputParser parser(options);
  std::vector<OutputEvent> events;
  parser.feed(text, &events);
  parser.finish(&events);
  ParsedOutput out;
  for (OutputEvent& e : events) {
    switch (e.kind) {
      case OutputEventKind::kReasoning: out.reasoning += e.text; break;
      case OutputEventKind::kText: out.content += e.text; break;
      case OutputEventKind::kToolCallBegin:
        out.tool_calls.push_back(ToolCall{{}, std::move(e.text), {}});
        break;
      case OutputEventKind::kToolCallArguments:
        DS4_CHECK(!out.tool_calls.empty());  // the parser opens a call before its arguments
        out.tool_calls.back().arguments_json += e.text;
        break;
      case OutputEventKind::kToolCallEnd:
      case OutputEventKind::kDone: break;
    }
  }
  out.stats = parser.stats();
  return out;
}

}  // namespace ds4::chat
