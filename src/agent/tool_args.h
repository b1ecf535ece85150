// src/agent/tool_args.h: what every agent tool takes and gives back (features.md §5.3).
// Owns: the string-typed parameter list of one tool call, the lenient readers of its integers
// (clamped to a range) and booleans, and the result type (text plus whether it is an error).
// Does not own: which parameters a tool has (dispatch.cpp) or what a tool does (the tool files).
//
// The model writes every parameter as text inside DSML, so numbers and booleans arrive as strings
// ("500", "true", sometimes "500.0" or "yes"). A value that does not parse falls back to the
// tool's default instead of failing the call: a typo in an optional knob should not cost a round.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::agent {

struct ToolParam {
  std::string name;
  std::string value;
};
using ToolParams = std::vector<ToolParam>;

// The text handed back to the model. An error's text reads "Tool error: <message>".
struct ToolResult {
  bool ok = true;
  std::string text;
};
ToolResult tool_ok(std::string text);
ToolResult tool_error(std::string_view message);

// The first parameter called `name`, or null.
const std::string* find_param(const ToolParams& params, std::string_view name);

// An integer ("42", " -7 ", "500.0"; a fraction is cut toward zero) clamped to [lo, hi]; anything
// else, empty text included, gives `fallback` unchanged.
int64_t parse_int_clamped(std::string_view text, int64_t fallback, int64_t lo, int64_t hi);
// true/yes/1 and false/no/0 in any case, surrounding blanks ignored; anything else: `fallback`.
bool parse_bool(std::string_view text, bool fallback);

// The same readers applied to a parameter that may be absent (absent gives `fallback`).
int64_t int_param(const ToolParams& params, std::string_view name, int64_t fallback, int64_t lo,
                  int64_t hi);
bool bool_param(const ToolParams& params, std::string_view name, bool fallback);
std::string string_param(const ToolParams& params, std::string_view name,
                         std::string_view fallback);

}  // namespace ds4::agent
