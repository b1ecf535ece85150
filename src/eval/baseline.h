// src/eval/baseline.h: the deterministic drift gate (features.md §7.8, issue 52 item 3): a
// baseline file recording, per case, status, picked answer and generated-token count, and the
// comparison of a run against it.
// Owns: the baseline format (TSV, docs/eval.md, "Baseline files"), its writer and strict reader,
// the drift list and the pass/fail decision.
// Does not own: running the cases (the app runs them greedy with a fixed seed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "eval/report.h"

namespace ds4::eval {

inline constexpr std::string_view kBaselineMagic = "# ds4-eval baseline v1";
inline constexpr size_t kMaxBaselineLineBytes = 4096;

struct BaselineEntry {
  std::string key;     // source/id
  std::string status;  // PASSED, FAILED, SKIPPED, ...
  std::string picked;  // "?" when none
  int64_t generated_tokens = 0;
  bool operator==(const BaselineEntry&) const = default;
};

std::vector<BaselineEntry> baseline_from_results(const std::vector<CaseResult>& cases);
// The file's text; tabs and newlines inside fields become spaces, an empty picked answer "-".
std::string write_baseline(const std::vector<BaselineEntry>& entries);
// Errors name the 1-based line: "baseline line 4: generated_tokens \"x\" is not a count".
Result<std::vector<BaselineEntry>> parse_baseline(std::string_view text);

enum class DriftKind {
  kStatus,   // PASSED -> FAILED, ...
  kAnswer,   // the picked answer changed
  kTokens,   // the generated-token count moved by more than the tolerance
  kMissing,  // in the baseline, not in the run
  kNew,      // in the run, not in the baseline
};
const char* to_string(DriftKind kind);

struct Drift {
  std::string key;
  DriftKind kind = DriftKind::kStatus;
  std::string was, now;     // the two values (empty for the side that lacks the case)
  int64_t token_delta = 0;  // run - baseline generated tokens (0 when one side is missing)
};

struct BaselineOptions {
  // Generated-token counts may move by this much without drifting. 0: greedy decoding on the
  // same build must give the same count.
  int64_t token_tolerance = 0;
};

struct DriftReport {
  std::vector<Drift> drifts;  // baseline order, then the run's new cases
  bool passed = true;         // no drift
};

DriftReport compare_baseline(const std::vector<BaselineEntry>& baseline,
                             const std::vector<BaselineEntry>& run,
                             const BaselineOptions& options = {});

// One line per drift ("ds4/q3: tokens 666 -> 670 (+4)") and a verdict line.
std::string format_drift(const DriftReport& report);

}  // namespace ds4::eval
