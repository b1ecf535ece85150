#include "eval/report.h"

#include <algorithm>
#include <cstdio>

namespace ds4::eval {
namespace {

std::string runtime(double s) {
  char buf[64];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else {
    const int64_t total = static_cast<int64_t>(s + 0.5);
    std::snprintf(buf, sizeof buf, "%lldm%02llds (%.1f s)", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60), s);
  }
  return buf;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string format_report(const std::vector<CaseResult>& cases, double runtime_s) {
  int passed = 0, failed = 0;
  for (const CaseResult& c : cases) {
    passed += c.state == "PASSED";
    failed += c.state == "FAILED";
  }
  std::string out =
      "ds4-eval: " + std::to_string(passed) + "/" + std::to_string(cases.size()) + " passed";
  if (failed > 0) out += ", " + std::to_string(failed) + " failed";
  out += ", runtime " + runtime(std::max(0.0, runtime_s)) + "\n";

  const std::vector<std::string> head = {"#",     "state", "prompt",  "gen",
                                         "total", "given", "correct", "test"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const CaseResult& c : cases) {
    rows.push_back({std::to_string(c.index), c.state, std::to_string(c.prompt_tokens),
                    std::to_string(c.generated_tokens),
                    std::to_string(c.prompt_tokens + c.generated_tokens),
                    c.given.empty() ? "-" : c.given, c.correct, c.key});
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += i + 1 == r.size() ? r[i] : pad(r[i], width[i] + 2);
    }
    out += line + "\n";
  }
  return out;
}

int report_exit_code(const std::vector<CaseResult>& cases) {
  for (const CaseResult& c : cases) {
    if (c.state == "FAILED" || c.state == "ERROR") return 1;
  }
  return 0;
}

}  // namespace ds4::eval
