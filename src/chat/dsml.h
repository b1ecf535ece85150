// src/chat/dsml.h: DSML tag recognition and the value escapes shared by the encoder and the parser.
// Owns: the byte-level grammar of DSML tags including the malformed variants we accept, the escape
// of closing-tag look-alikes inside parameter values, attribute escaping.
// Does not own: the streaming state machine (output_parser.cpp) or prompt layout (template.cpp).
//
// Tag grammar accepted when parsing (canonical form first):
//   "<" ["/"] BAR{0,2} "DSML" BAR{1,2} NAME     BAR = "｜" (U+FF5C) or "|"; NAME = tool_calls |
//   invoke | parameter. Canonical is exactly one "｜" on each side. Closing tags and the tool_calls
//   opener end with ">" right after NAME; invoke/parameter openers continue with attributes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ds4::chat::dsml {

enum class Match { kNone, kPartial, kFull };

// How `s` relates to `literal`: kFull if s starts with it, kPartial if s is a proper prefix of it.
Match match_literal(std::string_view s, std::string_view literal);

enum class TagName { kToolCalls, kInvoke, kParameter };

// A set of acceptable (closing, name) pairs.
using TagMask = unsigned;
constexpr TagMask tag_bit(bool closing, TagName name) {
  return 1u << ((closing ? 3 : 0) + static_cast<int>(name));
}

struct TagMatch {
  Match match = Match::kNone;
  bool closing = false;
  TagName name = TagName::kToolCalls;
  size_t length = 0;       // tag bytes; for invoke/parameter openers the delimiter is excluded
  bool canonical = false;  // spelled with exactly one full-width bar on each side of DSML
};

// `s` starts at a '<'. kPartial while `s` may still grow into an accepted tag; kFull once one is
// complete (an opener of invoke/parameter needs the following delimiter: space, tab, CR, LF, '>').
TagMatch match_tag(std::string_view s, TagMask accept);

// The "DSML token look-alike" that follows "</" in a closing tag: BAR{0,2} "DSML" BAR. Any closing
// tag the parser accepts starts with "</" + this, so escaping every "</" + look-alike inside a
// value keeps values from ending early. *length gets the matched bytes on kFull.
Match match_closer_token(std::string_view s, size_t* length);

// String parameter value escape (an injective extension of ds4's "&lt;" rule):
//   "</" + look-alike                  -> "&lt;/" + look-alike
//   "&" + ("amp;")*k + "lt;/" + look-alike -> "&" + ("amp;")*(k+1) + "lt;/" + look-alike
// Everything else is written raw, so ordinary strings (including "&lt;", "&amp;") are unchanged.
void append_escaped_string_value(std::string_view raw, std::string* out);
std::string unescape_string_value(std::string_view escaped);

// Non-string values are JSON text; a "<" that starts "</" + look-alike can only sit inside a JSON
// string there, so it is written as "\u003c" (same JSON value, no closing tag in the bytes).
void append_escaped_json_value(std::string_view json_text, std::string* out);

// Streaming decoder of the string-value escape, fed the bytes after a '&' one at a time. Holds
// only a count for the "amp;" groups, so a long chain costs O(1) per byte.
class EscapeDecoder {
 public:
  enum class Step { kMore, kDecoded, kFailed };
  void start();  // a '&' was seen
  bool active() const { return active_; }
  // kDecoded: output() holds the decoded bytes for all input_bytes() consumed so far.
  // kFailed: the pushed byte does not continue the escape; literal(false) holds the bytes before it
  // (the caller scans the pushed byte again). `at_end` turns "might continue" into kFailed.
  Step push(char c, bool at_end);
  std::string output() const;
  std::string literal(bool include_last) const;
  size_t input_bytes() const { return 1 + 4 * amps_ + tail_.size(); }
  void reset();

 private:
  bool active_ = false;
  size_t amps_ = 0;   // complete "amp;" groups after the '&'
  std::string tail_;  // bytes after them, a prefix of "amp;" or of "lt;/" + look-alike
};

// Attributes of an invoke/parameter tag, read tolerantly: ` name="x" string="true"` with either
// quote, extra spaces, unknown attributes ignored, names entity-decoded.
struct TagAttributes {
  bool has_name = false;
  std::string name;
  bool has_string = false;
  std::string string_attr;
};
TagAttributes read_tag_attributes(std::string_view text);

// Attribute values (tool and parameter names) are raw, as in the reference encoder, unless they
// contain one of & < > " -- then all four are written as XML entities (ds4's rule).
void append_attribute(std::string_view raw, std::string* out);
std::string decode_attribute(std::string_view text);

}  // namespace ds4::chat::dsml
