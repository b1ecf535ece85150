#include "eval/extract.h"

#include <algorithm>
#include <utility>

namespace ds4::eval {
namespace {

constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kMarkerWord = "answer";
// Line numbers in a model's answer longer than this many digits are out of any range.
constexpr size_t kMaxLineDigits = 7;

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_letter(c) || is_digit(c); }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool word_at(std::string_view s, size_t i) {
  if (i + kMarkerWord.size() > s.size()) return false;
  for (size_t k = 0; k < kMarkerWord.size(); ++k) {
    if (lower(s[i + k]) != kMarkerWord[k]) return false;
  }
  if (i > 0 && is_letter(s[i - 1])) return false;
  const size_t end = i + kMarkerWord.size();
  return end == s.size() || !is_letter(s[end]);
}

std::string strip_zeros(std::string_view digits) {
  const size_t nz = digits.find_first_not_of('0');
  return std::string(nz == std::string_view::npos ? std::string_view("0") : digits.substr(nz));
}

// The digit run starting at i.
std::string_view digits_at(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  return s.substr(i, j - i);
}

// The first integer starting in [from, to), or empty.
std::string_view first_integer(std::string_view s, size_t from, size_t to) {
  for (size_t i = from; i < to && i < s.size(); ++i) {
    if (is_digit(s[i])) return digits_at(s, i);
  }
  return {};
}

std::string_view last_integer(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && !is_digit(s[i - 1])) --i;
  if (i == 0) return {};
  size_t start = i;
  while (start > 0 && is_digit(s[start - 1])) --start;
  return s.substr(start, i - start);
}

bool standalone_letter(std::string_view s, size_t i, size_t n_choices) {
  const char c = s[i];
  if (c < 'A' || static_cast<size_t>(c - 'A') >= n_choices) return false;
  if (i > 0 && is_alnum(s[i - 1])) return false;
  return i + 1 == s.size() || !is_alnum(s[i + 1]);
}

int line_value(std::string_view digits) {
  if (digits.size() > kMaxLineDigits) return kMaxLineNumber + 1;
  int v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return std::min(v, kMaxLineNumber + 1);
}

// Skips spaces and a range dash ('-' or the en dash U+2013); returns the offset after it, or
// npos when none follows.
size_t after_dash(std::string_view s, size_t i) {
  while (i < s.size() && s[i] == ' ') ++i;
  if (i < s.size() && s[i] == '-') return i + 1;
  if (s.substr(i, 3) == "\xE2\x80\x93") return i + 3;
  return std::string_view::npos;
}

}  // namespace

std::string_view visible_part(std::string_view output) {
  const size_t p = output.find(kThinkEnd);
  return p == std::string_view::npos ? output : output.substr(p + kThinkEnd.size());
}

size_t answer_marker_end(std::string_view visible) {
  size_t first = std::string_view::npos;
  size_t last_colon = std::string_view::npos;
  for (size_t i = 0; i + kMarkerWord.size() <= visible.size(); ++i) {
    if (!word_at(visible, i)) continue;
    size_t j = i + kMarkerWord.size();
    if (first == std::string_view::npos) first = j;
    while (j < visible.size() && (visible[j] == ' ' || visible[j] == '\t')) ++j;
    if (j < visible.size() && visible[j] == ':') last_colon = j + 1;
  }
  return last_colon != std::string_view::npos ? last_colon : first;
}

std::string extract_choice(std::string_view output, size_t n_choices) {
  const std::string_view v = visible_part(output);
  const size_t m = answer_marker_end(v);
  if (m != std::string_view::npos) {
    for (size_t i = m; i < v.size() && i < m + kChoiceWindowBytes; ++i) {
      if (standalone_letter(v, i, n_choices)) return std::string(1, v[i]);
    }
  }
  for (size_t i = v.size(); i > 0; --i) {
    if (standalone_letter(v, i - 1, n_choices)) return std::string(1, v[i - 1]);
  }
  return "?";
}

std::string extract_integer(std::string_view output) {
  const std::string_view v = visible_part(output);
  const size_t m = answer_marker_end(v);
  std::string_view found;
  if (m != std::string_view::npos) found = first_integer(v, m, m + kIntegerWindowBytes);
  if (found.empty()) found = last_integer(v);
  return found.empty() ? "?" : strip_zeros(found);
}

std::string extract_lines(std::string_view output) {
  const std::string_view v = visible_part(output);
  const size_t m = answer_marker_end(v);
  LineRanges given;
  if (m != std::string_view::npos) {
    std::string_view w = v.substr(m, kLineWindowBytes);
    w = w.substr(0, w.find('\n'));
    size_t i = 0;
    while (i < w.size()) {
      if (!is_digit(w[i])) {
        ++i;
        continue;
      }
      const std::string_view a = digits_at(w, i);
      i += a.size();
      int first = line_value(a);
      int last = first;
      const size_t d = after_dash(w, i);
      if (d != std::string_view::npos) {
        size_t k = d;
        while (k < w.size() && w[k] == ' ') ++k;
        if (k < w.size() && is_digit(w[k])) {
          const std::string_view b = digits_at(w, k);
          last = line_value(b);
          i = k + b.size();
        }
      }
      if (last < first) std::swap(first, last);
      given.emplace_back(first, last);
    }
  }
  if (given.empty()) {
    const std::string n = extract_integer(output);
    if (n == "?") return n;
    given.emplace_back(line_value(n), line_value(n));
  }
  // Zero stays apart from line 1 so that "0,1" does not read as a range.
  std::sort(given.begin(), given.end());
  const bool zero = given.front().first == 0 && given.front().second == 0;
  if (zero)
    given.erase(given.begin(), std::find_if(given.begin(), given.end(),
                                            [](const auto& r) { return r.second != 0; }));
  std::string out = zero ? "0" : "";
  const std::string rest = format_line_set(normalize_ranges(std::move(given)));
  if (!rest.empty()) out += (zero ? "," : "") + rest;
  return out;
}

Grade grade(const Question& q, std::string_view output) {
  Grade g;
  switch (q.kind) {
    case AnswerKind::kChoice:
      g.picked = extract_choice(output, q.choices.size());
      g.passed = g.picked == q.answer;
      break;
    case AnswerKind::kInteger:
      g.picked = extract_integer(output);
      g.passed = g.picked == q.answer;
      break;
    case AnswerKind::kLineSet: {
      g.picked = extract_lines(output);
      auto expected = parse_line_set(q.answer);
      auto given = parse_line_set(g.picked);
      if (!expected.is_ok() || !given.is_ok()) break;  // "?" or a line beyond any function
      g.passed = !given->empty() && std::all_of(given->begin(), given->end(), [&](const auto& r) {
        return contains_range(*expected, r.first, r.second);
      });
      break;
    }
  }
  return g;
}

}  // namespace ds4::eval
