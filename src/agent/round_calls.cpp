// src/agent/round_calls.cpp: a DSML listener that collects calls and notices what is invalid.
#include "agent/round_calls.h"

#include "base/text.h"
#include "chat/dsml_automaton.h"
#include "ds4/chat.h"

namespace ds4::agent {
namespace {

// Stray text quoted in an error: enough to recognise, short enough not to flood the context.
constexpr size_t kQuotedTextBytes = 80;

bool blank(std::string_view s) { return base::trim(s).empty(); }

// A string="false" value for the tools, which read text: a JSON string literal loses its quotes
// and escapes (the model sometimes quotes a path); numbers, booleans and the rest stay as written.
std::string json_value_text(std::string_view json) {
  json = base::trim(json);
  if (json.size() < 2 || json.front() != '"' || json.back() != '"') return std::string(json);
  std::string out;
  for (size_t i = 1; i + 1 < json.size(); ++i) {
    char c = json[i];
    if (c == '\\' && i + 2 < json.size()) {
      c = json[++i];
      switch (c) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        default: break;  // \" \\ \/ stand for themselves; \u escapes are left as written
      }
      if (c == 'u') out += '\\';
    }
    out += c;
  }
  return out;
}

class CallCollector : public chat::DsmlListener {
 public:
  void on_dsml(const chat::DsmlEvent& e) override {
    using K = chat::DsmlEventKind;
    switch (e.kind) {
      case K::kReasoning: reasoning_ += e.bytes; break;
      case K::kText:
        if (in_block_ && !blank(e.bytes)) {
          fail("unexpected text inside the tool call block: " +
               std::string(base::trim(e.bytes).substr(0, kQuotedTextBytes)));
        }
        break;
      case K::kBlockOpen:
        in_block_ = true;
        out_.block = true;
        break;
      case K::kBlockClose: in_block_ = false; break;
      case K::kCallOpen:
        if (e.bytes.empty()) fail("an invoke without a tool name");
        out_.calls.push_back({.name = std::string(e.bytes), .params = {}});
        break;
      case K::kParamOpen:
        if (out_.calls.empty()) {
          fail("a parameter outside an invoke");
        } else if (e.bytes.empty()) {
          fail("a parameter without a name in a call of " + out_.calls.back().name);
        } else {
          out_.calls.back().params.push_back({.name = std::string(e.bytes), .value = {}});
          json_value_ = !e.string_value;
        }
        break;
      case K::kPayload:
        if (!out_.calls.empty() && !out_.calls.back().params.empty()) {
          out_.calls.back().params.back().value += e.bytes;
        }
        break;
      case K::kParamClose:
        if (json_value_ && !out_.calls.empty() && !out_.calls.back().params.empty()) {
          std::string& v = out_.calls.back().params.back().value;
          v = json_value_text(v);
        }
        json_value_ = false;
        break;
      case K::kReasoningEnd:
      case K::kEndOfSentence:
      case K::kCallClose: break;
    }
  }

  RoundCalls take(const chat::DsmlCounts& counts) {
    if (out_.error.empty()) {
      if (counts.blocks_opened > counts.blocks_closed || counts.truncated) {
        fail("the tool call block was not closed (the output ended inside it)");
      } else if (out_.block && out_.calls.empty()) {
        fail("the tool call block holds no invoke");
      } else if (!out_.block && reasoning_.find(chat::kDsml) != std::string::npos) {
        fail("tool calling is not allowed inside <think></think>");
      }
    }
    if (!out_.error.empty()) out_.calls.clear();
    return std::move(out_);
  }

 private:
  void fail(std::string detail) {
    if (out_.error.empty()) out_.error = std::move(detail);
  }

  RoundCalls out_;
  std::string reasoning_;
  bool in_block_ = false;
  bool json_value_ = false;
};

}  // namespace

RoundCalls read_round_calls(std::string_view raw, bool thinking) {
  chat::DsmlAutomaton automaton(chat::DsmlOptions{.thinking = thinking, .tool_calls = true});
  CallCollector collector;
  automaton.feed(raw, &collector);
  automaton.finish(&collector);
  return collector.take(automaton.counts());
}

}  // namespace ds4::agent
