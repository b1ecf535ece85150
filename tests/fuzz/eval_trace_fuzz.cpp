// libFuzzer target for ds4-eval's file readers (src/eval): the trace reader (trace.cpp), the
// question loader (question.cpp), the published formats' readers (datasets.cpp: GPQA's CSV,
// SuperGPQA's and AIME's JSONL) and the answer extractors (extract.cpp) they feed, with the
// seeds of tests/fuzz/eval_trace_seeds (a trace with fake markers in its blocks, a question
// file). Every input is tried as both. Checked for every input (ASan/UBSan instrumented):
//   - reading never crashes, hangs or reads out of bounds; damage only adds errors;
//   - what a trace yields (header, cases with every block byte, summary) written back and read
//     again is the same, with no errors: the writer and the reader agree on every case they
//     accept;
//   - a question file that loads has answers already normalized, and a model output stating the
//     expected answer on its final line is graded as passed;
//   - grading any trace's model output against a question of each kind gives a picked answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "eval/datasets.h"
#include "eval/extract.h"
#include "eval/question.h"
#include "eval/trace.h"

namespace {

using ds4::eval::AnswerKind;
using ds4::eval::Question;

void require(bool ok) {
  if (!ok) std::abort();
}

Question question_of(AnswerKind kind, std::string answer) {
  Question q;
  q.source = "fuzz";
  q.id = "q";
  q.kind = kind;
  q.answer = std::move(answer);
  if (kind == AnswerKind::kChoice) q.choices = {"a", "b", "c", "d", "e"};
  return q;
}

void fuzz_trace(std::string_view text) {
  const ds4::eval::ParsedTrace t = ds4::eval::read_trace(text);
  if (t.cases.empty() && t.header.empty()) return;
  std::string again = ds4::eval::write_trace_header(t.header);
  for (const auto& c : t.cases) again += ds4::eval::write_trace_case(c);
  if (t.summary) again += ds4::eval::write_trace_summary(*t.summary);
  const ds4::eval::ParsedTrace u = ds4::eval::read_trace(again);
  require(u.errors.empty());
  require(u.header == t.header);
  require(u.cases == t.cases);
  require(u.summary == t.summary);
  const Question kinds[] = {question_of(AnswerKind::kChoice, "C"),
                            question_of(AnswerKind::kInteger, "70"),
                            question_of(AnswerKind::kLineSet, "9-10")};
  for (const auto& c : t.cases) {
    for (const Question& q : kinds) require(!ds4::eval::grade(q, c.model_output).picked.empty());
  }
}

void fuzz_questions(std::string_view text) {
  auto r = ds4::eval::parse_questions(text);
  if (!r.is_ok()) {
    require(!r.status().message().empty());
    return;
  }
  for (const Question& q : *r) {
    auto again = ds4::eval::normalize_answer(q.kind, q.answer, q.choices.size());
    require(again.is_ok() && *again == q.answer);
    // A long line set does not fit the extractor's marker window.
    if (q.answer.size() <= 100) {
      require(ds4::eval::grade(q, "Reasoning.\nAnswer: " + q.answer).passed);
    }
  }
}

// The published formats (datasets.h): whatever loads is a valid question set.
void fuzz_datasets(std::string_view text) {
  for (const auto f : {ds4::eval::DatasetFormat::kGpqa, ds4::eval::DatasetFormat::kSuperGpqa,
                       ds4::eval::DatasetFormat::kAime}) {
    auto r = ds4::eval::parse_dataset(text, f);
    if (!r.is_ok()) {
      require(!r.status().message().empty());
      continue;
    }
    for (const Question& q : *r) {
      auto again = ds4::eval::normalize_answer(q.kind, q.answer, q.choices.size());
      require(again.is_ok() && *again == q.answer && !q.question.empty());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_trace(text);
  fuzz_questions(text);
  fuzz_datasets(text);
  return 0;
}
