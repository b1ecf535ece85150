// src/serve/dsml_syntax.h: where generated text stands relative to DSML tool-call syntax, so the
// sampler can force greedy choice on protocol structure and sample payloads normally
// (features.md §2.5).
// Owns: a forgiving incremental tracker over the raw output bytes with the states of §2.5:
// outside a block, structural markup, a string parameter's body, and a JSON parameter's structure
// or string literal (escape-aware). In thinking mode only text after </think> counts.
// Does not own: parsing calls out of the text (chat::OutputParser does).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ds4::serve {

class DsmlSyntax {
 public:
  explicit DsmlSyntax(bool thinking) : state_(thinking ? State::kReasoning : State::kOutside) {}

  void feed(std::string_view bytes);
  // True while the next token is protocol structure: inside a block but not inside a string
  // parameter's body or a JSON string literal (a partial closing tag of >= 2 bytes counts as
  // structure again).
  bool greedy() const;

 private:
  enum class State { kReasoning, kOutside, kStructural, kStringBody, kJson, kDone };
  bool scan_once();  // advances one state transition; false when more bytes are needed

  State state_;
  std::string text_;
  size_t scan_ = 0;  // bytes of text_ already examined in the current state
  bool in_json_string_ = false;
  bool json_escape_ = false;
};

}  // namespace ds4::serve
