// src/eval/trace.h: the ds4-eval trace file (features.md §7.7; docs/eval.md, "Trace files").
// Owns: writing the header block, each case (fields, then the counted SYSTEM_PROMPT,
// QUESTION_PROMPT and MODEL_OUTPUT blocks) and the summary, and reading a trace back: blocks are
// copied by their byte counts, so output containing marker-like text comes back exactly; a
// malformed case is recorded as an error naming its line and reading resumes at the next case.
// Does not own: deciding what the header says or when a case is written (the app), regrading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::eval {

// Ordered `key: value` lines. Keys are [a-z0-9_]+; a value is one line (the writer turns a
// newline in it into a space).
using TraceFields = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kTraceMagic = "# ds4-eval trace";
// A block larger than this is refused by the reader (a trace of 16000-token outputs stays far
// below it).
inline constexpr uint64_t kMaxTraceBlockBytes = 64ull << 20;

struct TraceCase {
  int index = 0;  // 1-based position in the run
  int total = 0;
  std::string source, id;
  // Fixed fields, written in this order after `source` and `id`.
  std::string domain, title;
  std::string status;  // PASSED, FAILED, SKIPPED, STOPPED, SWITCHED or ERROR
  std::string picked, expected;
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t elapsed_ms = 0;
  // Anything else the app records (timestamp, sampling, think mode, think_close, choices or
  // answer_kind), written after the fixed fields, in order.
  TraceFields extra;
  std::string system_prompt, question_prompt, model_output;

  std::string key() const { return source + "/" + id; }
  bool operator==(const TraceCase&) const = default;
};

struct TraceSummary {
  int64_t passed = 0, failed = 0, total = 0;
  bool operator==(const TraceSummary&) const = default;
};

struct ParsedTrace {
  TraceFields header;  // without the magic line
  std::vector<TraceCase> cases;
  std::optional<TraceSummary> summary;  // absent when the run stopped before writing it
  std::vector<std::string> errors;      // "trace line 12: ...", one per malformed case
};

// The pieces of a trace, each ending with a newline; a file is the header, the cases, and the
// summary, concatenated (the app appends and flushes each as it goes).
std::string write_trace_header(const TraceFields& header);
std::string write_trace_case(const TraceCase& c);
std::string write_trace_summary(const TraceSummary& s);

// Never fails as a whole: what cannot be read is in `errors`.
ParsedTrace read_trace(std::string_view text);

}  // namespace ds4::eval
