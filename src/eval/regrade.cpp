#include "eval/regrade.h"

#include "eval/extract.h"

namespace ds4::eval {

RegradeResult regrade(const ParsedTrace& trace, const std::vector<Question>& questions) {
  RegradeResult r;
  r.errors = trace.errors;
  r.parse_errors = static_cast<int>(trace.errors.size());
  for (const TraceCase& c : trace.cases) {
    if (c.status != "PASSED" && c.status != "FAILED") {
      ++r.not_graded;
      continue;
    }
    RegradedCase rc;
    rc.key = c.key();
    rc.old_status = c.status;
    rc.old_picked = c.picked;
    const Question* q = find_question(questions, rc.key);
    if (q == nullptr) {
      rc.unknown = true;
      ++r.unknown;
      r.cases.push_back(std::move(rc));
      continue;
    }
    const Grade g = grade(*q, c.model_output);
    rc.new_status = g.passed ? "PASSED" : "FAILED";
    rc.new_picked = g.picked;
    rc.expected = q->answer;
    rc.changed = rc.new_status != rc.old_status || rc.new_picked != rc.old_picked;
    ++r.regraded;
    (g.passed ? r.passed : r.failed) += 1;
    r.changed += rc.changed;
    r.cases.push_back(std::move(rc));
  }
  return r;
}

std::string format_regrade(const RegradeResult& r) {
  std::string out;
  for (const std::string& e : r.errors) out += "parse error: " + e + "\n";
  for (const RegradedCase& c : r.cases) {
    if (c.unknown) {
      out += c.key + ": unknown case (not in the question set)\n";
    } else if (c.changed) {
      out += c.key + ": trace " + c.old_status + " picked=" + c.old_picked + " -> regrade " +
             c.new_status + " picked=" + c.new_picked + " expected=" + c.expected + "\n";
    }
  }
  out += "regraded " + std::to_string(r.regraded) + " cases: passed " + std::to_string(r.passed) +
         ", failed " + std::to_string(r.failed) + ", changed " + std::to_string(r.changed) +
         ", unknown " + std::to_string(r.unknown) + ", parse_errors " +
         std::to_string(r.parse_errors);
  if (r.not_graded > 0) out += " (" + std::to_string(r.not_graded) + " not graded in the trace)";
  return out + "\n";
}

int regrade_exit_code(const RegradeResult& r) {
  return (r.unknown > 0 || r.parse_errors > 0) ? 1 : 0;
}

}  // namespace ds4::eval
