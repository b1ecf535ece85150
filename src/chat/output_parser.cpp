// src/chat/output_parser.cpp: OutputParser -- generated text to reasoning / content / tool calls.
// Owns: the byte-at-a-time state machine over model output (spec/chat-format.md "Parsing model
// output") and the repairs of malformed DSML.
// Does not own: tag grammar and value escapes (dsml.cpp), event assembly and UTF-8 holding
// (event_sink.cpp), tool ids and finish reasons (serve/ and api/).
//
// Every byte is processed once, in order, by the current state; a state holds back only the bytes
// of a marker that has begun but not yet been decided (at most one tag's worth, except the
// "&amp;...lt;/" escape chain inside a string value, whose length is the model's choice). Decisions
// depend only on the bytes, never on chunk boundaries, so any chunking yields the same events.
#include <algorithm>
#include <utility>

#include "base/check.h"
#include "chat/dsml.h"
#include "chat/event_sink.h"
#include "chat/json.h"
#include "ds4/chat.h"

namespace ds4::chat {
namespace {

using dsml::Match;
using dsml::tag_bit;
using dsml::TagMask;
using dsml::TagName;

// Attribute text of one invoke/parameter tag is bounded; longer means the tag never closed.
constexpr size_t kMaxTagAttributeBytes = 4096;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

class OutputParser::Impl {
 public:
  explicit Impl(OutputParserOptions options)
      : options_(options), state_(options.thinking ? State::kReasoning : State::kContent) {}

  void feed(std::string_view bytes, std::vector<OutputEvent>* events) {
    DS4_CHECK_MSG(!finished_, "OutputParser::feed() after finish()");
    for (char c : bytes) on_byte(c);
    sink_.flush(false, events);
  }

  void finish(std::vector<OutputEvent>* events) {
    DS4_CHECK_MSG(!finished_, "OutputParser::finish() called twice");
    eof_ = true;
    while (drain_one()) {
    }
    settle_layout();
    if (in_call_ || state_ == State::kBlock) {
      stats_.truncated = true;  // the length limit cut a tool block: close what is open
      ++stats_.repairs;
      close_call();
    }
    sink_.structural(OutputEvent{OutputEventKind::kDone, {}, -1});
    sink_.flush(true, events);
    finished_ = true;
  }

  const OutputStats& stats() const { return stats_; }

  size_t held_bytes() const {
    size_t n = m_.size() + layout_.size() + tag_opener_.size() + tag_attrs_.size() + json_.size() +
               sink_.held_bytes();
    if (escape_.active()) n += escape_.input_bytes();
    return n;
  }

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
    kAfterEos,     // after the EOS marker: everything is reported as text
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
    Match match = Match::kNone;
    Action action = Action::kEndOfSentence;
    size_t length = 0;     // bytes of the marker consumed (the rest is re-dispatched)
    size_t lead_text = 0;  // leading bytes that are text, not marker (newlines before EOS)
    bool canonical = true;
  };

  // ---- dispatch ----
  void on_byte(char c) {
    switch (state_) {
      case State::kReasoning:
      case State::kContent:
      case State::kBlock:
      case State::kInvokeBody: marker_byte(c); return;
      case State::kInvokeTag:
      case State::kParamTag: tag_byte(c); return;
      case State::kStringValue: string_byte(c); return;
      case State::kJsonValue: json_byte(c); return;
      case State::kAfterEos: text(std::string_view(&c, 1)); return;
    }
  }

  void redispatch(std::string_view bytes) {
    for (char c : bytes) on_byte(c);
  }

  // ---- emission ----
  void text(std::string_view bytes) {
    stats_.text_bytes += bytes.size();
    sink_.text(OutputEventKind::kText, bytes);
  }
  void reasoning(std::string_view bytes) {
    stats_.reasoning_bytes += bytes.size();
    sink_.text(OutputEventKind::kReasoning, bytes);
  }
  // A byte that is not part of a marker, in a marker state.
  void literal(char c) {
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
  void markup(size_t n) {
    stats_.markup_bytes += n;
    offset_ += n;
  }
  void settle_layout() {
    stats_.markup_bytes += layout_.size();
    layout_.clear();
  }

  // ---- marker states ----
  bool may_start_marker(char c) const {
    if (c == '<') return true;
    return c == '\n' && state_ == State::kContent && options_.parse_tool_calls;
  }

  void marker_byte(char c) {
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
    if (!d.canonical) ++stats_.repairs;
    apply(d.action, marker);
    redispatch(std::string_view(held).substr(d.length));
  }

  Decision classify(std::string_view m) const {
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

  // Folds one candidate marker into the decision; the first full match wins.
  static void merge(Decision* best, Match m, Action action, size_t length) {
    if (best->match == Match::kFull) return;
    if (m == Match::kFull) {
      best->match = Match::kFull;
      best->action = action;
      best->length = length;
    } else if (m == Match::kPartial && best->match == Match::kNone) {
      best->match = Match::kPartial;
    }
  }

  Decision classify_reasoning(std::string_view m) const {
    Decision d;
    if (offset_ == 0) {  // a <think> is dropped only at the very start of the output
      merge(&d, dsml::match_literal(m, kThinkStart), Action::kThinkOpen, kThinkStart.size());
    }
    merge(&d, dsml::match_literal(m, kThinkEnd), Action::kThinkClose, kThinkEnd.size());
    merge(&d, dsml::match_literal(m, kEos), Action::kEndOfSentence, kEos.size());
    return d;
  }

  Decision classify_content(std::string_view m) const {
    Decision d;
    size_t nl = 0;
    while (nl < m.size() && m[nl] == '\n') ++nl;
    if (nl > 2) return d;
    const std::string_view rest = m.substr(nl);
    if (rest.empty()) {
      d.match = Match::kPartial;
      return d;
    }
    if (options_.parse_tool_calls) {
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

  Decision classify_tags(std::string_view m, TagMask accept) const {
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

  void apply(Action action, std::string_view marker) {
    switch (action) {
      case Action::kThinkOpen: markup(marker.size()); return;
      case Action::kThinkClose:
        markup(marker.size());
        stats_.reasoning_closed = true;
        state_ = State::kContent;
        return;
      case Action::kEndOfSentence:
        markup(marker.size());
        stats_.eos = true;
        if (in_call_) {
          ++stats_.repairs;
          close_call();
        } else if (state_ == State::kBlock) {
          ++stats_.repairs;  // block never closed
        }
        state_ = State::kAfterEos;
        return;
      case Action::kBlockOpen:
        markup(marker.size());
        implicit_block_ = false;
        state_ = State::kBlock;
        return;
      case Action::kImplicitInvoke:  // an invoke with no tool_calls wrapper
        ++stats_.repairs;
        implicit_block_ = true;
        begin_tag(State::kInvokeTag, State::kContent, marker);
        return;
      case Action::kInvokeOpen: begin_tag(State::kInvokeTag, State::kBlock, marker); return;
      case Action::kBlockClose:
        markup(marker.size());
        state_ = State::kContent;
        return;
      case Action::kParamOpen: begin_tag(State::kParamTag, State::kInvokeBody, marker); return;
      case Action::kInvokeClose:
        markup(marker.size());
        close_call();
        state_ = implicit_block_ ? State::kContent : State::kBlock;
        return;
      case Action::kBodyBlockClose:
        markup(marker.size());
        ++stats_.repairs;  // missing </invoke>
        close_call();
        state_ = State::kContent;
        return;
      case Action::kBodyInvokeOpen:
        ++stats_.repairs;  // missing </invoke>
        close_call();
        begin_tag(State::kInvokeTag, implicit_block_ ? State::kContent : State::kBlock, marker);
        return;
    }
  }

  // ---- tags ----
  void begin_tag(State tag_state, State on_failure, std::string_view opener) {
    tag_opener_ = std::string(opener);
    tag_attrs_.clear();
    tag_quote_ = 0;
    tag_failure_state_ = on_failure;
    state_ = tag_state;
  }

  void tag_byte(char c) {
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
  void fail_tag(std::string_view extra) {
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

  void end_tag() {
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
      call_index_ = stats_.tool_calls++;
      in_call_ = true;
      params_in_call_ = 0;
      sink_.structural(OutputEvent{OutputEventKind::kToolCallBegin, a.name, call_index_});
      sink_.arguments(call_index_, "{");
      state_ = State::kInvokeBody;
      return;
    }
    std::string head = params_in_call_++ > 0 ? ", " : "";
    json::append_quoted(a.name, &head);
    head += ": ";
    const bool is_string = !a.has_string || a.string_attr != "false";
    if (!a.has_string || (a.string_attr != "true" && a.string_attr != "false")) ++stats_.repairs;
    if (is_string) head += "\"";
    sink_.arguments(call_index_, head);
    json_.clear();
    state_ = is_string ? State::kStringValue : State::kJsonValue;
  }

  // ---- parameter values ----
  static constexpr TagMask kValueClosers = tag_bit(true, TagName::kParameter) |
                                           tag_bit(true, TagName::kInvoke) |
                                           tag_bit(true, TagName::kToolCalls);

  void value_bytes(std::string_view bytes) {
    stats_.value_bytes += bytes.size();
    offset_ += bytes.size();
    if (state_ == State::kStringValue) {
      sink_.raw_string_value(call_index_, bytes);
    } else {
      json_ += bytes;
    }
  }
  // Bytes that decode to something other than themselves (escapes): count input, emit output.
  void decoded_value(size_t input_bytes, std::string_view output) {
    stats_.value_bytes += input_bytes;
    offset_ += input_bytes;
    sink_.raw_string_value(call_index_, output);
  }

  void string_byte(char c) {
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

  void json_byte(char c) {
    if (!m_.empty() || c == '<') {
      closer_byte(c);
    } else {
      value_bytes(std::string_view(&c, 1));
    }
  }

  void closer_byte(char c) {
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
    if (!t.canonical) ++stats_.repairs;
    markup(t.length);
    close_param();
    if (t.name == TagName::kParameter) return;
    ++stats_.repairs;  // a value closed by </invoke> or </tool_calls>
    close_call();
    state_ = (t.name == TagName::kToolCalls || implicit_block_) ? State::kContent : State::kBlock;
  }

  // "&" ("amp;")* "lt;/" + closer look-alike: see dsml.h for the escape.
  void escape_byte(char c) {
    switch (escape_.push(c, eof_)) {
      case dsml::EscapeDecoder::Step::kMore: return;
      case dsml::EscapeDecoder::Step::kDecoded:
        decoded_value(escape_.input_bytes(), escape_.output());
        escape_.reset();
        return;
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

  // Ends the open parameter value, if any; the parser is then between parameters.
  void close_param() {
    if (state_ == State::kStringValue) {
      sink_.arguments(call_index_, "\"");
    } else if (state_ == State::kJsonValue) {
      sink_.arguments(call_index_, finish_json_value());
    } else {
      return;
    }
    state_ = State::kInvokeBody;
  }

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
        ++stats_.repairs;
        json::append_quoted(json_, &out);
      }
    }
    json_.clear();
    return out;
  }

  void close_call() {
    if (!in_call_) return;
    close_param();
    sink_.arguments(call_index_, "}");
    sink_.structural(OutputEvent{OutputEventKind::kToolCallEnd, {}, call_index_});
    in_call_ = false;
  }

  // ---- end of input ----
  // Releases one piece of held input as if no more bytes will come; false when nothing is held.
  bool drain_one() {
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

  OutputParserOptions options_;
  State state_;
  EventSink sink_;
  OutputStats stats_;
  bool eof_ = false;
  bool finished_ = false;
  size_t offset_ = 0;  // input bytes decided so far

  std::string m_;       // bytes of a marker that has begun
  std::string layout_;  // whitespace inside a block, not yet known to be layout or text
  std::string tag_opener_;
  std::string tag_attrs_;
  char tag_quote_ = 0;
  State tag_failure_state_ = State::kContent;

  bool implicit_block_ = false;
  bool in_call_ = false;
  int call_index_ = -1;
  int params_in_call_ = 0;
  std::string json_;  // the string="false" value being read

  dsml::EscapeDecoder escape_;
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
