// src/tui/screen.h: the terminal of ds4-agent's UI (features.md §5.8): output scrolls in an ANSI
// scroll region above a fixed footer (status rows, then the `ds4-agent> ` prompt row).
// Owns: raw mode (termios saved and restored), bracketed paste on/off, the scroll region and its
// resizing when the footer's height changes, the output cursor (saved with ESC 7 after every
// print, so a streamed partial line continues where it stopped after any footer redraw, with its
// colour), the footer drawing (autowrap off, so a row never spills), the window size, and a
// SIGWINCH self-pipe (WinchPipe).
// Does not own: what is printed (the app renders Markdown, thinking, tool calls), the footer's
// wording (footer.h), the editor (line_editor.h), reading input (keys.h), redraw throttling.
//
// Layout with H rows and S status rows: rows 1..H-S-1 are the scroll region, where the output
// cursor goes down with the output and the region scrolls once it is at the bottom (enter()
// starts it on the terminal cursor's row, below the shell's command line); rows H-S..H-1 hold the
// status lines and row H the prompt and the input. The visible cursor rests in the input row
// at the editor's column; print() goes back to the saved output cursor (ESC 8), writes, saves it
// again (ESC 7) and returns to the input row, so the user can type while text streams.
//
// Threading: every method on the UI thread. leave() is idempotent (an atomic flag), writes one
// buffer and restores termios, so an atexit handler may call it after the UI thread has stopped.
#pragma once

#include <signal.h>
#include <termios.h>

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "tui/line_editor.h"

namespace ds4::tui {

class Screen {
 public:
  // Both fds are terminals and TERM is set and not "dumb".
  static bool usable(int in_fd, int out_fd);

  explicit Screen(int in_fd = 0, int out_fd = 1);
  ~Screen();  // leave()
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Raw mode (no echo, no canonical lines, no signals from Ctrl+C/Ctrl+Z, no flow control; output
  // post-processing kept), bracketed paste on, the scroll region above the footer (scrolling the
  // shell's lines up if the cursor is too low), output starting on the cursor's row (expected at
  // column 0, as after the shell's Enter). Fails (nothing changed) when in_fd or out_fd is not a
  // terminal.
  Status enter();

  // Scroll region reset, footer erased, the cursor on the row below the output (where the shell's
  // prompt goes), bracketed paste off, autowrap and cursor on, termios restored. Idempotent.
  void leave();
  bool active() const { return entered_.load(); }

  // Appends text to the scroll region: UTF-8 (invalid bytes shown as U+FFFD), '\n' (a new line;
  // the terminal's ONLCR is not relied on), '\r', '\t' (spaces to the next multiple of 8), SGR
  // colour sequences (ESC [ ... m) and OSC sequences (ESC ] ... BEL or ESC \, e.g. hyperlinks).
  // Other escape sequences and control bytes are dropped: they would move the cursor out of the
  // region. An incomplete UTF-8 character or escape sequence at the end waits for the next call.
  // Before enter() (or after leave()) the text is written as it is.
  void print(std::string_view text);

  // Redraws the footer: `status_lines` (the footer's rows from format_footer; at most H-3 are
  // shown), then the prompt row `prompt` + input.visible, each clipped to the width; the cursor
  // ends in the input row at the prompt's width + input.column. The region shrinks or grows when
  // the number of status lines changes: rows taken from the region scroll the output up only as
  // far as needed to keep the output cursor's line in it; rows given back are cleared and filled
  // by later output. The streamed partial line keeps its text and colour. Remembered for resize()
  // and clear().
  void set_footer(std::vector<std::string> status_lines, std::string_view prompt,
                  const LineEditor::View& input);

  void bell();

  // Re-reads the window size (after SIGWINCH), sets the region again and redraws the footer. The
  // output continues on a fresh line at the region's bottom (after a resize the terminal may have
  // moved or reflowed the partial line).
  void resize();

  // Ctrl+L: clears the whole screen, output continues at the top, footer redrawn.
  void clear();

  int width() const { return width_; }
  int height() const { return height_; }
  // The output cursor's column as tracked (0 after a newline); tests and the app's "is a line
  // open" check.
  int output_column() const { return out_col_; }

 private:
  void read_size();
  int footer_rows_for(size_t status_count) const;
  std::string footer_bytes();  // draws the footer rows (the region already set for footer_rows_)
  void write_out(std::string_view bytes);

  int in_fd_, out_fd_;
  termios saved_{};
  std::atomic<bool> entered_{false};
  int width_ = 80, height_ = 24;
  int footer_rows_ = 1;  // status rows shown + the prompt row
  std::vector<std::string> status_;
  std::string prompt_;
  LineEditor::View input_;
  int input_col_ = 0;        // where the visible cursor rests in the last row (0-based)
  int out_col_ = 0;          // output cursor column; == width_ never persists (see print)
  bool swallow_lf_ = false;  // we wrapped a full line ourselves: a '\n' next is that wrap
  std::string held_;         // an incomplete UTF-8 character or escape sequence from print()
};

// SIGWINCH as a readable fd for the UI's poll loop. The handler writes one byte to a non-blocking
// pipe whose write end is the only global state (one atomic int, as a signal handler needs);
// hence one installed WinchPipe per process at a time (install() fails for a second one).
class WinchPipe {
 public:
  WinchPipe() = default;
  ~WinchPipe();  // restores the previous handler, closes the pipe
  WinchPipe(const WinchPipe&) = delete;
  WinchPipe& operator=(const WinchPipe&) = delete;

  Status install();
  int fd() const { return read_fd_; }  // poll for POLLIN
  bool drain();                        // true when a SIGWINCH came since the last drain

 private:
  int read_fd_ = -1, write_fd_ = -1;
  bool installed_ = false;
  struct sigaction old_ {};
};

}  // namespace ds4::tui
