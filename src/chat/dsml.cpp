// src/chat/dsml.cpp: DSML tag matching, value escapes and the tool-call block encoder.
#include "chat/dsml.h"

#include <algorithm>
#include <span>

#include "chat/json.h"
#include "ds4/chat.h"

namespace ds4::chat::dsml {
namespace {

constexpr std::string_view kWideBar = "｜";
constexpr std::string_view kAsciiBar = "|";

constexpr std::string_view kTagNames[] = {"tool_calls", "invoke", "parameter"};

// Matches up to `max` bars at s[*pos]; returns kPartial if `s` ends inside a bar.
Match match_bars(std::string_view s, size_t* pos, int max, int* count, bool* all_wide) {
  *count = 0;
  *all_wide = true;
  while (*count < max) {
    const std::string_view rest = s.substr(*pos);
    if (rest.empty()) return Match::kPartial;
    const Match wide = match_literal(rest, kWideBar);
    if (wide == Match::kFull) {
      *pos += kWideBar.size();
    } else if (wide == Match::kPartial) {
      return Match::kPartial;
    } else if (rest[0] == '|') {
      *pos += kAsciiBar.size();
      *all_wide = false;
    } else {
      break;
    }
    ++*count;
  }
  return Match::kFull;
}

bool is_delimiter(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '>'; }

}  // namespace

Match match_literal(std::string_view s, std::string_view literal) {
  if (s.size() >= literal.size()) {
    return s.substr(0, literal.size()) == literal ? Match::kFull : Match::kNone;
  }
  return literal.substr(0, s.size()) == s ? Match::kPartial : Match::kNone;
}

TagMatch match_tag(std::string_view s, TagMask accept) {
  TagMatch m;
  if (s.empty() || s[0] != '<') return m;
  size_t pos = 1;
  if (pos >= s.size()) {
    m.match = Match::kPartial;
    return m;
  }
  m.closing = s[pos] == '/';
  if (m.closing) ++pos;
  const TagMask side =
      m.closing ? (tag_bit(true, TagName::kToolCalls) | tag_bit(true, TagName::kInvoke) |
                   tag_bit(true, TagName::kParameter))
                : (tag_bit(false, TagName::kToolCalls) | tag_bit(false, TagName::kInvoke) |
                   tag_bit(false, TagName::kParameter));
  if ((accept & side) == 0) return m;

  int lead = 0;
  int trail = 0;
  bool lead_wide = true;
  bool trail_wide = true;
  Match r = match_bars(s, &pos, 2, &lead, &lead_wide);
  if (r == Match::kPartial) {
    m.match = Match::kPartial;
    return m;
  }
  r = match_literal(s.substr(pos), "DSML");
  if (r != Match::kFull) {
    m.match = r;
    return m;
  }
  pos += 4;
  r = match_bars(s, &pos, 2, &trail, &trail_wide);
  if (r == Match::kPartial || (trail == 0 && pos >= s.size())) {
    m.match = Match::kPartial;
    return m;
  }
  if (trail == 0) return m;
  m.canonical = lead == 1 && trail == 1 && lead_wide && trail_wide;

  bool any_partial = false;
  for (int i = 0; i < 3; ++i) {
    const auto name = static_cast<TagName>(i);
    if ((accept & tag_bit(m.closing, name)) == 0) continue;
    const Match nm = match_literal(s.substr(pos), kTagNames[i]);
    if (nm == Match::kPartial) any_partial = true;
    if (nm != Match::kFull) continue;
    m.name = name;
    size_t end = pos + kTagNames[i].size();
    const bool needs_gt = m.closing || name == TagName::kToolCalls;
    if (end >= s.size()) {
      m.match = Match::kPartial;
      return m;
    }
    if (needs_gt) {
      if (s[end] != '>') return m;
      m.length = end + 1;
    } else {
      if (!is_delimiter(s[end])) return m;
      m.length = end;
    }
    m.match = Match::kFull;
    return m;
  }
  if (any_partial) m.match = Match::kPartial;
  return m;
}

Match match_closer_token(std::string_view s, size_t* length) {
  size_t pos = 0;
  int lead = 0;
  bool wide = true;
  if (match_bars(s, &pos, 2, &lead, &wide) == Match::kPartial) return Match::kPartial;
  const Match r = match_literal(s.substr(pos), "DSML");
  if (r != Match::kFull) return r;
  pos += 4;
  const std::string_view rest = s.substr(pos);
  if (rest.empty()) return Match::kPartial;
  const Match wide_bar = match_literal(rest, kWideBar);
  if (wide_bar == Match::kPartial) return Match::kPartial;
  if (wide_bar == Match::kFull) {
    *length = pos + kWideBar.size();
    return Match::kFull;
  }
  if (rest[0] == '|') {
    *length = pos + 1;
    return Match::kFull;
  }
  return Match::kNone;
}

namespace {

bool closer_at(std::string_view s, size_t i) {
  size_t len = 0;
  return s.substr(i, 2) == "</" && match_closer_token(s.substr(i + 2), &len) == Match::kFull;
}

// s[i] == '&': is it "&" ("amp;")* "lt;" followed by a closer look-alike?
bool escape_chain_at(std::string_view s, size_t i) {
  size_t j = i + 1;
  while (s.substr(j, 4) == "amp;") j += 4;
  size_t len = 0;
  return s.substr(j, 4) == "lt;/" && match_closer_token(s.substr(j + 4), &len) == Match::kFull;
}

}  // namespace

void append_escaped_string_value(std::string_view raw, std::string* out) {
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '<' && closer_at(raw, i)) {
      *out += "&lt;";
    } else if (raw[i] == '&' && escape_chain_at(raw, i)) {
      *out += "&amp;";
    } else {
      out->push_back(raw[i]);
    }
  }
}

std::string unescape_string_value(std::string_view escaped) {
  std::string out;
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '&' && escape_chain_at(escaped, i)) {
      if (escaped.substr(i, 4) == "&lt;") {
        out.push_back('<');
        i += 3;
      } else {
        out.push_back('&');
        i += 4;  // drop one "amp;"
      }
    } else {
      out.push_back(escaped[i]);
    }
  }
  return out;
}

void append_escaped_json_value(std::string_view json_text, std::string* out) {
  for (size_t i = 0; i < json_text.size(); ++i) {
    if (json_text[i] == '<' && closer_at(json_text, i)) {
      *out += "\\u003c";
    } else {
      out->push_back(json_text[i]);
    }
  }
}

void append_attribute(std::string_view raw, std::string* out) {
  if (raw.find_first_of("&<>\"") == std::string_view::npos) {
    *out += raw;
    return;
  }
  for (char c : raw) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      default: out->push_back(c);
    }
  }
}

std::string decode_attribute(std::string_view text) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    bool replaced = false;
    if (text[i] == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (text.substr(i, entity.size()) == entity) {
          out.push_back(c);
          i += entity.size() - 1;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out.push_back(text[i]);
  }
  return out;
}

void EscapeDecoder::start() {
  active_ = true;
  amps_ = 0;
  tail_.clear();
}

void EscapeDecoder::reset() {
  active_ = false;
  amps_ = 0;
  tail_.clear();
}

EscapeDecoder::Step EscapeDecoder::push(char c, bool at_end) {
  tail_.push_back(c);
  const std::string_view tail = tail_;
  if (tail == "amp;") {
    ++amps_;
    tail_.clear();
    return Step::kMore;
  }
  Match m = match_literal(tail, "amp;");
  if (m == Match::kNone) {
    m = match_literal(tail, "lt;/");
    if (m == Match::kFull) {
      size_t len = 0;
      m = match_closer_token(tail.substr(4), &len);
      if (m == Match::kFull) return Step::kDecoded;
    }
  }
  return m == Match::kPartial && !at_end ? Step::kMore : Step::kFailed;
}

std::string EscapeDecoder::output() const {
  // "&lt;/X" -> "</X"; "&" ("amp;")*k "lt;/X" -> one "amp;" fewer.
  std::string out = amps_ == 0 ? "</" : "&";
  for (size_t i = 1; i < amps_; ++i) out += "amp;";
  if (amps_ > 0) out += "lt;/";
  out += std::string_view(tail_).substr(4);
  return out;
}

std::string EscapeDecoder::literal(bool include_last) const {
  std::string out = "&";
  for (size_t i = 0; i < amps_; ++i) out += "amp;";
  out += std::string_view(tail_).substr(
      0, include_last || tail_.empty() ? tail_.size() : tail_.size() - 1);
  return out;
}

namespace {
bool is_attr_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
}  // namespace

TagAttributes read_tag_attributes(std::string_view s) {
  TagAttributes a;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (is_attr_space(s[i]) || s[i] == '/')) ++i;
    const size_t key_start = i;
    while (i < s.size() && !is_attr_space(s[i]) && s[i] != '=') ++i;
    const std::string_view key = s.substr(key_start, i - key_start);
    while (i < s.size() && is_attr_space(s[i])) ++i;
    if (i >= s.size() || s[i] != '=') continue;
    ++i;
    while (i < s.size() && is_attr_space(s[i])) ++i;
    std::string_view value;
    if (i < s.size() && (s[i] == '"' || s[i] == '\'')) {
      const char q = s[i++];
      const size_t end = std::min(s.find(q, i), s.size());
      value = s.substr(i, end - i);
      i = end + 1;
    } else {
      const size_t start = i;
      while (i < s.size() && !is_attr_space(s[i])) ++i;
      value = s.substr(start, i - start);
    }
    if (key == "name" && !a.has_name) {
      a.has_name = true;
      a.name = decode_attribute(value);
    } else if (key == "string" && !a.has_string) {
      a.has_string = true;
      a.string_attr = std::string(value);
    }
  }
  return a;
}

}  // namespace ds4::chat::dsml

namespace ds4::chat {
namespace {

// One <｜DSML｜parameter ...>VALUE</｜DSML｜parameter> line.
void append_parameter(std::string_view key, const json::Value& value, std::string* out) {
  *out += "<｜DSML｜parameter name=\"";
  dsml::append_attribute(key, out);
  if (value.is_string()) {
    *out += "\" string=\"true\">";
    dsml::append_escaped_string_value(value.text, out);
  } else {
    *out += "\" string=\"false\">";
    dsml::append_escaped_json_value(json::dump(value), out);
  }
  *out += "</｜DSML｜parameter>";
}

void append_invoke(const ToolCall& call, std::string* out) {
  *out += "<｜DSML｜invoke name=\"";
  dsml::append_attribute(call.name, out);
  *out += "\">\n";
  auto parsed = json::parse(call.arguments_json);
  if (parsed.is_ok() && parsed->is_object()) {
    const auto& members = parsed->members;
    for (size_t i = 0; i < members.size(); ++i) {
      if (i > 0) out->push_back('\n');
      append_parameter(members[i].key, members[i].value, out);
    }
  } else {
    // The reference wraps arguments it cannot read as an object: {"arguments": <text>}.
    json::Value text;
    text.type = json::Type::kString;
    text.text = call.arguments_json;
    append_parameter("arguments", text, out);
  }
  *out += "\n</｜DSML｜invoke>";
}

}  // namespace

std::string encode_tool_calls(std::span<const ToolCall> calls) {
  if (calls.empty()) return {};
  std::string out = "\n\n<｜DSML｜tool_calls>\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out.push_back('\n');
    append_invoke(calls[i], &out);
  }
  out += "\n</｜DSML｜tool_calls>";
  return out;
}

}  // namespace ds4::chat
