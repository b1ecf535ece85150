#include "eval/baseline.h"

#include <charconv>
#include <cstdio>
#include <map>

namespace ds4::eval {
namespace {

std::string clean(std::string_view s, const char* empty) {
  if (s.empty()) return empty;
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    const size_t tab = line.find('\t', pos);
    out.push_back(line.substr(pos, tab == std::string_view::npos ? tab : tab - pos));
    if (tab == std::string_view::npos) return out;
    pos = tab + 1;
  }
}

std::string signed_delta(int64_t d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+lld", static_cast<long long>(d));
  return buf;
}

}  // namespace

const char* to_string(DriftKind kind) {
  switch (kind) {
    case DriftKind::kStatus: return "status";
    case DriftKind::kAnswer: return "answer";
    case DriftKind::kTokens: return "tokens";
    case DriftKind::kMissing: return "missing";
    case DriftKind::kNew: return "new";
  }
  return "?";
}

std::vector<BaselineEntry> baseline_from_results(const std::vector<CaseResult>& cases) {
  std::vector<BaselineEntry> out;
  for (const CaseResult& c : cases) {
    out.push_back({c.key, c.state, c.given.empty() ? "?" : c.given, c.generated_tokens});
  }
  return out;
}

std::string write_baseline(const std::vector<BaselineEntry>& entries) {
  std::string out(kBaselineMagic);
  out += "\n# key\tstatus\tpicked\tgenerated_tokens\n";
  for (const BaselineEntry& e : entries) {
    out += clean(e.key, "-") + "\t" + clean(e.status, "-") + "\t" + clean(e.picked, "-") + "\t" +
           std::to_string(e.generated_tokens) + "\n";
  }
  return out;
}

Result<std::vector<BaselineEntry>> parse_baseline(std::string_view text) {
  std::vector<BaselineEntry> out;
  std::map<std::string, size_t, std::less<>> seen;
  size_t line_no = 0, pos = 0;
  bool magic = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    auto err = [&](const std::string& what) {
      return Status::invalid_file("baseline line %zu: %s", line_no, what.c_str());
    };
    if (line.size() > kMaxBaselineLineBytes) return err("line too long");
    if (line_no == 1) {
      if (line != kBaselineMagic)
        return err("not a ds4-eval baseline (no \"# ds4-eval baseline v1\")");
      magic = true;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    const auto f = split_tabs(line);
    if (f.size() != 4) return err(std::to_string(f.size()) + " tab-separated fields, expected 4");
    for (const auto& s : f) {
      if (s.empty()) return err("an empty field");
    }
    BaselineEntry e{std::string(f[0]), std::string(f[1]), std::string(f[2]), 0};
    auto [p, ec] = std::from_chars(f[3].data(), f[3].data() + f[3].size(), e.generated_tokens);
    if (ec != std::errc() || p != f[3].data() + f[3].size() || e.generated_tokens < 0) {
      return err("generated_tokens \"" + std::string(f[3]) + "\" is not a count");
    }
    if (!seen.emplace(e.key, line_no).second) return err("duplicate case " + e.key);
    out.push_back(std::move(e));
  }
  if (!magic) return Status::invalid_file("baseline line 1: empty file");
  return out;
}

DriftReport compare_baseline(const std::vector<BaselineEntry>& baseline,
                             const std::vector<BaselineEntry>& run,
                             const BaselineOptions& options) {
  DriftReport r;
  std::map<std::string, const BaselineEntry*, std::less<>> by_key;
  for (const BaselineEntry& e : run) by_key.emplace(e.key, &e);
  std::map<std::string, bool, std::less<>> in_baseline;
  for (const BaselineEntry& b : baseline) {
    in_baseline[b.key] = true;
    auto it = by_key.find(b.key);
    if (it == by_key.end()) {
      r.drifts.push_back({b.key, DriftKind::kMissing, b.status, "", 0});
      continue;
    }
    const BaselineEntry& n = *it->second;
    const int64_t delta = n.generated_tokens - b.generated_tokens;
    if (n.status != b.status)
      r.drifts.push_back({b.key, DriftKind::kStatus, b.status, n.status, delta});
    if (n.picked != b.picked)
      r.drifts.push_back({b.key, DriftKind::kAnswer, b.picked, n.picked, delta});
    if (delta > options.token_tolerance || -delta > options.token_tolerance) {
      r.drifts.push_back({b.key, DriftKind::kTokens, std::to_string(b.generated_tokens),
                          std::to_string(n.generated_tokens), delta});
    }
  }
  for (const BaselineEntry& n : run) {
    if (!in_baseline.count(n.key)) r.drifts.push_back({n.key, DriftKind::kNew, "", n.status, 0});
  }
  r.passed = r.drifts.empty();
  return r;
}

std::string format_drift(const DriftReport& report) {
  std::string out;
  for (const Drift& d : report.drifts) {
    out += d.key + ": ";
    switch (d.kind) {
      case DriftKind::kMissing: out += "in the baseline (" + d.was + "), not in this run"; break;
      case DriftKind::kNew: out += "not in the baseline (" + d.now + " in this run)"; break;
      case DriftKind::kTokens:
        out += "tokens " + d.was + " -> " + d.now + " (" + signed_delta(d.token_delta) + ")";
        break;
      default:
        out += std::string(to_string(d.kind)) + " " + d.was + " -> " + d.now + " (tokens " +
               signed_delta(d.token_delta) + ")";
        break;
    }
    out += "\n";
  }
  out += report.passed
             ? "baseline: no drift\n"
             : "baseline: DRIFT in " + std::to_string(report.drifts.size()) + " item(s)\n";
  return out;
}

}  // namespace ds4::eval
