// src/eval/question.h: the capability-regression question set of ds4-eval (features.md §7.1).
// Owns: the Question record, the answer kinds and their validation (a choice letter, a
// non-negative integer, a line set such as "9-10" or "12,15", "0" meaning "safe"), and the
// JSONL loader with its limits (docs/eval.md, "Question files").
// Does not own: prompting (prompt.h), grading a model's output (extract.h), running a model.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ds4/status.h"

namespace ds4::eval {

enum class AnswerKind { kChoice, kInteger, kLineSet };

// Limits of the question files: a line (one question) above kMaxQuestionLineBytes is refused
// before it is parsed, so a hostile file costs at most that much per line of JSON work.
inline constexpr size_t kMaxChoices = 10;
inline constexpr size_t kMaxQuestionLineBytes = 64 * 1024;
inline constexpr size_t kMaxQuestions = 100000;
inline constexpr size_t kMaxIntegerDigits = 40;
// The largest line number a line-set answer may name (a single function, not a file).
inline constexpr int kMaxLineNumber = 99999;

struct Question {
  std::string source;  // "ds4", "gpqa", ...: with id, the case's name `source/id`
  std::string id;      // unique within a file
  std::string domain;
  std::string title;
  std::string question;              // the text shown to the model
  std::vector<std::string> choices;  // kChoice only: 2..kMaxChoices, letters A, B, ...
  AnswerKind kind = AnswerKind::kInteger;
  // The expected answer, normalized: an upper-case letter; an integer without leading zeros; a
  // line set in canonical form (ascending, ranges merged: "9-10,12"; "0" for safe).
  std::string answer;

  std::string key() const { return source + "/" + id; }
};

const char* to_string(AnswerKind kind);  // "choice", "integer", "lines"

// A set of line numbers as inclusive ranges, ascending and disjoint (adjacent ranges merged).
using LineRanges = std::vector<std::pair<int, int>>;

// Parses an expected line set: comma-separated numbers or ranges `a-b` (a <= b), spaces allowed
// around items, each in 1..kMaxLineNumber, or exactly "0" (a safe function).
Result<LineRanges> parse_line_set(std::string_view spec);
// "9-10,12"; "0" for {0}.
std::string format_line_set(const LineRanges& ranges);
// Merges and sorts arbitrary ranges (each with first <= second).
LineRanges normalize_ranges(LineRanges ranges);
bool contains_range(const LineRanges& set, int first, int last);

// Normalizes an expected answer of `kind` (choices: how many the question has), or says why it
// does not fit the kind.
Result<std::string> normalize_answer(AnswerKind kind, std::string_view answer, size_t n_choices);

// Parses a whole question file (JSONL, docs/eval.md). Errors name the 1-based line:
// "questions line 7: answer \"F\" is beyond the 4 choices (A-D)".
Result<std::vector<Question>> parse_questions(std::string_view text);
// Reads and parses `path`; errors carry the path in front.
Result<std::vector<Question>> load_questions(const std::string& path);

// The question with key() == `key`, or nullptr.
const Question* find_question(const std::vector<Question>& questions, std::string_view key);

}  // namespace ds4::eval
