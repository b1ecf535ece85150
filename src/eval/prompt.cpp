#include "eval/prompt.h"

namespace ds4::eval {

std::string system_prompt() {
  return "You are answering a difficult benchmark question. Think it through carefully, and give "
         "your final answer in exactly the format the question asks for.";
}

std::string answer_format(AnswerKind kind) {
  switch (kind) {
    case AnswerKind::kChoice: return "Answer: <letter>";
    case AnswerKind::kInteger: return "Answer: <integer>";
    case AnswerKind::kLineSet: return "Answer: <line number or comma-separated line numbers>";
  }
  return "Answer: <answer>";
}

std::string user_prompt(const Question& q) {
  std::string out = q.question;
  if (!q.choices.empty()) {
    out += "\n\nChoices:\n";
    for (size_t i = 0; i < q.choices.size(); ++i) {
      out += static_cast<char>('A' + i);
      out += ". " + q.choices[i] + "\n";
    }
  } else {
    out += "\n";
  }
  if (q.kind == AnswerKind::kLineSet) {
    out += "\nIf the function has no defect, answer 0.";
  }
  out += "\nEnd your reply with exactly one final line of the form:\n" + answer_format(q.kind);
  return out;
}

}  // namespace ds4::eval
