// src/chat/dsml_automaton.cpp: the DSML automaton (see dsml_automaton.h).
#include "chat/dsml_automaton.h"

#include <utility>

#include "base/check.h"
#include "ds4/chat.h"

namespace ds4::chat {
namespace {

using dsml::Match;
using dsml::tag_bit;
using dsml::TagMask;
using dsml::TagName;

// Attribute text of one invoke/parameter tag is bounded; longer means the tag never closed.
constexpr size_t kMaxTagAttributeBytes = 4096;

// The closers a parameter value ends at: its own, or (a repair) an outer one.
constexpr TagMask kValueClosers = tag_bit(true, TagName::kParameter) |
                                  tag_bit(true, TagName::kInvoke) |
                                  tag_bit(true, TagName::kToolCalls);

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

const char* to_string(DsmlEventKind kind) {
  switch (kind) {
    case DsmlEventKind::kReasoning: return "reasoning";
    case DsmlEventKind::kText: return "text";
    case DsmlEventKind::kReasoningEnd: return "think_end";
    case DsmlEventKind::kEndOfSentence: return "eos";
    case DsmlEventKind::kBlockOpen: return "block_open";
    case DsmlEventKind::kCallOpen: return "call_open";
    case DsmlEventKind::kParamOpen: return "param_open";
    case DsmlEventKind::kPayload: return "payload";
    case DsmlEventKind::kParamClose: return "param_close";
    case DsmlEventKind::kCallClose: return "call_close";
    case DsmlEventKind::kBlockClose: return "block_close";
  }
  return "?";
}

DsmlAutomaton::DsmlAutomaton(DsmlOptions options)
    : options_(options), state_(options.thinking ? State::kReasoning : State::kContent) {}

void DsmlAutomaton::feed(std::string_view bytes, DsmlListener* listener) {
  DS4_CHECK_MSG(!eof_, "DsmlAutomaton::feed() after finish()");
  listener_ = listener;
  for (char c : bytes) on_byte(c);
  listener_ = nullptr;
}

void DsmlAutomaton::finish(DsmlListener* listener) {
  DS4_CHECK_MSG(!eof_, "DsmlAutomaton::finish() called twice");
  listener_ = listener;
  eof_ = true;
  while (drain_one()) {
  }
  settle_layout();
  if (in_call_ || state_ == State::kBlock) {
    counts_.truncated = true;  // the length limit cut a tool block: close what is open
    ++counts_.repairs;
    close_call();
  }
  listener_ = nullptr;
}

DsmlPhase DsmlAutomaton::phase() const {
  switch (state_) {
    case State::kReasoning: return DsmlPhase::kReasoning;
    case State::kContent: return DsmlPhase::kOutside;
    case State::kBlock:
    case State::kInvokeTag:
    case State::kInvokeBody:
    case State::kParamTag: return DsmlPhase::kStructure;
    case State::kStringValue: return DsmlPhase::kStringPayload;
    case State::kJsonValue: return DsmlPhase::kJsonPayload;
    case State::kAfterEos: return DsmlPhase::kAfterEos;
  }
  return DsmlPhase::kOutside;
}

bool DsmlAutomaton::structural() const {
  switch (phase()) {
    case DsmlPhase::kStructure: return true;
    case DsmlPhase::kStringPayload: return m_.size() >= 2;  // a closing tag is being written
    case DsmlPhase::kJsonPayload: return !json_string_;
    default: return false;
  }
}

size_t DsmlAutomaton::held_bytes() const {
  size_t n = m_.size() + layout_.size() + tag_opener_.size() + tag_attrs_.size();
  if (escape_.active()) n += escape_.input_bytes();
  return n;
}

// ---- dispatch and emission ----

void DsmlAutomaton::on_byte(char c) {
  switch (state_) {
    case State::kReasoning:
    case State::kContent:
    case State::kBlock:
    case State::kInvokeBody: marker_byte(c); return;
    case State::kInvokeTag:
    case State::kParamTag: tag_byte(c); return;
    case State::kStringValue: string_byte(c); return;
    case State::kJsonValue: json_byte(c); return;
    case State::kAfterEos:
      text(std::string_view(&c, 1));
      ++offset_;
      return;
  }
}

void DsmlAutomaton::redispatch(std::string_view bytes) {
  for (char c : bytes) on_byte(c);
}

void DsmlAutomaton::emit(DsmlEventKind kind, std::string_view bytes, bool string_value) {
  if (listener_ != nullptr) listener_->on_dsml(DsmlEvent{kind, bytes, string_value});
}

void DsmlAutomaton::text(std::string_view bytes) {
  if (bytes.empty()) return;
  counts_.text_bytes += bytes.size();
  emit(DsmlEventKind::kText, bytes);
}

void DsmlAutomaton::reasoning(std::string_view bytes) {
  counts_.reasoning_bytes += bytes.size();
  emit(DsmlEventKind::kReasoning, bytes);
}

// A byte that is not part of a marker, in a marker state.
void DsmlAutomaton::literal(char c) {
  switch (state_) {
    case State::kReasoning: reasoning(std::string_view(&c, 1)); break;
    case State::kBlock:
    case State::kInvokeBody:
      // Whitespace is layout if a tag follows, and part of the text if stray text follows
      // (stray text inside a block is reported, never dropped).
      if (is_space(c)) {
        layout_.push_back(c);
      } else {
        text(layout_);
        layout_.clear();
        text(std::string_view(&c, 1));
      }
      break;
    default: text(std::string_view(&c, 1)); break;
  }
  ++offset_;
}

void DsmlAutomaton::markup(size_t n) {
  counts_.markup_bytes += n;
  offset_ += n;
}

void DsmlAutomaton::settle_layout() {
  counts_.markup_bytes += layout_.size();
  layout_.clear();
}

// ---- marker states ----

bool DsmlAutomaton::may_start_marker(char c) const {
  if (c == '<') return true;
  return c == '\n' && state_ == State::kContent && options_.tool_calls;
}

void DsmlAutomaton::marker_byte(char c) {
  if (m_.empty() && !may_start_marker(c)) {
    literal(c);
    return;
  }
  m_.push_back(c);
  Decision d = classify(m_);
  if (d.match == Match::kPartial && eof_) d.match = Match::kNone;
  if (d.match == Match::kPartial) return;
  std::string held = std::move(m_);
  m_.clear();
  if (d.match == Match::kNone) {
    literal(held[0]);
    redispatch(std::string_view(held).substr(1));
    return;
  }
  settle_layout();
  for (size_t i = 0; i < d.lead_text; ++i) literal(held[i]);
  const std::string_view marker =
      std::string_view(held).substr(d.lead_text, d.length - d.lead_text);
  if (!d.canonical) ++counts_.repairs;
  apply(d.action, marker);
  redispatch(std::string_view(held).substr(d.length));
}

DsmlAutomaton::Decision DsmlAutomaton::classify(std::string_view m) const {
  switch (state_) {
    case State::kReasoning: return classify_reasoning(m);
    case State::kContent: return classify_content(m);
    case State::kBlock:
      return classify_tags(m,
                           tag_bit(false, TagName::kInvoke) | tag_bit(true, TagName::kToolCalls));
    default:
      return classify_tags(
          m, tag_bit(false, TagName::kParameter) | tag_bit(true, TagName::kInvoke) |
                 tag_bit(true, TagName::kToolCalls) | tag_bit(false, TagName::kInvoke));
  }
}

namespace {
// Folds one candidate marker into a decision; the first full match wins.
template <typename D, typename A>
void merge(D* best, Match m, A action, size_t length) {
  if (best->match == Match::kFull) return;
  if (m == Match::kFull) {
    best->match = Match::kFull;
    best->action = action;
    best->length = length;
  } else if (m == Match::kPartial && best->match == Match::kNone) {
    best->match = Match::kPartial;
  }
}
}  // namespace

DsmlAutomaton::Decision DsmlAutomaton::classify_reasoning(std::string_view m) const {
  Decision d;
  if (offset_ == 0) {  // a <think> is dropped only at the very start of the output
    merge(&d, dsml::match_literal(m, kThinkStart), Action::kThinkOpen, kThinkStart.size());
  }
  merge(&d, dsml::match_literal(m, kThinkEnd), Action::kThinkClose, kThinkEnd.size());
  merge(&d, dsml::match_literal(m, kEos), Action::kEndOfSentence, kEos.size());
  return d;
}

DsmlAutomaton::Decision DsmlAutomaton::classify_content(std::string_view m) const {
  Decision d;
  size_t nl = 0;
  while (nl < m.size() && m[nl] == '\n') ++nl;
  if (nl > 2) return d;
  const std::string_view rest = m.substr(nl);
  if (rest.empty()) {
    d.match = Match::kPartial;
    return d;
  }
  if (options_.tool_calls) {
    const dsml::TagMatch t = dsml::match_tag(
        rest, tag_bit(false, TagName::kToolCalls) | tag_bit(false, TagName::kInvoke));
    if (t.match == Match::kFull) {
      d.match = Match::kFull;
      d.action = t.name == TagName::kToolCalls ? Action::kBlockOpen : Action::kImplicitInvoke;
      d.length = nl + t.length;
      d.canonical = t.canonical;
      return d;
    }
    if (t.match == Match::kPartial) d.match = Match::kPartial;
  }
  const Match eos = dsml::match_literal(rest, kEos);
  if (eos == Match::kFull) {
    d.match = Match::kFull;
    d.action = Action::kEndOfSentence;
    d.lead_text = nl;
    d.length = nl + kEos.size();
    d.canonical = true;
  } else if (eos == Match::kPartial) {
    d.match = Match::kPartial;
  }
  return d;
}

DsmlAutomaton::Decision DsmlAutomaton::classify_tags(std::string_view m, TagMask accept) const {
  Decision d;
  const dsml::TagMatch t = dsml::match_tag(m, accept);
  if (t.match == Match::kFull) {
    d.match = Match::kFull;
    d.length = t.length;
    d.canonical = t.canonical;
    if (state_ == State::kBlock) {
      d.action = t.closing ? Action::kBlockClose : Action::kInvokeOpen;
    } else if (t.name == TagName::kParameter) {
      d.action = Action::kParamOpen;
    } else if (t.name == TagName::kInvoke) {
      d.action = t.closing ? Action::kInvokeClose : Action::kBodyInvokeOpen;
    } else {
      d.action = Action::kBodyBlockClose;
    }
    return d;
  }
  d.match = t.match;
  merge(&d, dsml::match_literal(m, kEos), Action::kEndOfSentence, kEos.size());
  return d;
}

void DsmlAutomaton::apply(Action action, std::string_view marker) {
  switch (action) {
    case Action::kThinkOpen: markup(marker.size()); return;
    case Action::kThinkClose:
      markup(marker.size());
      counts_.reasoning_closed = true;
      counts_.output_start = offset_;
      state_ = State::kContent;
      emit(DsmlEventKind::kReasoningEnd);
      return;
    case Action::kEndOfSentence:
      markup(marker.size());
      counts_.eos = true;
      if (in_call_) {
        ++counts_.repairs;
        close_call();
      } else if (state_ == State::kBlock) {
        ++counts_.repairs;  // block never closed
      }
      state_ = State::kAfterEos;
      emit(DsmlEventKind::kEndOfSentence);
      return;
    case Action::kBlockOpen:
      markup(marker.size());
      implicit_block_ = false;
      state_ = State::kBlock;
      ++counts_.blocks_opened;
      emit(DsmlEventKind::kBlockOpen);
      return;
    case Action::kImplicitInvoke:  // an invoke with no tool_calls wrapper
      ++counts_.repairs;
      implicit_block_ = true;
      begin_tag(State::kInvokeTag, State::kContent, marker);
      return;
    case Action::kInvokeOpen: begin_tag(State::kInvokeTag, State::kBlock, marker); return;
    case Action::kBlockClose:
      markup(marker.size());
      state_ = State::kContent;
      block_closed();
      return;
    case Action::kParamOpen: begin_tag(State::kParamTag, State::kInvokeBody, marker); return;
    case Action::kInvokeClose:
      markup(marker.size());
      close_call();
      state_ = implicit_block_ ? State::kContent : State::kBlock;
      return;
    case Action::kBodyBlockClose:
      markup(marker.size());
      ++counts_.repairs;  // missing </invoke>
      close_call();
      state_ = State::kContent;
      block_closed();
      return;
    case Action::kBodyInvokeOpen:
      ++counts_.repairs;  // missing </invoke>
      close_call();
      begin_tag(State::kInvokeTag, implicit_block_ ? State::kContent : State::kBlock, marker);
      return;
  }
}

// ---- tags ----

void DsmlAutomaton::begin_tag(State tag_state, State on_failure, std::string_view opener) {
  tag_opener_ = std::string(opener);
  tag_attrs_.clear();
  tag_quote_ = 0;
  tag_failure_state_ = on_failure;
  state_ = tag_state;
}

void DsmlAutomaton::tag_byte(char c) {
  if (tag_quote_ != 0) {
    if (c == tag_quote_) tag_quote_ = 0;
    tag_attrs_.push_back(c);
  } else if (c == '"' || c == '\'') {
    tag_quote_ = c;
    tag_attrs_.push_back(c);
  } else if (c == '>') {
    end_tag();
    return;
  } else if (c == '<') {
    fail_tag(std::string_view(&c, 1));
    return;
  } else {
    tag_attrs_.push_back(c);
  }
  if (tag_attrs_.size() > kMaxTagAttributeBytes) fail_tag({});
}

// The tag cannot be read: its opener becomes text and the rest is scanned again.
void DsmlAutomaton::fail_tag(std::string_view extra) {
  std::string opener = std::move(tag_opener_);
  std::string rest = std::move(tag_attrs_);
  rest += extra;
  tag_opener_.clear();
  tag_attrs_.clear();
  state_ = tag_failure_state_;
  if (state_ == State::kContent) implicit_block_ = false;
  text(opener);
  offset_ += opener.size();
  redispatch(rest);
}

void DsmlAutomaton::end_tag() {
  const dsml::TagAttributes a = dsml::read_tag_attributes(tag_attrs_);
  if (!a.has_name) {
    fail_tag(">");
    return;
  }
  markup(tag_opener_.size() + tag_attrs_.size() + 1);
  const bool invoke = state_ == State::kInvokeTag;
  tag_opener_.clear();
  tag_attrs_.clear();
  if (invoke) {
    ++counts_.calls;
    in_call_ = true;
    state_ = State::kInvokeBody;
    emit(DsmlEventKind::kCallOpen, a.name);
    return;
  }
  const bool is_string = !a.has_string || a.string_attr != "false";
  if (!a.has_string || (a.string_attr != "true" && a.string_attr != "false")) ++counts_.repairs;
  state_ = is_string ? State::kStringValue : State::kJsonValue;
  json_string_ = json_escape_ = false;
  emit(DsmlEventKind::kParamOpen, a.name, is_string);
}

// ---- parameter values ----

void DsmlAutomaton::value_bytes(std::string_view bytes) {
  counts_.payload_bytes += bytes.size();
  offset_ += bytes.size();
  if (state_ == State::kJsonValue) {
    for (char c : bytes) {
      if (!json_string_) {
        json_string_ = c == '"';
      } else if (json_escape_) {
        json_escape_ = false;
      } else if (c == '\\') {
        json_escape_ = true;
      } else if (c == '"') {
        json_string_ = false;
      }
    }
  }
  emit(DsmlEventKind::kPayload, bytes);
}

// Bytes that decode to something other than themselves (escapes): count input, emit output.
void DsmlAutomaton::decoded_value(size_t input_bytes, std::string_view output) {
  counts_.payload_bytes += input_bytes;
  offset_ += input_bytes;
  emit(DsmlEventKind::kPayload, output);
}

void DsmlAutomaton::string_byte(char c) {
  if (escape_.active()) {
    escape_byte(c);
  } else if (!m_.empty() || c == '<') {
    closer_byte(c);
  } else if (c == '&') {
    escape_.start();
  } else {
    value_bytes(std::string_view(&c, 1));
  }
}

void DsmlAutomaton::json_byte(char c) {
  if (!m_.empty() || c == '<') {
    closer_byte(c);
  } else {
    value_bytes(std::string_view(&c, 1));
  }
}

void DsmlAutomaton::closer_byte(char c) {
  m_.push_back(c);
  dsml::TagMatch t = dsml::match_tag(m_, kValueClosers);
  if (t.match == Match::kPartial && eof_) t.match = Match::kNone;
  if (t.match == Match::kPartial) return;
  std::string held = std::move(m_);
  m_.clear();
  if (t.match == Match::kNone) {
    if (held.size() == 1) {  // a lone '<' (only reachable at end of input)
      value_bytes(held);
      return;
    }
    // Only the newest byte can start another marker (the others are '/', bars, letters).
    value_bytes(std::string_view(held).substr(0, held.size() - 1));
    on_byte(held.back());
    return;
  }
  if (!t.canonical) ++counts_.repairs;
  markup(t.length);
  close_param();
  if (t.name == TagName::kParameter) return;
  ++counts_.repairs;  // a value closed by </invoke> or </tool_calls>
  close_call();
  state_ = (t.name == TagName::kToolCalls || implicit_block_) ? State::kContent : State::kBlock;
  if (t.name == TagName::kToolCalls) block_closed();
}

// "&" ("amp;")* "lt;/" + closer look-alike: see dsml.h for the escape.
void DsmlAutomaton::escape_byte(char c) {
  switch (escape_.push(c, eof_)) {
    case dsml::EscapeDecoder::Step::kMore: return;
    case dsml::EscapeDecoder::Step::kDecoded: {
      const std::string out = escape_.output();
      const size_t in = escape_.input_bytes();
      escape_.reset();
      decoded_value(in, out);
      return;
    }
    case dsml::EscapeDecoder::Step::kFailed: {
      // The bytes so far are literal; the new byte may start a closer or another escape.
      const std::string literal_bytes = escape_.literal(false);
      escape_.reset();
      value_bytes(literal_bytes);
      on_byte(c);
      return;
    }
  }
}

// Ends the open parameter value, if any; the automaton is then between parameters.
void DsmlAutomaton::close_param() {
  if (state_ != State::kStringValue && state_ != State::kJsonValue) return;
  state_ = State::kInvokeBody;
  emit(DsmlEventKind::kParamClose);
}

void DsmlAutomaton::close_call() {
  if (!in_call_) return;
  close_param();
  in_call_ = false;
  emit(DsmlEventKind::kCallClose);
}

void DsmlAutomaton::block_closed() {
  ++counts_.blocks_closed;
  emit(DsmlEventKind::kBlockClose);
}

// ---- end of input ----

// Releases one piece of held input as if no more bytes will come; false when nothing is held.
bool DsmlAutomaton::drain_one() {
  if (state_ == State::kInvokeTag || state_ == State::kParamTag) {
    fail_tag({});
    return true;
  }
  if (escape_.active()) {
    const std::string literal_bytes = escape_.literal(true);
    escape_.reset();
    value_bytes(literal_bytes);
    return true;
  }
  if (m_.empty()) return false;
  std::string held = std::move(m_);
  m_.clear();
  redispatch(held);  // eof_ turns every partial match into a miss
  return true;
}

}  // namespace ds4::chat
