// src/eval/prompt.h: the prompt text of an evaluation case (features.md §7.2).
// Owns: the system sentence pair and the user prompt (the question, a `Choices:` list for
// multiple choice, and the instruction naming the one final line the grader looks for).
// Does not own: chat rendering and think modes (the chat encoder), grading (extract.h).
#pragma once

#include <string>

#include "eval/question.h"

namespace ds4::eval {

std::string system_prompt();
std::string user_prompt(const Question& q);
// The final-line form the user prompt asks for: "Answer: <letter>", "Answer: <integer>" or
// "Answer: <line number or comma-separated line numbers>".
std::string answer_format(AnswerKind kind);

}  // namespace ds4::eval
