// src/agent/tool_args.cpp: parameter readers and result constructors of the agent tools.
#include "agent/tool_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "base/text.h"

namespace ds4::agent {
namespace {

bool equals_lower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

ToolResult tool_ok(std::string text) { return {true, std::move(text)}; }

ToolResult tool_error(std::string_view message) {
  return {false, "Tool error: " + std::string(message)};
}

const std::string* find_param(const ToolParams& params, std::string_view name) {
  for (const ToolParam& p : params)
    if (p.name == name) return &p.value;
  return nullptr;
}

int64_t parse_int_clamped(std::string_view text, int64_t fallback, int64_t lo, int64_t hi) {
  const std::string_view t = base::trim(text);
  if (t.empty()) return fallback;
  std::string_view digits = t;
  if (digits.front() == '+') digits.remove_prefix(1);  // from_chars takes '-' but not '+'
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (end == digits.data() + digits.size()) {
    if (ec == std::errc()) return std::clamp(v, lo, hi);
    if (ec == std::errc::result_out_of_range) return t.front() == '-' ? lo : hi;
  }
  // Not a plain integer: accept a decimal or exponent form ("500.0", "1e3").
  const std::string copy(t);
  char* stop = nullptr;
  const double d = std::strtod(copy.c_str(), &stop);
  if (stop != copy.c_str() + copy.size() || std::isnan(d)) return fallback;
  if (d <= static_cast<double>(lo)) return lo;
  if (d >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(d);
}

bool parse_bool(std::string_view text, bool fallback) {
  const std::string_view t = base::trim(text);
  if (equals_lower(t, "true") || equals_lower(t, "yes") || t == "1") return true;
  if (equals_lower(t, "false") || equals_lower(t, "no") || t == "0") return false;
  return fallback;
}

int64_t int_param(const ToolParams& params, std::string_view name, int64_t fallback, int64_t lo,
                  int64_t hi) {
  const std::string* v = find_param(params, name);
  return v ? parse_int_clamped(*v, fallback, lo, hi) : fallback;
}

bool bool_param(const ToolParams& params, std::string_view name, bool fallback) {
  const std::string* v = find_param(params, name);
  return v ? parse_bool(*v, fallback) : fallback;
}

std::string string_param(const ToolParams& params, std::string_view name,
                         std::string_view fallback) {
  const std::string* v = find_param(params, name);
  return v ? *v : std::string(fallback);
}

}  // namespace ds4::agent
