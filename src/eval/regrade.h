// src/eval/regrade.h: --regrade-trace (features.md §7.7): a trace's model outputs graded again
// with the current extractor against the current question set, no model loaded.
// Owns: matching cases by source/id, old vs new status and picked answer, the counts, the printed
// lines, and the exit-code decision.
// Does not own: reading the trace (trace.h), extraction (extract.h).
#pragma once

#include <string>
#include <vector>

#include "eval/question.h"
#include "eval/trace.h"

namespace ds4::eval {

struct RegradedCase {
  std::string key;  // source/id
  std::string old_status, old_picked;
  std::string new_status, new_picked;  // empty when unknown
  std::string expected;                // the question set's answer now
  bool unknown = false;                // no question with this source/id
  bool changed = false;                // status or picked answer differs from the trace's
};

struct RegradeResult {
  std::vector<RegradedCase> cases;  // the trace's PASSED and FAILED cases, in trace order
  int regraded = 0;                 // cases graded again (known questions)
  int passed = 0, failed = 0, changed = 0, unknown = 0;
  int not_graded = 0;  // cases the trace did not grade (SKIPPED, STOPPED, SWITCHED, ERROR)
  int parse_errors = 0;
  std::vector<std::string> errors;  // the trace's parse errors
};

RegradeResult regrade(const ParsedTrace& trace, const std::vector<Question>& questions);

// One line per changed case ("gpqa/q3: trace FAILED picked=A -> regrade PASSED picked=C
// expected=C"), one per unknown case and parse error, then the summary ("regraded N cases:
// passed P, failed F, changed C, unknown U, parse_errors E").
std::string format_regrade(const RegradeResult& r);

// 0 when every case was found and the trace parsed cleanly; 1 otherwise.
int regrade_exit_code(const RegradeResult& r);

}  // namespace ds4::eval
