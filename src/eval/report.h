// src/eval/report.h: the end-of-run report of ds4-eval (features.md §7.5).
// Owns: the result line ("ds4-eval: P/N passed, F failed, runtime 83.4 s"), the table
// (`# state prompt gen total given correct test`) and the exit-code decision.
// Does not own: the TUI or plain-mode streaming, timing the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds4::eval {

struct CaseResult {
  int index = 0;      // 1-based
  std::string key;    // source/id
  std::string state;  // PASSED, FAILED, SKIPPED, STOPPED, PENDING, ERROR
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  std::string given;    // the picked answer ("?" when none, "" when never graded)
  std::string correct;  // the expected answer
};

std::string format_report(const std::vector<CaseResult>& cases, double runtime_s);

// 1 if any case FAILED or ended in ERROR, else 0.
int report_exit_code(const std::vector<CaseResult>& cases);

}  // namespace ds4::eval
