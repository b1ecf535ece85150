// Protects: the terminal layout of ds4-agent (features.md §5.8): the scroll region above a fixed
// footer, output that streams in partial lines and keeps its place and colour across footer
// redraws and footer height changes, raw mode restored by leave(). The Screen writes to a real
// pseudo-terminal; a small VT emulator below (the subset the Screen uses) replays what it wrote.
#include "tui/screen.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "tui/width.h"

namespace ds4::tui {
namespace {

// A VT100/xterm subset: CUP, CUU/CUD, EL, ED, DECSTBM, IND/RI, DECSC/DECRC (position and SGR),
// SGR (remembered per cell as its parameter string), DECAWM with the pending-wrap state.
class Vt {
 public:
  Vt(int rows, int cols) { resize(rows, cols); }

  void resize(int rows, int cols) {
    rows_ = rows, cols_ = cols;
    cells_.assign(static_cast<size_t>(rows), std::vector<Cell>(static_cast<size_t>(cols)));
    top_ = 0, bottom_ = rows - 1;
    row_ = std::min(row_, rows - 1), col_ = std::min(col_, cols - 1);
  }

  void feed(std::string_view s) {
    for (size_t i = 0; i < s.size();) i += step(s, i);
  }

  std::string row(int r) const {
    std::string out;
    for (const Cell& c : cells_[static_cast<size_t>(r)]) out += c.text;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
  std::string attr_at(int r, int c) const {
    return cells_[static_cast<size_t>(r)][static_cast<size_t>(c)].attr;
  }
  int cursor_row() const { return row_; }
  int cursor_col() const { return col_; }
  int region_bottom() const { return bottom_; }
  int bells = 0;

 private:
  struct Cell {
    std::string text = " ";
    std::string attr;
  };

  size_t step(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1B) return escape(s, i);
    if (c == '\r') {
      col_ = 0, wrap_ = false;
    } else if (c == '\n') {
      index();
    } else if (c == '\a') {
      ++bells;
    } else if (c >= 0x20) {
      uint32_t cp = 0;
      const size_t n = next_char(s, i, &cp);
      put(s.substr(i, n), char_width(cp));
      return n;
    }
    return 1;
  }

  size_t escape(std::string_view s, size_t i) {
    const char c1 = s[i + 1];
    if (c1 == '7') saved_ = {row_, col_, attr_};
    if (c1 == '8') row_ = saved_.row, col_ = saved_.col, attr_ = saved_.attr, wrap_ = false;
    if (c1 == 'D') index();
    if (c1 == 'M') reverse_index();
    if (c1 != '[') return 2;
    size_t j = i + 2;
    while ((s[j] >= '0' && s[j] <= '9') || s[j] == ';' || s[j] == '?') ++j;
    const std::string params(s.substr(i + 2, j - i - 2));
    std::vector<int> p;
    for (size_t k = params[0] == '?' ? 1 : 0; k <= params.size();) {
      const size_t e = std::min(params.find(';', k), params.size());
      p.push_back(e > k ? std::atoi(params.substr(k, e - k).c_str()) : 0);
      k = e + 1;
    }
    const int n = std::max(1, p[0]);
    wrap_ = false;
    switch (s[j]) {
      case 'H':
        row_ = clamp_row(n - 1), col_ = std::min(std::max(1, p.size() > 1 ? p[1] : 1), cols_) - 1;
        break;
      case 'A': row_ = std::max(row_ - n, row_ >= top_ ? top_ : 0); break;
      case 'B': row_ = std::min(row_ + n, row_ <= bottom_ ? bottom_ : rows_ - 1); break;
      case 'K':
        for (int k = 0; k < cols_; ++k) cell(row_, k) = Cell{};
        break;
      case 'J':
        for (int r = p[0] == 2 ? 0 : row_; r < rows_; ++r) {
          for (int k = (r == row_ && p[0] != 2) ? col_ : 0; k < cols_; ++k) cell(r, k) = Cell{};
        }
        break;
      case 'r':
        top_ = params.empty() ? 0 : p[0] - 1;
        bottom_ = p.size() > 1 ? p[1] - 1 : rows_ - 1;
        row_ = 0, col_ = 0;
        break;
      case 'm': attr_ = params == "0" || params.empty() ? "" : params; break;
      case 'h':
      case 'l':
        if (params == "?7") autowrap_ = s[j] == 'h';
        if (params == "?2004") paste_ = s[j] == 'h';
        break;
      default: ADD_FAILURE() << "unexpected CSI " << params << s[j];
    }
    return j + 1 - i;
  }

  int clamp_row(int r) const { return std::clamp(r, 0, rows_ - 1); }
  Cell& cell(int r, int c) { return cells_[static_cast<size_t>(r)][static_cast<size_t>(c)]; }

  void put(std::string_view text, int w) {
    if (w == 0) return;
    if (wrap_ || col_ + w > cols_) {
      if (autowrap_) {
        col_ = 0;
        index();
      } else {
        col_ = cols_ - w;
      }
    }
    wrap_ = false;
    cell(row_, col_) = Cell{std::string(text), attr_};
    if (w == 2) cell(row_, col_ + 1) = Cell{"", attr_};
    col_ += w;
    if (col_ >= cols_) {
      col_ = cols_ - 1;
      wrap_ = autowrap_;
    }
  }

  void index() {
    wrap_ = false;
    if (row_ == bottom_) {
      for (int r = top_; r < bottom_; ++r)
        cells_[static_cast<size_t>(r)] = cells_[static_cast<size_t>(r) + 1];
      cells_[static_cast<size_t>(bottom_)].assign(static_cast<size_t>(cols_), Cell{});
    } else if (row_ < rows_ - 1) {
      ++row_;
    }
  }

  void reverse_index() {
    if (row_ == top_) {
      for (int r = bottom_; r > top_; --r)
        cells_[static_cast<size_t>(r)] = cells_[static_cast<size_t>(r) - 1];
      cells_[static_cast<size_t>(top_)].assign(static_cast<size_t>(cols_), Cell{});
    } else if (row_ > 0) {
      --row_;
    }
  }

  struct Saved {
    int row = 0, col = 0;
    std::string attr;
  };
  int rows_ = 0, cols_ = 0, top_ = 0, bottom_ = 0, row_ = 0, col_ = 0;
  bool wrap_ = false, autowrap_ = true;

 public:
  bool paste_ = false;

 private:
  std::string attr_;
  Saved saved_;
  std::vector<std::vector<Cell>> cells_;
};

class ScreenTest : public testing::Test {
 protected:
  static constexpr int kRows = 10, kCols = 40;

  void SetUp() override {
    winsize ws{};
    ws.ws_row = kRows;
    ws.ws_col = kCols;
    ASSERT_EQ(::openpty(&master_, &slave_, nullptr, nullptr, &ws), 0);
    ::fcntl(master_, F_SETFL, O_NONBLOCK);
  }
  void TearDown() override {
    ::close(master_);
    ::close(slave_);
  }

  // Everything the Screen wrote since the last call, also replayed on the emulator.
  std::string drain() {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(master_, buf, sizeof buf)) > 0;)
      out.append(buf, static_cast<size_t>(n));
    vt_.feed(out);
    return out;
  }

  // What the shell wrote before the agent started: `n` lines, the cursor on the next one.
  void shell_lines(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string line = "s" + std::to_string(i) + "\n";  // the pty's ONLCR adds the \r
      ASSERT_EQ(::write(slave_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    }
    drain();
  }

  int master_ = -1, slave_ = -1;
  Vt vt_{kRows, kCols};
};

const LineEditor::View kInput{"hi", 2};

TEST_F(ScreenTest, UsableNeedsTerminalsAndATerm) {
  const char* old = std::getenv("TERM");
  const std::string saved = old == nullptr ? "" : old;
  ::setenv("TERM", "xterm-256color", 1);
  EXPECT_TRUE(Screen::usable(slave_, slave_));
  ::setenv("TERM", "dumb", 1);
  EXPECT_FALSE(Screen::usable(slave_, slave_));
  ::setenv("TERM", "xterm", 1);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_FALSE(Screen::usable(fds[0], slave_));
  EXPECT_FALSE(Screen::usable(slave_, fds[1]));
  Screen piped(fds[0], fds[1]);
  EXPECT_FALSE(piped.enter().is_ok());
  piped.print("plain\n");  // not entered: written as it is
  char buf[16] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 6);
  EXPECT_EQ(std::string(buf), "plain\n");
  ::close(fds[0]);
  ::close(fds[1]);
  if (old == nullptr) {
    ::unsetenv("TERM");
  } else {
    ::setenv("TERM", saved.c_str(), 1);
  }
}

TEST_F(ScreenTest, EnterSetsTheRegionAndLeaveRestoresTheTerminal) {
  shell_lines(2);
  termios before{};
  ASSERT_EQ(::tcgetattr(slave_, &before), 0);
  Screen screen(slave_, slave_);
  EXPECT_EQ(screen.width(), kCols);
  EXPECT_EQ(screen.height(), kRows);
  ASSERT_TRUE(screen.enter().is_ok());
  EXPECT_TRUE(screen.active());
  std::string out = drain();
  EXPECT_NE(out.find("\x1b[1;9r"), std::string::npos);
  EXPECT_NE(out.find("\x1b[?2004h"), std::string::npos);
  EXPECT_TRUE(vt_.paste_);
  termios raw{};
  ASSERT_EQ(::tcgetattr(slave_, &raw), 0);
  EXPECT_EQ(raw.c_lflag & (ICANON | ECHO | ISIG), 0u);
  screen.print("last words");
  screen.leave();
  out = drain();
  EXPECT_NE(out.find("\x1b[r"), std::string::npos);
  EXPECT_NE(out.find("\x1b[?2004l"), std::string::npos);
  EXPECT_FALSE(vt_.paste_);
  termios after{};
  ASSERT_EQ(::tcgetattr(slave_, &after), 0);
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  // Output started below the shell's lines; the shell's prompt goes on the row below the output;
  // the footer is gone.
  EXPECT_EQ(vt_.row(1), "s1");
  EXPECT_EQ(vt_.row(2), "last words");
  EXPECT_EQ(vt_.row(9), "");
  EXPECT_EQ(vt_.cursor_row(), 3);
  EXPECT_EQ(vt_.cursor_col(), 0);
  EXPECT_EQ(vt_.region_bottom(), kRows - 1);
  screen.leave();  // idempotent: nothing more written
  EXPECT_EQ(drain(), "");
}

TEST_F(ScreenTest, FooterStaysFixedWhileOutputScrolls) {
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"ctx 1/2 | idle"}, "ds4-agent> ", kInput);
  drain();
  EXPECT_EQ(vt_.row(8), "ctx 1/2 | idle");
  EXPECT_EQ(vt_.row(9), "ds4-agent> hi");
  EXPECT_EQ(vt_.cursor_row(), 9);
  EXPECT_EQ(vt_.cursor_col(), 13);
  for (int i = 0; i < 30; ++i) screen.print("line " + std::to_string(i) + "\n");
  drain();
  for (int r = 0; r < 7; ++r) EXPECT_EQ(vt_.row(r), "line " + std::to_string(23 + r));
  EXPECT_EQ(vt_.row(7), "");
  EXPECT_EQ(vt_.row(8), "ctx 1/2 | idle");
  EXPECT_EQ(vt_.row(9), "ds4-agent> hi");
  EXPECT_EQ(vt_.cursor_row(), 9);  // the visible cursor stays in the input row
  EXPECT_EQ(vt_.cursor_col(), 13);
}

TEST_F(ScreenTest, PartialLinesContinueWithTheirColourAfterARedraw) {
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"idle"}, "ds4-agent> ", {});
  screen.print("\x1b[90mthink");
  EXPECT_EQ(screen.output_column(), 5);
  screen.set_footer({"generation 3 tokens"}, "ds4-agent> ", kInput);
  screen.print("ing\x1b[0m done");
  drain();
  EXPECT_EQ(vt_.row(0), "thinking done");
  EXPECT_EQ(vt_.attr_at(0, 5), "90");  // the 'i' after the redraw is still grey
  EXPECT_EQ(vt_.attr_at(0, 10), "");
  EXPECT_EQ(vt_.row(8), "generation 3 tokens");
  EXPECT_EQ(vt_.attr_at(8, 0), "");
}

TEST_F(ScreenTest, FooterGrowsAndShrinksAroundThePartialLine) {
  shell_lines(12);  // a full screen: the output starts on the bottom row
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"status"}, "> ", {});
  screen.print("a\nb\npartial");
  drain();
  EXPECT_EQ(vt_.row(4), "s11");
  EXPECT_EQ(vt_.row(7), "partial");
  EXPECT_EQ(vt_.row(8), "status");
  screen.set_footer({"status", "queued: one", "queued: two"}, "> ", {});
  screen.print(" more");
  drain();
  EXPECT_EQ(vt_.row(3), "a");
  EXPECT_EQ(vt_.row(4), "b");
  EXPECT_EQ(vt_.row(5), "partial more");
  EXPECT_EQ(vt_.row(6), "status");
  EXPECT_EQ(vt_.row(7), "queued: one");
  EXPECT_EQ(vt_.row(8), "queued: two");
  EXPECT_EQ(vt_.row(9), ">");
  EXPECT_EQ(vt_.region_bottom(), 5);
  EXPECT_EQ(vt_.row(2), "s11");
  // Rows given back are cleared; the output goes on from where it was and fills them.
  screen.set_footer({"status"}, "> ", {});
  drain();
  EXPECT_EQ(vt_.row(6), "");
  EXPECT_EQ(vt_.row(7), "");
  screen.print("!\nnext");
  drain();
  EXPECT_EQ(vt_.row(2), "s11");
  EXPECT_EQ(vt_.row(4), "b");
  EXPECT_EQ(vt_.row(5), "partial more!");
  EXPECT_EQ(vt_.row(6), "next");
  EXPECT_EQ(vt_.row(7), "");
  EXPECT_EQ(vt_.row(8), "status");
  EXPECT_EQ(vt_.row(9), ">");
  EXPECT_EQ(vt_.region_bottom(), 7);
}

TEST_F(ScreenTest, FooterGrowthScrollsOnlyWhenTheOutputReachesIt) {
  Screen screen(slave_, slave_);  // the cursor at the top: the output starts there
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"status"}, "> ", {});
  screen.print("x\ny");
  screen.set_footer({"1", "2", "3", "4", "5"}, "> ", {});
  drain();
  EXPECT_EQ(vt_.row(0), "x");
  EXPECT_EQ(vt_.row(1), "y");
  EXPECT_EQ(vt_.row(4), "1");
  EXPECT_EQ(vt_.region_bottom(), 3);
  screen.print("\n1\n2\n3");
  drain();
  EXPECT_EQ(vt_.row(0), "y");
  EXPECT_EQ(vt_.row(3), "3");
  EXPECT_EQ(vt_.row(4), "1");
}

TEST_F(ScreenTest, AFullLineDoesNotLeaveABlankOne) {
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"status"}, "> ", {});
  const std::string full(kCols, 'x');
  screen.print(full);
  EXPECT_EQ(screen.output_column(), 0);
  screen.print("\nnext\n");
  screen.print(full);
  screen.set_footer({"status 2"}, "> ", {});
  screen.print("y");
  drain();
  EXPECT_EQ(vt_.row(0), full);
  EXPECT_EQ(vt_.row(1), "next");
  EXPECT_EQ(vt_.row(2), full);
  EXPECT_EQ(vt_.row(3), "y");
}

TEST_F(ScreenTest, TabsWideCharactersSplitInputAndForeignEscapes) {
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"status"}, "> ", {});
  screen.print("a\tb");
  EXPECT_EQ(screen.output_column(), 9);
  screen.print(" \xe4\xb8");  // half a character waits
  EXPECT_EQ(screen.output_column(), 10);
  screen.print("\xad\x1b[");  // so does half an escape sequence
  EXPECT_EQ(screen.output_column(), 12);
  screen.print(
      "1m!\x1b[2J\x1b[5;5H\x1b"
      "7\x01\xff");  // bold kept; clear, moves, saves dropped
  drain();
  EXPECT_EQ(vt_.row(0), "a       b \xe4\xb8\xad!\xef\xbf\xbd");
  EXPECT_EQ(vt_.attr_at(0, 12), "1");
  EXPECT_EQ(vt_.row(8), "status");
  EXPECT_EQ(screen.output_column(), 14);
  const std::string wide = "\xe4\xb8\xad";  // a wide character that does not fit wraps whole
  std::string line = "\n" + std::string(kCols - 1, '-') + wide;
  screen.print(line);
  EXPECT_EQ(screen.output_column(), 2);
  drain();
  EXPECT_EQ(vt_.row(1), std::string(kCols - 1, '-'));
  EXPECT_EQ(vt_.row(2), wide);
}

TEST_F(ScreenTest, ResizeAndClearRedrawTheFooter) {
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  screen.set_footer({"status"}, "ds4-agent> ", kInput);
  screen.print("before");
  drain();
  winsize ws{};
  ws.ws_row = 12;
  ws.ws_col = 30;
  ASSERT_EQ(::ioctl(master_, TIOCSWINSZ, &ws), 0);
  vt_.resize(12, 30);
  screen.resize();
  EXPECT_EQ(screen.width(), 30);
  EXPECT_EQ(screen.height(), 12);
  EXPECT_NE(drain().find("\x1b[1;10r"), std::string::npos);
  EXPECT_EQ(vt_.row(10), "status");
  EXPECT_EQ(vt_.row(11), "ds4-agent> hi");
  screen.print("after");
  drain();
  EXPECT_EQ(vt_.row(9), "after");
  screen.clear();
  drain();
  for (int r = 0; r < 10; ++r) EXPECT_EQ(vt_.row(r), "") << r;
  EXPECT_EQ(vt_.row(10), "status");
  screen.bell();
  drain();
  EXPECT_EQ(vt_.bells, 1);
}

TEST_F(ScreenTest, FooterRowsAreClippedAndLimitedToTheHeight) {
  Screen screen(slave_, slave_);
  ASSERT_TRUE(screen.enter().is_ok());
  std::vector<std::string> many(12, std::string(60, 's'));
  screen.set_footer(many, "ds4-agent> ", {std::string(60, 'i'), 5});
  drain();
  EXPECT_EQ(vt_.region_bottom(), 1);  // 7 status rows at most: two rows of output stay
  for (int r = 2; r < 9; ++r) EXPECT_EQ(vt_.row(r), std::string(kCols, 's')) << r;
  EXPECT_EQ(vt_.row(9), "ds4-agent> " + std::string(kCols - 11, 'i'));
}

TEST(WinchPipe, ReportsTheSignalOnItsFd) {
  WinchPipe pipe;
  ASSERT_TRUE(pipe.install().is_ok());
  ASSERT_GE(pipe.fd(), 0);
  EXPECT_FALSE(pipe.drain());
  ASSERT_EQ(::raise(SIGWINCH), 0);
  EXPECT_TRUE(pipe.drain());
  EXPECT_FALSE(pipe.drain());
  WinchPipe second;
  EXPECT_FALSE(second.install().is_ok());
}

}  // namespace
}  // namespace ds4::tui
