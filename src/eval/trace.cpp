#include "eval/trace.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace ds4::eval {
namespace {

constexpr std::string_view kCasePrefix = "===== CASE ";
constexpr std::string_view kSummaryLine = "===== SUMMARY =====";
constexpr std::string_view kBarSuffix = " =====";
constexpr const char* kBlocks[] = {"SYSTEM_PROMPT", "QUESTION_PROMPT", "MODEL_OUTPUT"};

std::string one_line(std::string_view v) {
  std::string s(v);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

void field(std::string* out, std::string_view key, std::string_view value) {
  *out += key;
  *out += ": ";
  *out += one_line(value);
  *out += '\n';
}

void block(std::string* out, std::string_view name, std::string_view bytes) {
  *out += name;
  *out += "_BEGIN bytes=" + std::to_string(bytes.size()) + "\n";
  *out += bytes;
  *out += "\n";
  *out += name;
  *out += "_END\n";
}

bool valid_key(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool parse_int(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
}

// A `key: value` line (the space after ':' is optional).
bool split_field(std::string_view line, std::string_view* key, std::string_view* value) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !valid_key(line.substr(0, colon))) return false;
  *key = line.substr(0, colon);
  *value = line.substr(colon + 1);
  if (!value->empty() && value->front() == ' ') value->remove_prefix(1);
  return true;
}

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  ParsedTrace read() {
    std::string_view line;
    if (!next(&line) || line != kTraceMagic) {
      error(1, "not a ds4-eval trace (the first line is not \"# ds4-eval trace\")");
      return std::move(out_);
    }
    while (peek(&line) && !line.empty() && !line.starts_with("===== ")) {
      next(&line);
      std::string_view k, v;
      if (line.starts_with("#")) continue;
      if (!split_field(line, &k, &v)) {
        error(line_no_, "header line is not \"key: value\"");
        continue;
      }
      out_.header.emplace_back(std::string(k), std::string(v));
    }
    while (next(&line)) {
      if (line.empty()) continue;
      const size_t at = line_no_;
      if (line.starts_with(kCasePrefix)) {
        TraceCase c;
        std::string why;
        if (read_case(line, &c, &why)) {
          out_.cases.push_back(std::move(c));
        } else {
          error(err_line_ ? err_line_ : at, why);
          resync();
        }
      } else if (line == kSummaryLine) {
        std::string why;
        if (!read_summary(&why)) {
          error(err_line_, why);
          resync();
        }
      } else {
        error(at, "expected \"===== CASE i/N source/id =====\" or the summary");
        resync();
      }
    }
    return std::move(out_);
  }

 private:
  bool peek(std::string_view* line) const {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(pos_, end - pos_);
    return true;
  }
  bool next(std::string_view* line) {
    if (!peek(line)) return false;
    pos_ = std::min(text_.size(), pos_ + line->size() + 1);
    ++line_no_;
    return true;
  }
  void error(size_t line, const std::string& what) {
    out_.errors.push_back("trace line " + std::to_string(line) + ": " + what);
  }
  // Skips to the next case or summary line.
  void resync() {
    std::string_view line;
    while (peek(&line) && !line.starts_with(kCasePrefix) && line != kSummaryLine) next(&line);
  }
  bool fail(std::string* why, std::string what) {
    err_line_ = line_no_;
    *why = std::move(what);
    return false;
  }

  bool read_block(const char* name, std::string* bytes, std::string* why) {
    std::string_view line;
    const std::string begin = std::string(name) + "_BEGIN bytes=";
    if (!next(&line)) return fail(why, "trace ends before " + std::string(name) + "_BEGIN");
    int64_t n = 0;
    if (!line.starts_with(begin) || !parse_int(line.substr(begin.size()), &n)) {
      return fail(why, "expected \"" + begin + "N\"");
    }
    const std::string end = "\n" + std::string(name) + "_END";
    if (static_cast<uint64_t>(n) > kMaxTraceBlockBytes ||
        static_cast<uint64_t>(n) > text_.size() - pos_) {
      return fail(why, std::string(name) + " block of " + std::to_string(n) +
                           " bytes runs past the end of the trace");
    }
    const std::string_view tail = text_.substr(pos_ + n);
    if (!tail.starts_with(end) || (tail.size() > end.size() && tail[end.size()] != '\n')) {
      return fail(why, std::string(name) + " block of " + std::to_string(n) +
                           " bytes is not followed by " + std::string(name) + "_END");
    }
    const std::string_view content = text_.substr(pos_, n);
    bytes->assign(content);
    for (char c : content) line_no_ += c == '\n';
    pos_ += n + 1;  // the content and the newline before the _END line
    ++line_no_;     // the content's last line
    next(&line);
    return true;
  }

  bool read_case(std::string_view head, TraceCase* c, std::string* why) {
    err_line_ = 0;
    // "===== CASE i/N source/id ====="
    std::string_view rest = head.substr(kCasePrefix.size());
    if (!rest.ends_with(kBarSuffix)) return fail(why, "case line does not end with \" =====\"");
    rest.remove_suffix(kBarSuffix.size());
    const size_t sp = rest.find(' ');
    const size_t slash = rest.find('/');
    int64_t i = 0, n = 0;
    if (sp == std::string_view::npos || slash > sp || !parse_int(rest.substr(0, slash), &i) ||
        !parse_int(rest.substr(slash + 1, sp - slash - 1), &n) || i > 1000000000 ||
        n > 1000000000) {
      return fail(why, "case line does not start with \"i/N\"");
    }
    c->index = static_cast<int>(i);
    c->total = static_cast<int>(n);
    const std::string_view key = rest.substr(sp + 1);
    std::string_view line;
    bool seen[9] = {};
    static constexpr const char* kFixed[] = {
        "source", "id",       "domain",        "title",           "status",
        "picked", "expected", "prompt_tokens", "generated_tokens"};
    while (peek(&line) && !line.starts_with(kBlocks[0])) {
      next(&line);
      std::string_view k, v;
      if (!split_field(line, &k, &v)) return fail(why, "case field is not \"key: value\"");
      int fixed = -1;
      for (int f = 0; f < 9; ++f) {
        if (k == kFixed[f]) fixed = f;
      }
      if (k == "elapsed_ms") fixed = 9;
      if (fixed >= 0 && fixed < 9 && seen[fixed]) return fail(why, "field repeated");
      if (fixed >= 0 && fixed < 9) seen[fixed] = true;
      std::string* s[] = {&c->source, &c->id,     &c->domain,  &c->title,
                          &c->status, &c->picked, &c->expected};
      if (fixed >= 0 && fixed < 7) {
        s[fixed]->assign(v);
      } else if (fixed == 7 || fixed == 8 || fixed == 9) {
        int64_t* num[] = {&c->prompt_tokens, &c->generated_tokens, &c->elapsed_ms};
        if (!parse_int(v, num[fixed - 7])) {
          return fail(why, std::string(k) + " is not a non-negative integer");
        }
      } else {
        c->extra.emplace_back(std::string(k), std::string(v));
      }
    }
    if (!seen[0] || !seen[1] || !seen[4]) return fail(why, "case lacks source, id or status");
    if (c->key() != key)
      return fail(why, "case line names " + std::string(key) + ", fields " + c->key());
    std::string* blocks[] = {&c->system_prompt, &c->question_prompt, &c->model_output};
    for (int b = 0; b < 3; ++b) {
      if (!read_block(kBlocks[b], blocks[b], why)) return false;
    }
    return true;
  }

  bool read_summary(std::string* why) {
    err_line_ = line_no_;
    TraceSummary s;
    bool seen[3] = {};
    std::string_view line;
    while (peek(&line) && !line.empty() && !line.starts_with("===== ")) {
      next(&line);
      std::string_view k, v;
      int f = -1;
      if (split_field(line, &k, &v))
        f = k == "passed" ? 0 : k == "failed" ? 1 : k == "total" ? 2 : -1;
      int64_t* dst[] = {&s.passed, &s.failed, &s.total};
      if (f < 0 || !parse_int(v, dst[f])) {
        return fail(why, "summary line is not passed/failed/total: N");
      }
      seen[f] = true;
    }
    if (!seen[0] || !seen[1] || !seen[2]) return fail(why, "summary lacks passed, failed or total");
    out_.summary = s;
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t line_no_ = 0;
  size_t err_line_ = 0;
  ParsedTrace out_;
};

}  // namespace

std::string write_trace_header(const TraceFields& header) {
  std::string out(kTraceMagic);
  out += '\n';
  for (const auto& [k, v] : header) field(&out, k, v);
  return out;
}

std::string write_trace_case(const TraceCase& c) {
  std::string out = "\n";
  out.append(kCasePrefix).append(std::to_string(c.index)).append("/");
  out.append(std::to_string(c.total)).append(" ").append(one_line(c.key()));
  out.append(kBarSuffix).append("\n");
  field(&out, "source", c.source);
  field(&out, "id", c.id);
  field(&out, "domain", c.domain);
  field(&out, "title", c.title);
  field(&out, "status", c.status);
  field(&out, "picked", c.picked);
  field(&out, "expected", c.expected);
  field(&out, "prompt_tokens", std::to_string(c.prompt_tokens));
  field(&out, "generated_tokens", std::to_string(c.generated_tokens));
  field(&out, "elapsed_ms", std::to_string(c.elapsed_ms));
  for (const auto& [k, v] : c.extra) field(&out, k, v);
  block(&out, kBlocks[0], c.system_prompt);
  block(&out, kBlocks[1], c.question_prompt);
  block(&out, kBlocks[2], c.model_output);
  return out;
}

std::string write_trace_summary(const TraceSummary& s) {
  std::string out = "\n";
  out.append(kSummaryLine).append("\n");
  field(&out, "passed", std::to_string(s.passed));
  field(&out, "failed", std::to_string(s.failed));
  field(&out, "total", std::to_string(s.total));
  return out;
}

ParsedTrace read_trace(std::string_view text) { return Reader(text).read(); }

}  // namespace ds4::eval
