#include "eval/question.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/utf8.h"

namespace ds4::eval {
namespace {

// A question is a flat object whose only array is `choices`: anything nested deeper is refused
// before nlohmann builds it.
constexpr int kMaxJsonDepth = 3;
constexpr size_t kMaxNameBytes = 64;

Status line_error(size_t line, const std::string& what) {
  return Status::invalid_file("questions line %zu: %s", line, what.c_str());
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

int json_depth(std::string_view s) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

std::string shown(std::string_view s) {
  std::string out(1, '"');
  for (char c : s.substr(0, 40)) out.push_back(static_cast<unsigned char>(c) < 0x20 ? '?' : c);
  if (s.size() > 40) out.append("...");
  out.push_back('"');
  return out;
}

Result<std::string> parse_choice_answer(std::string_view a, size_t n_choices) {
  if (a.size() != 1 || !((a[0] >= 'A' && a[0] <= 'Z') || (a[0] >= 'a' && a[0] <= 'z'))) {
    return Status::invalid_argument("answer %s is not a choice letter", shown(a).c_str());
  }
  const char letter = static_cast<char>(a[0] >= 'a' ? a[0] - 'a' + 'A' : a[0]);
  if (static_cast<size_t>(letter - 'A') >= n_choices) {
    return Status::invalid_argument("answer \"%c\" is beyond the %zu choices (A-%c)", letter,
                                    n_choices, static_cast<char>('A' + n_choices - 1));
  }
  return std::string(1, letter);
}

Result<std::string> parse_integer_answer(std::string_view a) {
  if (a.empty() || a.size() > kMaxIntegerDigits ||
      !std::all_of(a.begin(), a.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::invalid_argument("answer %s is not a non-negative integer of at most %zu digits",
                                    shown(a).c_str(), kMaxIntegerDigits);
  }
  const size_t nz = a.find_first_not_of('0');
  return std::string(nz == std::string_view::npos ? std::string_view("0") : a.substr(nz));
}

Result<std::string> string_field(const nlohmann::json& obj, const char* name, bool required) {
  auto it = obj.find(name);
  if (it == obj.end()) {
    if (required) return Status::invalid_argument("missing field \"%s\"", name);
    return std::string();
  }
  if (!it->is_string()) return Status::invalid_argument("field \"%s\" is not a string", name);
  std::string v = it->get<std::string>();
  if (required && v.empty()) return Status::invalid_argument("field \"%s\" is empty", name);
  return v;
}

Result<Question> parse_question(std::string_view line) {
  nlohmann::json obj;
  try {
    obj = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_argument("invalid JSON: %s", e.what());
  }
  if (!obj.is_object()) return Status::invalid_argument("not a JSON object");
  static const std::set<std::string> kKnown = {"source",   "id",   "domain",  "title",
                                               "question", "kind", "choices", "answer"};
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!kKnown.count(it.key())) {
      return Status::invalid_argument("unknown field %s", shown(it.key()).c_str());
    }
  }
  Question q;
  DS4_ASSIGN_OR_RETURN(q.source, string_field(obj, "source", true));
  DS4_ASSIGN_OR_RETURN(q.id, string_field(obj, "id", true));
  for (const std::string* name : {&q.source, &q.id}) {
    if (name->size() > kMaxNameBytes || !std::all_of(name->begin(), name->end(), is_name_char)) {
      return Status::invalid_argument("source/id %s must be 1..%zu characters of A-Z a-z 0-9 . _ -",
                                      shown(*name).c_str(), kMaxNameBytes);
    }
  }
  DS4_ASSIGN_OR_RETURN(q.domain, string_field(obj, "domain", false));
  DS4_ASSIGN_OR_RETURN(q.title, string_field(obj, "title", false));
  DS4_ASSIGN_OR_RETURN(q.question, string_field(obj, "question", true));
  DS4_ASSIGN_OR_RETURN(std::string kind, string_field(obj, "kind", true));
  if (kind == "choice") {
    q.kind = AnswerKind::kChoice;
  } else if (kind == "integer") {
    q.kind = AnswerKind::kInteger;
  } else if (kind == "lines") {
    q.kind = AnswerKind::kLineSet;
  } else {
    return Status::invalid_argument("kind %s is not \"choice\", \"integer\" or \"lines\"",
                                    shown(kind).c_str());
  }
  auto choices = obj.find("choices");
  if (q.kind == AnswerKind::kChoice) {
    if (choices == obj.end() || !choices->is_array()) {
      return Status::invalid_argument("kind \"choice\" needs a \"choices\" array");
    }
    if (choices->size() < 2 || choices->size() > kMaxChoices) {
      return Status::invalid_argument("%zu choices (a question has 2 to %zu)", choices->size(),
                                      kMaxChoices);
    }
    for (const auto& c : *choices) {
      if (!c.is_string() || c.get<std::string>().empty()) {
        return Status::invalid_argument("choice %c is not a non-empty string",
                                        static_cast<char>('A' + q.choices.size()));
      }
      q.choices.push_back(c.get<std::string>());
    }
  } else if (choices != obj.end()) {
    return Status::invalid_argument("\"choices\" given for kind %s", shown(kind).c_str());
  }
  auto answer = obj.find("answer");
  if (answer == obj.end()) return Status::invalid_argument("missing field \"answer\"");
  std::string answer_text;
  if (answer->is_string()) {
    answer_text = answer->get<std::string>();
  } else if (answer->is_number_unsigned() && q.kind == AnswerKind::kInteger) {
    answer_text = std::to_string(answer->get<uint64_t>());
  } else {
    return Status::invalid_argument("field \"answer\" is not a string");
  }
  if (answer_text.empty()) return Status::invalid_argument("field \"answer\" is empty");
  DS4_ASSIGN_OR_RETURN(q.answer, normalize_answer(q.kind, answer_text, q.choices.size()));
  return q;
}

}  // namespace

const char* to_string(AnswerKind kind) {
  switch (kind) {
    case AnswerKind::kChoice: return "choice";
    case AnswerKind::kInteger: return "integer";
    case AnswerKind::kLineSet: return "lines";
  }
  return "?";
}

LineRanges normalize_ranges(LineRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  LineRanges out;
  for (const auto& r : ranges) {
    if (!out.empty() &&
        static_cast<int64_t>(r.first) <= static_cast<int64_t>(out.back().second) + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

bool contains_range(const LineRanges& set, int first, int last) {
  for (const auto& r : set) {
    if (r.first <= first && last <= r.second) return true;
  }
  return false;
}

std::string format_line_set(const LineRanges& ranges) {
  std::string out;
  for (const auto& [a, b] : ranges) {
    if (!out.empty()) out += ',';
    out += std::to_string(a);
    if (b != a) {
      out += '-';
      out += std::to_string(b);
    }
  }
  return out;
}

Result<LineRanges> parse_line_set(std::string_view spec) {
  LineRanges ranges;
  bool zero = false;
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < spec.size() && spec[i] == ' ') ++i;
  };
  auto number = [&](int* out) -> bool {
    skip_spaces();
    size_t start = i;
    int64_t v = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9' && i - start < 7) {
      v = v * 10 + (spec[i++] - '0');
    }
    if (i == start || (i < spec.size() && spec[i] >= '0' && spec[i] <= '9')) return false;
    *out = static_cast<int>(v);
    skip_spaces();
    return true;
  };
  if (spec.empty()) return Status::invalid_argument("line set is empty");
  while (true) {
    int a = 0, b = 0;
    if (!number(&a)) {
      return Status::invalid_argument("line set %s: expected a line number at byte %zu",
                                      shown(spec).c_str(), i);
    }
    b = a;
    if (i < spec.size() && spec[i] == '-') {
      ++i;
      if (!number(&b)) {
        return Status::invalid_argument("line set %s: expected a line number at byte %zu",
                                        shown(spec).c_str(), i);
      }
    }
    if (a == 0 && b == 0) {
      zero = true;
    } else if (a < 1 || b < a || b > kMaxLineNumber) {
      return Status::invalid_argument("line set %s: range %d-%d is not within 1..%d, ascending",
                                      shown(spec).c_str(), a, b, kMaxLineNumber);
    } else {
      ranges.emplace_back(a, b);
    }
    if (i == spec.size()) break;
    if (spec[i] != ',') {
      return Status::invalid_argument("line set %s: unexpected %s at byte %zu", shown(spec).c_str(),
                                      shown(spec.substr(i, 1)).c_str(), i);
    }
    ++i;
  }
  if (zero && !ranges.empty()) {
    return Status::invalid_argument("line set %s: 0 (safe) cannot be combined with lines",
                                    shown(spec).c_str());
  }
  if (zero) return LineRanges{{0, 0}};
  return normalize_ranges(std::move(ranges));
}

Result<std::string> normalize_answer(AnswerKind kind, std::string_view answer, size_t n_choices) {
  switch (kind) {
    case AnswerKind::kChoice: return parse_choice_answer(answer, n_choices);
    case AnswerKind::kInteger: return parse_integer_answer(answer);
    case AnswerKind::kLineSet: {
      DS4_ASSIGN_OR_RETURN(LineRanges r, parse_line_set(answer));
      return format_line_set(r);
    }
  }
  return Status::internal("unknown answer kind");
}

Result<std::vector<Question>> parse_questions(std::string_view text) {
  std::vector<Question> out;
  std::set<std::string> ids;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > kMaxQuestionLineBytes) {
      return line_error(line_no, "line of " + std::to_string(line.size()) + " bytes (limit " +
                                     std::to_string(kMaxQuestionLineBytes) + ")");
    }
    if (!base::is_valid_utf8(line)) return line_error(line_no, "invalid UTF-8");
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;  // blank or comment
    if (json_depth(line) > kMaxJsonDepth) return line_error(line_no, "JSON nested too deeply");
    auto q = parse_question(line);
    if (!q.is_ok()) return line_error(line_no, q.status().message());
    if (!ids.insert(q->id).second) {
      return line_error(line_no, std::string("duplicate id ").append(shown(q->id)));
    }
    if (out.size() == kMaxQuestions) {
      return line_error(line_no, "more than " + std::to_string(kMaxQuestions) + " questions");
    }
    out.push_back(std::move(q).value());
  }
  if (out.empty()) return Status::invalid_file("questions: no questions in the file");
  return out;
}

Result<std::vector<Question>> load_questions(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("question file %s cannot be opened", path.c_str());
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::io_error("reading question file %s failed", path.c_str());
  auto r = parse_questions(buf.str());
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

const Question* find_question(const std::vector<Question>& questions, std::string_view key) {
  for (const Question& q : questions) {
    if (q.key() == key) return &q;
  }
  return nullptr;
}

}  // namespace ds4::eval
