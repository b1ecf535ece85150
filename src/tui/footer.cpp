// src/tui/footer.cpp: the status footer's text (see footer.h).
#include "tui/footer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tui/width.h"

namespace ds4::tui {
namespace {

constexpr std::string_view kFilled = "\xe2\x96\xb6";                 // ▶
constexpr std::string_view kUnfilled = "\xc2\xb7";                   // ·
constexpr std::string_view kSnowflake = "\xe2\x9d\x84\xef\xb8\x8f";  // ❄️
constexpr std::string_view kPower = "\xe2\x9a\xa1";                  // ⚡
constexpr std::string_view kEllipsis = "\xe2\x80\xa6";               // …
constexpr std::string_view kQueuedPrefix = "queued: ";
constexpr std::string_view kQueuedHint = " (ctrl+x to edit, ESC to send ASAP)";

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string number(long long n, bool compact) {
  return compact ? format_count(n) : std::to_string(n);
}

// The first line of `text` with tabs as spaces and other control characters dropped; *more is
// set when lines follow.
std::string first_line(std::string_view text, bool* more) {
  const size_t nl = text.find('\n');
  *more = nl != std::string_view::npos && nl + 1 < text.size();
  std::string out;
  for (char c : text.substr(0, nl)) {
    if (c == '\t') {
      out += ' ';
    } else if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7F) {
      out += c;
    }
  }
  return out;
}

std::string state_text(const FooterState& s, bool compact, bool eta) {
  using Phase = FooterState::Phase;
  switch (s.phase) {
    case Phase::kIdle: return "idle";
    case Phase::kPrefill: {
      const int n = static_cast<int>(std::size(kPrefillLabels));
      std::string out = kPrefillLabels[((s.label % n) + n) % n];
      out += " [" + prefill_bar(s.prefill_done, s.prefill_total, s.prefill_rate) + "] ";
      out += number(s.prefill_done, compact) + "/" + number(s.prefill_total, compact) + " ";
      const long long pct = s.prefill_total > 0
                                ? std::clamp(100LL * s.prefill_done / s.prefill_total, 0LL, 100LL)
                                : 0;
      out += std::to_string(pct) + "%";
      if (eta && s.prefill_rate > 0 && s.prefill_done < s.prefill_total) {
        out +=
            " ~" + format_duration((s.prefill_total - s.prefill_done) / s.prefill_rate) + " left";
      }
      return out;
    }
    case Phase::kGeneration: {
      std::string out = "generation " + number(s.generated, compact) + " tokens";
      if (s.greedy) out += " " + std::string(kSnowflake);
      if (s.gen_rate > 0) out += " " + format_rate(s.gen_rate);
      return out;
    }
    case Phase::kCompacting:
      return "COMPACTING summary " + number(s.compact_tokens, compact) + " tokens";
    case Phase::kSaving: return "saving session";
    case Phase::kError: {
      bool more = false;
      return "error: " + first_line(s.error, &more);
    }
    case Phase::kInterrupted: return "interrupted";
  }
  return "";
}

std::string status_line(const FooterState& s, bool compact, bool eta) {
  std::string out = "ctx " + number(s.ctx_used, compact) + "/" + number(s.ctx_total, compact);
  out += " | " + state_text(s, compact, eta);
  if (s.power < 100) out += " | " + std::string(kPower) + " " + std::to_string(s.power) + "%";
  return out;
}

std::string queued_row(std::string_view prompt, int width) {
  bool more = false;
  std::string text = first_line(prompt, &more);
  const int room = width - display_width(kQueuedPrefix) - display_width(kQueuedHint);
  if (room < 8) return clip_to_width(std::string(kQueuedPrefix) + text, width);
  if (display_width(text) > room || (more && display_width(text) + 1 > room)) {
    text = clip_to_width(text, room - 1);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    text += kEllipsis;
  } else if (more) {
    text += kEllipsis;
  }
  return std::string(kQueuedPrefix) + text + std::string(kQueuedHint);
}

}  // namespace

std::string format_count(long long n) {
  char buf[32];
  const long long a = n < 0 ? -n : n;
  const char* sign = n < 0 ? "-" : "";
  if (a < 10000) {
    std::snprintf(buf, sizeof buf, "%s%lld", sign, a);
  } else if (a < 100000) {
    const long long tenths = a / 100;  // truncated to 0.1k
    if (tenths % 10 == 0) {
      std::snprintf(buf, sizeof buf, "%s%lldk", sign, tenths / 10);
    } else {
      std::snprintf(buf, sizeof buf, "%s%lld.%lldk", sign, tenths / 10, tenths % 10);
    }
  } else if (a < 1000000) {
    std::snprintf(buf, sizeof buf, "%s%lldk", sign, a / 1000);
  } else if (a < 10000000) {
    const long long tenths = a / 100000;
    if (tenths % 10 == 0) {
      std::snprintf(buf, sizeof buf, "%s%lldM", sign, tenths / 10);
    } else {
      std::snprintf(buf, sizeof buf, "%s%lld.%lldM", sign, tenths / 10, tenths % 10);
    }
  } else {
    std::snprintf(buf, sizeof buf, "%s%lldM", sign, a / 1000000);
  }
  return buf;
}

std::string format_rate(double r) {
  char buf[48];
  if (!(r > 0) || !std::isfinite(r)) r = 0;
  if (r >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f t/s", std::min(r, 1e12));
  } else if (r >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f t/s", r);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f t/s", r);
  }
  return buf;
}

std::string format_duration(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) seconds = 0;
  const long long s = static_cast<long long>(std::ceil(std::min(seconds, 1e9)));
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

std::string prefill_bar(int done, int total, double rate) {
  int filled = 0;
  if (total > 0 && done > 0) {
    filled = static_cast<int>(std::min<long long>(
        kPrefillBarCells, static_cast<long long>(done) * kPrefillBarCells / total));
  }
  const int unfilled = kPrefillBarCells - filled;
  std::string bar = repeat(kFilled, filled);
  if (rate > 0) {
    const std::string label = " " + format_rate(rate) + " ";
    const int w = display_width(label);
    if (unfilled >= w + 2) {  // at least one · on each side
      return bar + repeat(kUnfilled, unfilled - w - 1) + label + std::string(kUnfilled);
    }
  }
  return bar + repeat(kUnfilled, unfilled);
}

std::vector<std::string> format_footer(const FooterState& s, int width) {
  width = std::max(width, 0);
  std::vector<std::string> rows;
  // Full numbers when they fit, then compact ones, then without the prefill's time left.
  std::string line = status_line(s, false, true);
  if (display_width(line) > width) line = status_line(s, true, true);
  if (display_width(line) > width) line = status_line(s, true, false);
  rows.push_back(clip_to_width(line, width));
  const size_t n = std::min<size_t>(3, s.queued.size());
  for (size_t i = 0; i < n; ++i)
    rows.push_back(clip_to_width(queued_row(s.queued[i], width), width));
  return rows;
}

}  // namespace ds4::tui
