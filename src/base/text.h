// src/base/text.h: trimming ASCII blanks (space, tab, CR, LF) off text.
// Owns: what a blank is for the project's plain-text trimming (HTTP's optional whitespace, space
// and tab only, stays with the HTTP parser).
#pragma once

#include <string_view>

namespace ds4::base {

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view trim_end(std::string_view s) {
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string_view trim(std::string_view s) {
  s = trim_end(s);
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  return s;
}

}  // namespace ds4::base
