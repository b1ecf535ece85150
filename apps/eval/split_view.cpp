// apps/eval/split_view.cpp: the split screen (features.md §7.5) -- ANSI only, on the alternate
// screen: left, the title `ds4-eval (p)ause (q)uit <elapsed>` [PAUSED], the score and the case
// list (state colours, given answers, the selection); right, the live sampled tokens (reasoning
// dimmed) and a status line (case, phase, tokens, t/s). Keys: p pauses and resumes (the clock
// stops), q quits (the report follows), Up/Down move the selection (the list scrolls with it),
// Enter runs the selected pending case next. Ctrl+C (SIGINT) quits as q does.
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "tui/keys.h"
#include "tui/width.h"
#include "view.h"

namespace ds4::evalapp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kLiveBytes = 32 * 1024;  // the live pane keeps the output's last bytes
constexpr int kRedrawMs = 50;             // at most 20 frames a second
constexpr int kPausedPollMs = 100;        // while paused, the clock is redrawn this often

const char* state_colour(const std::string& s) {
  if (s == "PASSED") return "\x1b[32m";
  if (s == "FAILED") return "\x1b[31m";
  if (s == "RUNNING") return "\x1b[33m";
  if (s == "PREFILL") return "\x1b[36m";
  return "\x1b[90m";  // PENDING, SKIPPED, STOPPED
}

// Text split into rows of at most `width` columns (UTF-8 characters kept whole).
std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> rows(1);
  int col = 0;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    n = std::min(n, text.size() - i);
    const std::string ch = text.substr(i, n);
    i += n;
    if (ch == "\n") {
      rows.emplace_back();
      col = 0;
      continue;
    }
    const int w = ch == "\t" ? 1 : std::max(0, tui::display_width(ch));
    if (col + w > width) {
      rows.emplace_back();
      col = 0;
    }
    rows.back() += ch == "\t" || static_cast<unsigned char>(ch[0]) < 0x20 ? std::string(" ") : ch;
    col += w;
  }
  return rows;
}

class SplitView : public View {
 public:
  explicit SplitView(int pause_ms) : pause_ms_(pause_ms) {}
  ~SplitView() override { restore(); }

  bool setup() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return false;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG kept: Ctrl+C is SIGINT
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0) return false;
    active_ = true;
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // the alternate screen, no cursor
    std::fflush(stdout);
    return true;
  }

  void begin(const std::vector<eval::Question>& questions,
             const std::vector<eval::CaseResult>& results) override {
    questions_ = &questions;
    results_ = &results;
    start_ = Clock::now();
    draw();
  }
  void case_begin(size_t i, const std::string& phase) override {
    if (running_ != static_cast<ptrdiff_t>(i)) {
      live_.clear();
      generated_ = 0;
      case_start_ = Clock::now();
      case_paused_ = {};
    }
    running_ = static_cast<ptrdiff_t>(i);
    phase_ = phase;
    draw();
  }
  void output(const std::vector<gen::Event>& events, int generated) override {
    for (const gen::Event& e : events) {
      const bool reasoning = e.kind == gen::EventKind::kReasoning;
      if (!reasoning && e.kind != gen::EventKind::kText) continue;
      if (live_.empty() || live_.back().first != reasoning) {
        if (!live_.empty() && !reasoning) live_.back().second += "\n";
        live_.emplace_back(reasoning, std::string());
      }
      live_.back().second += e.text;
    }
    size_t total = 0;
    for (const auto& c : live_) total += c.second.size();
    while (total > kLiveBytes && live_.size() > 1) {
      total -= live_.front().second.size();
      live_.erase(live_.begin());
    }
    if (total > kLiveBytes) live_.front().second.erase(0, total - kLiveBytes);
    generated_ = generated;
    maybe_draw();
  }
  void case_end(size_t, double) override {
    running_ = -1;
    phase_.clear();
    draw();
    const auto until = Clock::now() + std::chrono::milliseconds(pause_ms_);
    while (Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Action poll(size_t* switch_to) override {
    for (;;) {
      const Action a = read_keys(switch_to, paused_ ? kPausedPollMs : 0);
      if (a != Action::kNone || !paused_) {
        maybe_draw();
        return a;
      }
      draw();  // paused: the title's clock and the selection
    }
  }
  void end() override { restore(); }

 private:
  Action read_keys(size_t* switch_to, int wait_ms) {
    pollfd p{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, wait_ms) <= 0) return Action::kNone;
    char buf[256];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) return Action::kNone;
    std::vector<tui::Key> keys = decoder_.feed(std::string_view(buf, static_cast<size_t>(n)));
    if (decoder_.pending()) {
      const std::vector<tui::Key> rest = decoder_.flush();
      keys.insert(keys.end(), rest.begin(), rest.end());
    }
    const size_t count = questions_->size();
    for (const tui::Key& k : keys) {
      if (k.type == tui::KeyType::kText && (k.text == "p" || k.text == "P")) {
        paused_ = !paused_;
        const auto now = Clock::now();
        if (paused_) paused_at_ = now;
        if (!paused_) {
          paused_total_ += now - paused_at_;
          case_paused_ += now - paused_at_;
        }
        draw();
      } else if (k.type == tui::KeyType::kText && (k.text == "q" || k.text == "Q")) {
        return Action::kQuit;
      } else if (k.type == tui::KeyType::kUp && selected_ > 0) {
        --selected_;
        draw();
      } else if (k.type == tui::KeyType::kDown && selected_ + 1 < count) {
        ++selected_;
        draw();
      } else if (k.type == tui::KeyType::kEnter && static_cast<ptrdiff_t>(selected_) != running_ &&
                 (*results_)[selected_].state == "PENDING") {
        *switch_to = selected_;
        if (paused_) {
          paused_ = false;
          paused_total_ += Clock::now() - paused_at_;
        }
        return Action::kSwitch;
      }
    }
    return Action::kNone;
  }

  void maybe_draw() {
    if (Clock::now() - last_draw_ >= std::chrono::milliseconds(kRedrawMs)) draw();
  }

  void draw() {
    if (!active_ || questions_ == nullptr) return;
    last_draw_ = Clock::now();
    winsize ws{};
    int rows = 24, cols = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      rows = ws.ws_row;
      cols = ws.ws_col;
    }
    const int left = std::max(20, std::min(56, cols / 2));
    const int right = std::max(1, cols - left - 1);
    const int body = std::max(1, rows - 3);  // rows 3..rows-1; the last row is the status line
    std::vector<std::string> l(static_cast<size_t>(rows)), r(static_cast<size_t>(rows));
    auto elapsed = (paused_ ? paused_at_ : Clock::now()) - start_ - paused_total_;
    const long secs = static_cast<long>(std::chrono::duration<double>(elapsed).count());
    char title[96];
    std::snprintf(title, sizeof title, "ds4-eval (p)ause (q)uit %02ld:%02ld%s", secs / 60,
                  secs % 60, paused_ ? " \x1b[7m PAUSED \x1b[0m" : "");
    l[0] = title;
    int passed = 0, failed = 0;
    for (const eval::CaseResult& c : *results_) {
      passed += c.state == "PASSED";
      failed += c.state == "FAILED";
    }
    l[1] = "score " + std::to_string(passed) + "/" + std::to_string(results_->size()) + " failed " +
           std::to_string(failed);
    // The list scrolls with the selection.
    if (selected_ < top_) top_ = selected_;
    if (selected_ >= top_ + static_cast<size_t>(body))
      top_ = selected_ - static_cast<size_t>(body) + 1;
    for (int row = 0; row < body && top_ + static_cast<size_t>(row) < results_->size(); ++row) {
      const size_t i = top_ + static_cast<size_t>(row);
      const eval::CaseResult& c = (*results_)[i];
      const std::string state =
          static_cast<ptrdiff_t>(i) == running_ && !phase_.empty() ? phase_ : c.state;
      char line[64];
      std::snprintf(line, sizeof line, "%c%3zu ", i == selected_ ? '>' : ' ', i + 1);
      std::string text = line + std::string(state_colour(state)) + state + "\x1b[0m " + c.key;
      if (!c.given.empty()) text += " " + c.given;
      l[static_cast<size_t>(row + 2)] = std::move(text);
    }
    r[0] = "live sampled tokens";
    std::vector<std::pair<bool, std::string>> shown;
    for (const auto& [reasoning, text] : live_) {
      for (std::string& row : wrap(text, right)) shown.emplace_back(reasoning, std::move(row));
    }
    const size_t room = static_cast<size_t>(body);
    const size_t from = shown.size() > room ? shown.size() - room : 0;
    for (size_t k = from; k < shown.size(); ++k) {
      r[k - from + 2] = (shown[k].first ? "\x1b[90m" : "") + shown[k].second + "\x1b[0m";
    }
    std::string out = "\x1b[H";
    for (int row = 0; row + 1 < rows; ++row) {
      out += "\x1b[" + std::to_string(row + 1) + ";1H\x1b[2K";
      out += tui::clip_to_width(l[static_cast<size_t>(row)], left);
      out += "\x1b[0m\x1b[" + std::to_string(row + 1) + ";" + std::to_string(left + 1) + "H|";
      out += tui::clip_to_width(r[static_cast<size_t>(row)], right);
      out += "\x1b[0m";
    }
    char status[160];
    // The case's time without its pauses (a paused screen stays still).
    const double t = std::chrono::duration<double>((paused_ ? paused_at_ : Clock::now()) -
                                                   case_start_ - case_paused_)
                         .count();
    if (running_ >= 0) {
      std::snprintf(status, sizeof status, "case %td/%zu %s  %d tokens  %.1f t/s", running_ + 1,
                    results_->size(), phase_.c_str(), generated_, t > 0 ? generated_ / t : 0.0);
    } else {
      std::snprintf(status, sizeof status, "%s", paused_ ? "paused" : "between cases");
    }
    out += "\x1b[" + std::to_string(rows) + ";1H\x1b[2K\x1b[7m" + tui::clip_to_width(status, cols) +
           "\x1b[0m";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }

  void restore() {
    if (!active_) return;
    active_ = false;
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

  int pause_ms_;
  termios saved_{};
  bool active_ = false;
  tui::KeyDecoder decoder_;
  const std::vector<eval::Question>* questions_ = nullptr;
  const std::vector<eval::CaseResult>* results_ = nullptr;
  Clock::time_point start_, case_start_, last_draw_, paused_at_;
  Clock::duration paused_total_{}, case_paused_{};
  bool paused_ = false;
  size_t selected_ = 0, top_ = 0;
  ptrdiff_t running_ = -1;
  std::string phase_;
  int generated_ = 0;
  std::vector<std::pair<bool, std::string>> live_;  // (reasoning, text) chunks
};

}  // namespace

std::unique_ptr<View> make_split_view(int pause_ms) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return nullptr;
  auto v = std::make_unique<SplitView>(pause_ms);
  if (!v->setup()) return nullptr;
  return v;
}

}  // namespace ds4::evalapp
