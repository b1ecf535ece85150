// src/tui/footer.h: the status footer's text (features.md §5.8), as plain strings.
// Owns: the wording and layout of the status line (`ctx <used>/<total> | <state>[ | ⚡ P%]`, the
// prefill bar with its rate and time left, generation, compaction, saving, error, interrupted,
// idle) and of the queued-prompt rows; fitting them to a width (full numbers when they fit,
// compact ones like 32.1k otherwise, then clipping).
// Does not own: colour (the strings carry no escapes), when to redraw, drawing (screen.h).
#pragma once

#include <string>
#include <vector>

namespace ds4::tui {

struct FooterState {
  int ctx_used = 0, ctx_total = 0;
  enum class Phase { kIdle, kPrefill, kGeneration, kCompacting, kSaving, kError, kInterrupted };
  Phase phase = Phase::kIdle;
  // Prefill: `<label> [bar] d/t p% ~Ns left`. label picks one of kPrefillLabels (modulo).
  int prefill_done = 0, prefill_total = 0;
  double prefill_rate = 0;  // tokens/s; 0: unknown (no rate in the bar, no time left)
  int label = 0;
  // Generation: `generation N tokens [❄️] X t/s` (the snowflake when greedy; no rate while 0).
  int generated = 0;
  double gen_rate = 0;
  bool greedy = false;
  int compact_tokens = 0;           // `COMPACTING summary N tokens`
  std::string error;                // `error: <first line>`
  int power = 100;                  // ` | ⚡ P%` when below 100
  std::vector<std::string> queued;  // the first 3 get a row each
};

inline constexpr const char* kPrefillLabels[] = {"reading",   "absorbing", "studying",
                                                 "gathering", "crunching", "scrutinizing"};
inline constexpr int kPrefillBarCells = 32;

// The status line, then one row per queued prompt (at most 3):
// `queued: <first line> (ctrl+x to edit, ESC to send ASAP)`, the prompt clipped with "…" so the
// hint stays when the width allows. Every row is at most `width` display columns.
std::vector<std::string> format_footer(const FooterState& s, int width);

// Pieces, exposed for tests and for the app's own messages.
std::string format_count(long long n);  // compact: 999, 9999, 12.3k, 123k, 1.2M, 12M (truncated)
std::string format_rate(double tokens_per_second);          // "1234 t/s", "45.6 t/s", "3.50 t/s"
std::string format_duration(double seconds);                // "42s", "3m05s", "1h02m"
std::string prefill_bar(int done, int total, double rate);  // the 32 cells, without brackets

}  // namespace ds4::tui
