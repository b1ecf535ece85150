// tools/quality/vectors.cpp: the official logprob vector format (see vectors.h).
#include "tools/quality/vectors.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ds4::quality {
namespace {

// The line's whitespace-separated fields.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool to_int(std::string_view s, int lo, int hi, int* out) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool to_double(std::string_view s, double* out) {
  const std::string z(s);  // strtod needs a terminator
  char* end = nullptr;
  const double v = std::strtod(z.c_str(), &end);
  if (end != z.c_str() + z.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool unhex(std::string_view h, std::string* out) {
  if (h.empty() || h.size() % 2 != 0 || h.size() / 2 > kMaxTokenBytes) return false;
  out->clear();
  for (size_t i = 0; i < h.size(); i += 2) {
    const int a = hex_digit(h[i]), b = hex_digit(h[i + 1]);
    if (a < 0 || b < 0) return false;
    out->push_back(static_cast<char>(a * 16 + b));
  }
  return true;
}

}  // namespace

Result<std::vector<VectorCase>> parse_vectors(std::string_view text) {
  std::vector<VectorCase> cases;
  VectorCase* open = nullptr;  // the case being read
  int steps = 0, tops = 0;     // what it still expects: step lines, then top lines of the step
  size_t at = 0;
  int n = 0;
  const auto bad = [&n](const char* what) {
    return Status::invalid_file("vectors line %d: %s", n, what);
  };
  while (at <= text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++n;
    const std::vector<std::string_view> f = fields(line);
    if (f.empty() || f[0].starts_with("#")) {
      if (end == text.size()) break;
      continue;
    }
    if (f[0] == "case") {
      if (open != nullptr) return bad("a case before the last one's 'end'");
      if (f.size() != 5) return bad("expected 'case ID CTX STEPS PROMPT_FILE'");
      VectorCase c;
      c.id = std::string(f[1]);
      if (!to_int(f[2], 1, 1 << 30, &c.ctx)) return bad("CTX is not a positive integer");
      if (!to_int(f[3], 0, kMaxSteps, &steps)) return bad("STEPS is not an integer in 0..65536");
      c.prompt_file = std::string(f[4]);
      cases.push_back(std::move(c));
      open = &cases.back();
      tops = 0;
    } else if (f[0] == "step") {
      if (open == nullptr) return bad("a step outside a case");
      if (tops > 0) return bad("a step before the last step's top lines");
      if (steps == 0) return bad("more steps than the case's STEPS");
      int index = 0;
      if (f.size() != 4) return bad("expected 'step INDEX SELECTED_HEX TOPN'");
      if (!to_int(f[1], 0, kMaxSteps, &index) || index != static_cast<int>(open->steps.size()))
        return bad("step INDEX out of order");
      VectorStep s;
      if (!unhex(f[2], &s.selected)) return bad("SELECTED_HEX is not hex bytes (1-256)");
      if (!to_int(f[3], 1, kMaxTop, &tops)) return bad("TOPN is not an integer in 1..1024");
      open->steps.push_back(std::move(s));
      --steps;
    } else if (f[0] == "top") {
      if (open == nullptr || tops == 0) return bad("a top line beyond its step's TOPN");
      if (f.size() != 3) return bad("expected 'top TOKEN_HEX LOGPROB'");
      std::pair<std::string, double> t;
      if (!unhex(f[1], &t.first)) return bad("TOKEN_HEX is not hex bytes (1-256)");
      if (!to_double(f[2], &t.second) || t.second > 0) return bad("LOGPROB is not a logprob <= 0");
      open->steps.back().top.push_back(std::move(t));
      --tops;
    } else if (f[0] == "end") {
      if (open == nullptr) return bad("an 'end' outside a case");
      if (steps > 0 || tops > 0) return bad("'end' before the case's steps and top lines");
      open = nullptr;
    } else {
      return bad("unknown line (expected case, step, top or end)");
    }
    if (end == text.size()) break;
  }
  if (open != nullptr)
    return Status::invalid_file("vectors: case '%s' has no 'end'", open->id.c_str());
  if (cases.empty()) return Status::invalid_file("vectors: no case");
  return cases;
}

std::string write_vectors(const std::vector<VectorCase>& cases) {
  std::string out =
      "# ds4-official-logprob-vectors-v1\n# case <id> <ctx> <steps> <prompt-file>\n"
      "# step <index> <selected-hex> <top-count>\n# top <token-hex> <official-logprob>\n";
  char buf[64];
  for (const VectorCase& c : cases) {
    out += "\ncase " + c.id + " " + std::to_string(c.ctx) + " " + std::to_string(c.steps.size()) +
           " " + c.prompt_file + "\n";
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const VectorStep& s = c.steps[i];
      out += "step " + std::to_string(i) + " " + to_hex(s.selected) + " " +
             std::to_string(s.top.size()) + "\n";
      for (const auto& [bytes, lp] : s.top) {
        std::snprintf(buf, sizeof buf, "%.17g", lp);
        out += "top " + to_hex(bytes) + " " + buf + "\n";
      }
    }
    out += "end\n";
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    out.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kDigits[static_cast<unsigned char>(c) & 15]);
  }
  return out;
}

}  // namespace ds4::quality
