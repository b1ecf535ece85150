// src/chat/parser_test_util.h: helpers shared by the output-parser tests (test-only).
// Owns: feeding a parser in given chunkings and normalising event streams for comparison.
#pragma once

#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/chat.h"

namespace ds4::chat::testing {

// Feeds `text` in pieces of the given sizes (the last piece takes the rest), then finishes.
inline std::vector<OutputEvent> parse_in_chunks(std::string_view text,
                                                const std::vector<size_t>& sizes,
                                                OutputParserOptions options = {}) {
  OutputParser parser(options);
  std::vector<OutputEvent> events;
  size_t pos = 0;
  for (size_t s : sizes) {
    if (pos >= text.size()) break;
    parser.feed(text.substr(pos, s), &events);
    pos += s;
  }
  if (pos < text.size()) parser.feed(text.substr(pos), &events);
  parser.finish(&events);
  return events;
}

inline std::vector<OutputEvent> parse_whole(std::string_view text,
                                            OutputParserOptions options = {}) {
  return parse_in_chunks(text, {text.size()}, options);
}

inline std::vector<size_t> random_chunks(size_t total, std::mt19937* rng) {
  std::vector<size_t> sizes;
  size_t used = 0;
  while (used < total) {
    const size_t s = 1 + (*rng)() % ((*rng)() % 2 ? 3 : 17);
    sizes.push_back(s);
    used += s;
  }
  return sizes;
}

// Merges adjacent fragments of the same kind (and tool index); fragment boundaries are not part of
// the parser's contract.
inline std::vector<OutputEvent> coalesce(const std::vector<OutputEvent>& events) {
  std::vector<OutputEvent> out;
  for (const OutputEvent& e : events) {
    const bool fragment = e.kind == OutputEventKind::kText ||
                          e.kind == OutputEventKind::kReasoning ||
                          e.kind == OutputEventKind::kToolCallArguments;
    if (fragment && !out.empty() && out.back().kind == e.kind &&
        out.back().tool_index == e.tool_index) {
      out.back().text += e.text;
    } else {
      out.push_back(e);
    }
  }
  return out;
}

inline std::string describe(const std::vector<OutputEvent>& events) {
  std::string s;
  for (const OutputEvent& e : events) {
    s += to_string(e.kind);
    if (e.tool_index >= 0) s += "#" + std::to_string(e.tool_index);
    if (!e.text.empty()) s += "[" + e.text + "]";
    s += "\n";
  }
  return s;
}

}  // namespace ds4::chat::testing

namespace ds4::chat {
// gtest printer: readable event dumps in failure messages.
inline void PrintTo(const OutputEvent& e, std::ostream* os) {
  *os << to_string(e.kind);
  if (e.tool_index >= 0) *os << "#" << e.tool_index;
  if (!e.text.empty()) *os << "[" << e.text << "]";
}
}  // namespace ds4::chat
