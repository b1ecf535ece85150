// src/chat/dsml_automaton.h: the one DSML automaton -- where generated text stands relative to
// the model's tool-call syntax, fed bytes (or a token's bytes) as they are generated.
// Owns: the byte-at-a-time state machine over model output (spec/chat-format.md "Parsing model
// output", features.md §2.3 and §2.5): reasoning before </think>, text outside a block, DSML
// structure (tags and the layout between them), string payloads (with the value escape) and JSON
// payloads (with their string literals tracked), the EOS marker, the repairs of malformed DSML,
// and the events that say what each decided byte is.
// Does not own: tag spelling and value escapes (dsml.h), turning events into calls and argument
// JSON (OutputParser), the canonical layout a forced block must keep (gen/dsml_shape.h).
//
// Every byte is decided once, in order, by the current state; a state holds back only the bytes
// of a marker that has begun but is not decided yet (at most one tag's worth, except the
// "&amp;...lt;/" escape chain inside a string value, whose length is the model's choice).
// Decisions depend only on the bytes, never on how they were chunked.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "chat/dsml.h"

namespace ds4::chat {

// Where the automaton stands: what the next byte would be, if it continues the current state.
enum class DsmlPhase {
  kReasoning,      // thinking mode, before </think>
  kOutside,        // ordinary text (also: tool calls not parsed)
  kStructure,      // inside a block: tags and the layout between them
  kStringPayload,  // a string="true" parameter value
  kJsonPayload,    // a string="false" parameter value
  kAfterEos,       // after the EOS marker: everything is text
};

enum class DsmlEventKind {
  kReasoning,      // bytes: reasoning
  kText,           // bytes: text (outside blocks; stray or unreadable markup inside one)
  kReasoningEnd,   // </think>: the output proper starts
  kEndOfSentence,  // the EOS marker
  kBlockOpen,      // a tool_calls opener
  kCallOpen,       // an invoke tag; bytes: the tool name
  kParamOpen,      // a parameter tag; bytes: its name; string_value: the payload kind
  kPayload,        // bytes: the open value's bytes (a string value's escapes decoded)
  kParamClose,     // the open value ended
  kCallClose,      // the open call ended (by its closing tag, or repaired)
  kBlockClose,     // a tool_calls closer
};
const char* to_string(DsmlEventKind kind);

struct DsmlEvent {
  DsmlEventKind kind = DsmlEventKind::kText;
  std::string_view bytes;     // valid during the callback only
  bool string_value = false;  // kParamOpen
};

// Receives events in input order.
class DsmlListener {
 public:
  virtual ~DsmlListener() = default;
  virtual void on_dsml(const DsmlEvent& e) = 0;
};

struct DsmlOptions {
  bool thinking = false;   // output starts with reasoning, closed by </think>
  bool tool_calls = true;  // recognise DSML blocks (else they are plain text)
};

struct DsmlCounts {
  bool reasoning_closed = false;  // saw </think>
  size_t output_start = 0;        // offset just after </think> (0 when not thinking)
  bool eos = false;               // saw the EOS marker
  int calls = 0;                  // kCallOpen events
  int blocks_opened = 0;          // kBlockOpen events
  int blocks_closed = 0;          // kBlockClose events
  int repairs = 0;                // malformed variants accepted (docs/chat.md)
  bool truncated = false;         // finish() closed a call that was still open
  // Every input byte lands in exactly one of these.
  size_t text_bytes = 0;       // kText
  size_t reasoning_bytes = 0;  // kReasoning
  size_t markup_bytes = 0;     // markers, tags and the layout between tags
  size_t payload_bytes = 0;    // parameter values (as written, before unescaping)
};

class DsmlAutomaton {
 public:
  explicit DsmlAutomaton(DsmlOptions options = {});

  // Decides what it can of `bytes`, sending events to `listener` (may be null).
  void feed(std::string_view bytes, DsmlListener* listener);
  // No more bytes: releases what is held (as the bytes it is) and closes an open call.
  void finish(DsmlListener* listener);

  DsmlPhase phase() const;
  // True while the next token is protocol structure, to be chosen greedily (features.md §2.5):
  // inside a block, but not inside a string value (unless two or more bytes of a closing tag
  // are pending) nor inside a JSON value's string literal.
  bool structural() const;
  const DsmlCounts& counts() const { return counts_; }
  // Bytes received but not decided yet.
  size_t held_bytes() const;
  // The bytes of a marker or closing tag that has begun and is not decided yet.
  std::string_view pending_marker() const { return m_; }
  // Input bytes decided so far.
  size_t offset() const { return offset_; }

 private:
  enum class State {
    kReasoning,    // before </think>
    kContent,      // ordinary reply text
    kBlock,        // inside <｜DSML｜tool_calls>, between invokes
    kInvokeTag,    // reading the attributes of an invoke tag
    kInvokeBody,   // inside an invoke, between parameters
    kParamTag,     // reading the attributes of a parameter tag
    kStringValue,  // a string="true" value
    kJsonValue,    // a string="false" value
    kAfterEos,     // after the EOS marker
  };
  enum class Action {
    kThinkOpen,
    kThinkClose,
    kEndOfSentence,
    kBlockOpen,
    kImplicitInvoke,
    kInvokeOpen,
    kBlockClose,
    kParamOpen,
    kInvokeClose,
    kBodyBlockClose,
    kBodyInvokeOpen,
  };
  struct Decision {
    dsml::Match match = dsml::Match::kNone;
    Action action = Action::kEndOfSentence;
    size_t length = 0;     // bytes of the marker consumed (the rest is dispatched again)
    size_t lead_text = 0;  // leading bytes that are text, not marker (newlines before EOS)
    bool canonical = true;
  };

  void on_byte(char c);
  void redispatch(std::string_view bytes);
  void emit(DsmlEventKind kind, std::string_view bytes = {}, bool string_value = false);
  void text(std::string_view bytes);
  void reasoning(std::string_view bytes);
  void literal(char c);
  void markup(size_t n);
  void settle_layout();

  bool may_start_marker(char c) const;
  void marker_byte(char c);
  Decision classify(std::string_view m) const;
  Decision classify_reasoning(std::string_view m) const;
  Decision classify_content(std::string_view m) const;
  Decision classify_tags(std::string_view m, dsml::TagMask accept) const;
  void apply(Action action, std::string_view marker);

  void begin_tag(State tag_state, State on_failure, std::string_view opener);
  void tag_byte(char c);
  void fail_tag(std::string_view extra);
  void end_tag();

  void value_bytes(std::string_view bytes);
  void decoded_value(size_t input_bytes, std::string_view output);
  void string_byte(char c);
  void json_byte(char c);
  void closer_byte(char c);
  void escape_byte(char c);
  void close_param();
  void close_call();
  void block_closed();
  bool drain_one();

  DsmlOptions options_;
  State state_;
  DsmlListener* listener_ = nullptr;  // during feed() / finish() only
  DsmlCounts counts_;
  bool eof_ = false;
  size_t offset_ = 0;

  std::string m_;       // bytes of a marker that has begun
  std::string layout_;  // whitespace inside a block, not yet known to be layout or text
  std::string tag_opener_;
  std::string tag_attrs_;
  char tag_quote_ = 0;
  State tag_failure_state_ = State::kContent;

  bool implicit_block_ = false;  // an invoke with no tool_calls wrapper is open
  bool in_call_ = false;
  bool json_string_ = false;  // inside a string literal of a JSON value
  bool json_escape_ = false;  // after its backslash
  dsml::EscapeDecoder escape_;
};

}  // namespace ds4::chat
