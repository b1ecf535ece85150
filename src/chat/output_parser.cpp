// src/chat/output_parser.cpp: OutputParser -- generated text to reasoning / content / tool calls.
// Owns: turning the DSML automaton's events into output events: a call's begin and end, its
// OpenAI arguments object assembled from the parameters (string values JSON-escaped, JSON values
// canonicalised, or kept as a string when they do not parse), and the parser's counters.
// Does not own: deciding what the bytes are (dsml_automaton.h), event merging and UTF-8 holding
// (event_sink.h), tool ids and finish reasons (serve/ and api/).
#include <utility>

#include "base/check.h"
#include "chat/dsml_automaton.h"
#include "chat/event_sink.h"
#include "chat/json.h"
#include "ds4/chat.h"

namespace ds4::chat {

class OutputParser::Impl final : public DsmlListener {
 public:
  explicit Impl(OutputParserOptions options)
      : automaton_(
            DsmlOptions{.thinking = options.thinking, .tool_calls = options.parse_tool_calls}) {}

  void feed(std::string_view bytes, std::vector<OutputEvent>* events) {
    DS4_CHECK_MSG(!finished_, "OutputParser::feed() after finish()");
    automaton_.feed(bytes, this);
    sink_.flush(false, events);
  }

  void finish(std::vector<OutputEvent>* events) {
    DS4_CHECK_MSG(!finished_, "OutputParser::finish() called twice");
    automaton_.finish(this);
    sink_.structural(OutputEvent{OutputEventKind::kDone, {}, -1});
    sink_.flush(true, events);
    finished_ = true;
  }

  const OutputStats& stats() const {
    const DsmlCounts& c = automaton_.counts();
    stats_ = OutputStats{.reasoning_closed = c.reasoning_closed,
                         .eos = c.eos,
                         .tool_calls = c.calls,
                         .repairs = c.repairs + json_repairs_,
                         .truncated = c.truncated,
                         .text_bytes = c.text_bytes,
                         .reasoning_bytes = c.reasoning_bytes,
                         .markup_bytes = c.markup_bytes,
                         .value_bytes = c.payload_bytes};
    return stats_;
  }

  size_t held_bytes() const { return automaton_.held_bytes() + json_.size() + sink_.held_bytes(); }

  void on_dsml(const DsmlEvent& e) override {
    switch (e.kind) {
      case DsmlEventKind::kReasoning: sink_.text(OutputEventKind::kReasoning, e.bytes); return;
      case DsmlEventKind::kText: sink_.text(OutputEventKind::kText, e.bytes); return;
      case DsmlEventKind::kCallOpen:
        ++call_index_;
        params_in_call_ = 0;
        sink_.structural(
            OutputEvent{OutputEventKind::kToolCallBegin, std::string(e.bytes), call_index_});
        sink_.arguments(call_index_, "{");
        return;
      case DsmlEventKind::kParamOpen: {
        std::string head = params_in_call_++ > 0 ? ", " : "";
        json::append_quoted(e.bytes, &head);
        head += ": ";
        string_value_ = e.string_value;
        if (string_value_) head += "\"";
        sink_.arguments(call_index_, head);
        json_.clear();
        return;
      }
      case DsmlEventKind::kPayload:
        if (string_value_) {
          sink_.raw_string_value(call_index_, e.bytes);
        } else {
          json_ += e.bytes;
        }
        return;
      case DsmlEventKind::kParamClose:
        sink_.arguments(call_index_, string_value_ ? std::string("\"") : finish_json_value());
        return;
      case DsmlEventKind::kCallClose:
        sink_.arguments(call_index_, "}");
        sink_.structural(OutputEvent{OutputEventKind::kToolCallEnd, {}, call_index_});
        return;
      case DsmlEventKind::kReasoningEnd:
      case DsmlEventKind::kEndOfSentence:
      case DsmlEventKind::kBlockOpen:
      case DsmlEventKind::kBlockClose: return;
    }
  }

 private:
  // A string="false" value: canonical JSON when it parses; empty means null; otherwise the raw
  // text as a JSON string (the model broke the format; the bytes are kept).
  std::string finish_json_value() {
    const size_t first = json_.find_first_not_of(" \t\r\n");
    std::string out;
    if (first == std::string::npos) {
      out = "null";
    } else {
      const size_t last = json_.find_last_not_of(" \t\r\n");
      auto parsed = json::parse(std::string_view(json_).substr(first, last - first + 1));
      if (parsed.is_ok()) {
        json::dump_to(parsed.value(), &out);
      } else {
        ++json_repairs_;
        json::append_quoted(json_, &out);
      }
    }
    json_.clear();
    return out;
  }

  DsmlAutomaton automaton_;
  EventSink sink_;
  mutable OutputStats stats_;  // refreshed from the counts by stats()
  bool finished_ = false;
  int call_index_ = -1;
  int params_in_call_ = 0;
  bool string_value_ = true;
  std::string json_;  // the string="false" value being read
  int json_repairs_ = 0;
};

OutputParser::OutputParser(OutputParserOptions options) : impl_(std::make_unique<Impl>(options)) {}
OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

void OutputParser::feed(std::string_view bytes, std::vector<OutputEvent>* events) {
  impl_->feed(bytes, events);
}
void OutputParser::finish(std::vector<OutputEvent>* events) { impl_->finish(events); }
const OutputStats& OutputParser::stats() const { return impl_->stats(); }
size_t OutputParser::held_bytes() const { return impl_->held_bytes(); }

}  // namespace ds4::chat
