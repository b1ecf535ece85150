// src/eval/extract.h: answer extraction and grading of a model's output (features.md §7.4).
// Owns: the visible part (after the first </think>), the answer marker (the last word "answer"
// followed by optional spaces and ':', else the first word "answer"), the windows after it,
// the loose fallbacks, and pass/fail against a Question's normalized answer.
// Does not own: the expected answers' validation (question.h), running or tracing a model.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "eval/question.h"

namespace ds4::eval {

// How far after the marker each kind looks before falling back to the whole visible text.
inline constexpr size_t kChoiceWindowBytes = 96;
inline constexpr size_t kIntegerWindowBytes = 160;
inline constexpr size_t kLineWindowBytes = 160;  // and never past the marker line's newline

// The part of the output after the first "</think>", or all of it.
std::string_view visible_part(std::string_view output);

// Offset in `visible` just past the answer marker: past the ':' for the last "answer" (a whole
// word, any case, letters not allowed on either side) followed by optional spaces/tabs and ':';
// else just past the first such word; npos when the word does not occur.
size_t answer_marker_end(std::string_view visible);

// These take the whole output (they strip the thinking themselves) and return "?" when nothing
// fits.
// The first standalone letter A..(A + n_choices - 1) (upper case; neither neighbour a letter or
// digit) within kChoiceWindowBytes after the marker, else the last one in the visible text.
std::string extract_choice(std::string_view output, size_t n_choices);
// The first integer starting within kIntegerWindowBytes after the marker, else the last integer
// in the visible text; leading zeros stripped.
std::string extract_integer(std::string_view output);
// Numbers and ranges `a-b` on the marker line (at most kLineWindowBytes, up to its newline), in
// canonical form ("9-10,12"); else the integer extract_integer finds.
std::string extract_lines(std::string_view output);

struct Grade {
  std::string picked;  // the extracted answer, "?" when none
  bool passed = false;
};

// Choice and integer: the picked answer equals the question's. Line sets: at least one line
// given and every given line in the expected set ("0" expected: the model must say 0).
Grade grade(const Question& q, std::string_view output);

}  // namespace ds4::eval
