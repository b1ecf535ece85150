// src/tui/screen.cpp: the terminal of ds4-agent's UI (see screen.h).
#include "tui/screen.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/utf8.h"
#include "tui/width.h"

namespace ds4::tui {
namespace {

// ESC 7 / ESC 8 (DECSC / DECRC: position and attributes), ESC D (IND: down one row, scrolling at
// the region's bottom). Octal escapes: "\x1b7" would read as one hex escape.
constexpr std::string_view kSaveCursor = "\0337";
constexpr std::string_view kRestoreCursor = "\0338";
constexpr std::string_view kIndex = "\033D";
constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kEraseLine = "\x1b[2K";
constexpr std::string_view kEraseBelow = "\x1b[J";
constexpr std::string_view kHideCursor = "\x1b[?25l";
constexpr std::string_view kShowCursor = "\x1b[?25h";
constexpr std::string_view kWrapOff = "\x1b[?7l";
constexpr std::string_view kWrapOn = "\x1b[?7h";
constexpr std::string_view kPasteOn = "\x1b[?2004h";
constexpr std::string_view kPasteOff = "\x1b[?2004l";
constexpr std::string_view kResetRegion = "\x1b[r";
constexpr size_t kMaxHeld = 4096;  // an "escape sequence" longer than this is dropped

std::string csi(int n, char final) { return "\x1b[" + std::to_string(n) + final; }
std::string move_to(int row, int col) {  // 1-based
  return "\x1b[" + std::to_string(row) + ";" + std::to_string(col) + "H";
}
std::string region(int top, int bottom) {
  return "\x1b[" + std::to_string(top) + ";" + std::to_string(bottom) + "r";
}
std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Writes everything, retrying on EINTR and waiting when the fd is non-blocking and full.
void write_fd(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      (void)::poll(&p, 1, 100);
    } else {
      return;  // the terminal is gone: nothing useful to do
    }
  }
}

// Length of the escape sequence at s[i] (s[i] == ESC): *kind is 'm' for SGR, ']' for OSC, 0 for
// one to drop. Returns 0 when the sequence is incomplete.
size_t escape_length(std::string_view s, size_t i, char* kind) {
  *kind = 0;
  if (i + 1 >= s.size()) return 0;
  const char c1 = s[i + 1];
  if (c1 == '[') {
    for (size_t j = i + 2; j < s.size(); ++j) {
      const auto b = static_cast<unsigned char>(s[j]);
      if (b >= 0x40 && b <= 0x7E) {
        if (b == 'm') *kind = 'm';
        return j + 1 - i;
      }
      if (b < 0x20 || b > 0x3F) return j - i;  // malformed: drop up to the stray byte
    }
    return 0;
  }
  if (c1 == ']') {
    for (size_t j = i + 2; j < s.size(); ++j) {
      if (s[j] == '\a') {
        *kind = ']';
        return j + 1 - i;
      }
      if (s[j] == '\x1b') {
        if (j + 1 >= s.size()) return 0;
        if (s[j + 1] == '\\') *kind = ']';
        return j + (s[j + 1] == '\\' ? 2 : 0) - i;
      }
    }
    return 0;
  }
  return 2;  // ESC + one byte (ESC 7, ESC 8, ESC c...): dropped
}

std::atomic<int> g_winch_fd{-1};  // the write end of the installed WinchPipe

extern "C" void on_winch(int) {
  const int saved = errno;
  const int fd = g_winch_fd.load();
  if (fd >= 0) {
    const char b = 'w';
    (void)!::write(fd, &b, 1);
  }
  errno = saved;
}

}  // namespace

bool Screen::usable(int in_fd, int out_fd) {
  if (::isatty(in_fd) != 1 || ::isatty(out_fd) != 1) return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && term[0] != '\0' && std::strcmp(term, "dumb") != 0;
}

Screen::Screen(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) { read_size(); }

Screen::~Screen() { leave(); }

void Screen::read_size() {
  winsize ws{};
  if (::ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    width_ = ws.ws_col;
    height_ = ws.ws_row;
  }
}

int Screen::footer_rows_for(size_t status_count) const {
  const size_t room = height_ > 3 ? static_cast<size_t>(height_ - 3) : 0;
  return static_cast<int>(std::min(status_count, room)) + 1;
}

void Screen::write_out(std::string_view bytes) { write_fd(out_fd_, bytes); }

Status Screen::enter() {
  if (entered_.load()) return Status::ok();
  if (::isatty(in_fd_) != 1 || ::isatty(out_fd_) != 1) {
    return Status::unavailable("the terminal UI needs a terminal on stdin and stdout");
  }
  if (::tcgetattr(in_fd_, &saved_) != 0) {
    return Status::io_error("tcgetattr: %s", std::strerror(errno));
  }
  termios raw = saved_;
  raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
  raw.c_oflag |= OPOST | ONLCR;
  raw.c_cflag |= CS8;
  raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (::tcsetattr(in_fd_, TCSADRAIN, &raw) != 0) {
    return Status::io_error("tcsetattr: %s", std::strerror(errno));
  }
  entered_.store(true);
  read_size();
  footer_rows_ = footer_rows_for(status_.size());
  const int bottom = height_ - footer_rows_;
  out_col_ = 0;
  swallow_lf_ = false;
  held_.clear();
  // Make room for the footer below the cursor (index k times, scrolling the shell's lines up only
  // when the cursor is within k rows of the bottom, then back up k): output then starts on the
  // cursor's row, right below the shell's command line.
  std::string s = "\r" + repeat(kIndex, footer_rows_) + csi(footer_rows_, 'A');
  s += kSaveCursor;
  s += kPasteOn;
  s += region(1, bottom);  // (homes the cursor)
  s += kRestoreCursor;
  s += kSaveCursor;
  s += footer_bytes();
  write_out(s);
  return Status::ok();
}

void Screen::leave() {
  if (!entered_.exchange(false)) return;
  std::string s(kRestoreCursor);
  s += kReset;
  s += kResetRegion;  // (homes the cursor, hence the restore after it)
  s += kRestoreCursor;
  s += out_col_ > 0 ? "\r\n" : "\r";
  s += kReset;
  s += kEraseBelow;
  s += kPasteOff;
  s += kWrapOn;
  s += kShowCursor;
  write_out(s);
  (void)::tcsetattr(in_fd_, TCSADRAIN, &saved_);
}

void Screen::print(std::string_view text) {
  if (!entered_.load()) {
    write_out(text);
    return;
  }
  std::string data = std::move(held_);
  held_.clear();
  data.append(text);
  std::string s(kRestoreCursor);
  auto put_char = [&](std::string_view bytes, int w) {
    if (w > 0) {
      out_col_ = out_col_ + w > width_ ? w : out_col_ + w;
      swallow_lf_ = false;
    }
    s += bytes;
  };
  for (size_t i = 0; i < data.size();) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c == 0x1B) {
      char kind = 0;
      const size_t n = escape_length(data, i, &kind);
      if (n == 0) {  // incomplete: keep it for the next call, unless it is absurdly long
        if (data.size() - i <= kMaxHeld) held_ = data.substr(i);
        break;
      }
      if (kind != 0) s.append(data, i, n);
      i += n;
    } else if (c == '\n') {
      if (!swallow_lf_) s += "\r\n";
      swallow_lf_ = false;
      out_col_ = 0;
      ++i;
    } else if (c == '\r') {
      s += '\r';
      out_col_ = 0;
      ++i;
    } else if (c == '\t') {
      const int n = 8 - (out_col_ >= width_ ? 0 : out_col_ % 8);
      for (int k = 0; k < n; ++k) put_char(" ", 1);
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      ++i;  // other controls: dropped
    } else {
      uint32_t cp = 0;
      size_t n = base::decode_utf8(data, i, &cp);
      if (n == 0) {
        // An incomplete character at the end waits; anything else invalid shows as U+FFFD.
        const size_t left = data.size() - i;
        if (left < 4 && c >= 0xC2 && c <= 0xF4 &&
            std::all_of(data.begin() + static_cast<long>(i) + 1, data.end(),
                        [](char b) { return (static_cast<unsigned char>(b) & 0xC0) == 0x80; })) {
          held_ = data.substr(i);
          break;
        }
        put_char("\xef\xbf\xbd", 1);
        ++i;
        continue;
      }
      if (cp >= 0x80 && cp < 0xA0) {  // C1 controls
        i += n;
        continue;
      }
      put_char(std::string_view(data).substr(i, n), char_width(cp));
      i += n;
    }
  }
  if (out_col_ >= width_) {
    // The terminal sits in its pending-wrap state, which ESC 7 / ESC 8 do not reliably keep:
    // wrap now, and take a '\n' that comes next as this wrap.
    s += "\r\n";
    out_col_ = 0;
    swallow_lf_ = true;
  }
  s += kSaveCursor;
  s += move_to(height_, input_col_ + 1);
  write_out(s);
}

std::string Screen::footer_bytes() {
  std::string s(kHideCursor);
  const int bottom = height_ - footer_rows_;
  s += kWrapOff;
  const int shown = footer_rows_ - 1;
  for (int i = 0; i < shown; ++i) {
    s += move_to(bottom + 1 + i, 1);
    s += kReset;
    s += kEraseLine;
    s += clip_to_width(status_[static_cast<size_t>(i)], width_);
    s += kReset;
  }
  s += move_to(height_, 1);
  s += kReset;
  s += kEraseLine;
  const std::string prompt = clip_to_width(prompt_, width_);
  const int prompt_width = display_width(prompt);
  s += prompt;
  s += kReset;
  s += clip_to_width(input_.visible, width_ - prompt_width);
  s += kWrapOn;
  input_col_ = std::clamp(prompt_width + input_.column, 0, std::max(0, width_ - 1));
  s += move_to(height_, input_col_ + 1);
  s += kShowCursor;
  return s;
}

void Screen::set_footer(std::vector<std::string> status_lines, std::string_view prompt,
                        const LineEditor::View& input) {
  status_ = std::move(status_lines);
  prompt_ = prompt;
  input_ = input;
  if (!entered_.load()) return;
  const int rows = footer_rows_for(status_.size());
  std::string s;
  if (rows > footer_rows_) {
    // The region loses its bottom k rows. Index k times from the output cursor and go back up k:
    // wherever the cursor is in the region, its line ends up at most at the new bottom, scrolling
    // the output up only as much as needed.
    const int k = rows - footer_rows_;
    s += kHideCursor;
    s += kRestoreCursor;
    s += repeat(kIndex, k);
    s += csi(k, 'A');
    s += kSaveCursor;
    s += region(1, height_ - rows);
  } else if (rows < footer_rows_) {
    // The region gains k rows below the output: clear them; the output cursor stays where it is
    // and its later lines fill them before the region scrolls.
    const int old_bottom = height_ - footer_rows_;
    s += kHideCursor;
    s += region(1, height_ - rows);
    for (int r = old_bottom + 1; r <= height_ - rows; ++r) {
      s += move_to(r, 1) + std::string(kEraseLine);
    }
  }
  footer_rows_ = rows;
  s += footer_bytes();
  write_out(s);
}

void Screen::bell() { write_out("\a"); }

void Screen::resize() {
  read_size();
  if (!entered_.load()) return;
  footer_rows_ = footer_rows_for(status_.size());
  const int bottom = height_ - footer_rows_;
  std::string s(kHideCursor);
  s += kRestoreCursor;  // for the output's colour; the position is set below
  s += region(1, bottom);
  s += move_to(bottom + 1, 1);
  s += kEraseBelow;
  s += move_to(bottom, 1);
  if (out_col_ > 0) s += kIndex;  // a fresh line for the rest of the partial one
  s += kSaveCursor;
  out_col_ = 0;
  swallow_lf_ = false;
  s += footer_bytes();
  write_out(s);
}

void Screen::clear() {
  if (!entered_.load()) return;
  footer_rows_ = footer_rows_for(status_.size());
  const int bottom = height_ - footer_rows_;
  std::string s(kHideCursor);
  s += kReset;
  s += "\x1b[2J";
  s += region(1, bottom);  // (homes the cursor: output starts at the top)
  s += kSaveCursor;
  out_col_ = 0;
  swallow_lf_ = false;
  s += footer_bytes();
  write_out(s);
}

// ---- WinchPipe ----

WinchPipe::~WinchPipe() {
  if (installed_) {
    (void)::sigaction(SIGWINCH, &old_, nullptr);
    g_winch_fd.store(-1);
  }
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

Status WinchPipe::install() {
  if (installed_) return Status::ok();
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Status::io_error("pipe2: %s", std::strerror(errno));
  }
  int expected = -1;
  if (!g_winch_fd.compare_exchange_strong(expected, fds[1])) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::unavailable("another WinchPipe is installed");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  struct sigaction sa {};
  sa.sa_handler = on_winch;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(SIGWINCH, &sa, &old_) != 0) {
    g_winch_fd.store(-1);
    return Status::io_error("sigaction: %s", std::strerror(errno));
  }
  installed_ = true;
  return Status::ok();
}

bool WinchPipe::drain() {
  if (read_fd_ < 0) return false;
  bool any = false;
  char buf[64];
  while (::read(read_fd_, buf, sizeof buf) > 0) any = true;
  return any;
}

}  // namespace ds4::tui
