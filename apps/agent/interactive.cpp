// apps/agent/interactive.cpp: ds4-agent's terminal UI (features.md §5.7-5.8). The UI thread owns
// the terminal (tui::Screen: output in a scroll region above a fixed footer), the line editor and
// its history file; the worker thread (worker.h) owns the session. The UI thread waits in poll()
// on the keyboard, the worker's event pipe (tui_frontend.h) and SIGWINCH; it draws the worker's
// events as they come and redraws the footer at most every kFooterRedraw.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "agent_app.h"
#include "base/text.h"
#include "tui/colors.h"
#include "tui/footer.h"
#include "tui/keys.h"
#include "tui/line_editor.h"
#include "tui/screen.h"
#include "tui/width.h"
#include "tui_frontend.h"

namespace ds4::agent_app {
namespace {

using Clock = std::chrono::steady_clock;
namespace color = tui::color;
using Phase = tui::FooterState::Phase;

constexpr auto kFooterRedraw = std::chrono::milliseconds(200);
constexpr int kEscFlushMs = 50;  // a lone ESC is a key after this long without a sequence
constexpr int kIdlePollMs = 200;
constexpr const char* kPrompt = "ds4-agent> ";

std::string history_path(const AgentOptions& o) {
  if (!o.history_file.empty()) return o.history_file;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.ds4_agent_history";
}

// What the scroll region shows of a submitted message: a long paste by its start and size.
std::string echo(std::string_view text) {
  constexpr size_t kShownBytes = 240;
  if (text.size() <= kShownBytes && text.find('\n') == std::string_view::npos) {
    return std::string(text);
  }
  size_t cut = std::min({text.size(), kShownBytes, text.find('\n')});
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  const size_t lines = 1 + static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return std::string(text.substr(0, cut)) + " ... [" + std::to_string(lines) + " lines, " +
         std::to_string(text.size()) + " bytes]";
}

class Ui {
 public:
  Ui(Engine& engine, const Tokenizer& tok, const AgentOptions& o, int wake_rd, int wake_wr)
      : o_(o),
        engine_(engine),
        wake_rd_(wake_rd),
        history_(history_path(o)),
        editor_(&history_),
        fe_(wake_wr, o.trace, o.approval),
        inbox_(false),
        worker_(engine, tok, o, inbox_, fe_) {
    history_.load();
    editor_.set_completer([this](std::string_view line, size_t cursor) {
      return agent::complete_command(line.substr(0, cursor), ids_);
    });
    footer_.ctx_total = o.run.ctx;
    footer_.power = engine.power();
  }

  int run() {
    if (!fe_.trace_ok()) {
      std::fprintf(stderr, "ds4-agent: cannot open the trace file '%s'\n", o_.trace.c_str());
      return 1;
    }
    if (Status st = screen_.enter(); !st.is_ok()) {
      std::fprintf(stderr, "ds4-agent: %s\n", st.message().c_str());
      return 1;
    }
    if (Status st = winch_.install(); !st.is_ok()) {
      screen_.leave();
      std::fprintf(stderr, "ds4-agent: %s\n", st.message().c_str());
      return 1;
    }
    print(std::string(color::kBold) + "DwarfStar 🐋 Agent" + std::string(color::kReset) +
          ", context " + std::to_string(o_.run.ctx / 1000) + "k tokens (/help: commands)\n");
    int status = 0;
    std::thread worker([&] { status = worker_.run(); });
    if (o_.prompt) submit(*o_.prompt);
    loop();
    fe_.close();
    worker_.interrupt().store(true);
    inbox_.close();
    worker.join();
    drain();
    screen_.leave();
    return status;
  }

 private:
  void loop() {
    redraw(true);
    while (!worker_done_) {
      pollfd fds[3] = {{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0},
                       {.fd = wake_rd_, .events = POLLIN, .revents = 0},
                       {.fd = winch_.fd(), .events = POLLIN, .revents = 0}};
      const int timeout = keys_.pending() ? kEscFlushMs : kIdlePollMs;
      const int ready = ::poll(fds, 3, timeout);
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
        char buf[4096];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
          quit();  // the terminal is gone
        } else {
          for (const tui::Key& k : keys_.feed({buf, static_cast<size_t>(n)})) key(k);
        }
      } else if (ready == 0 && keys_.pending()) {
        for (const tui::Key& k : keys_.flush()) key(k);
      }
      if (ready > 0 && (fds[1].revents & POLLIN) != 0) {
        char buf[256];
        while (::read(wake_rd_, buf, sizeof buf) > 0) {
        }
      }
      drain();
      if (ready > 0 && (fds[2].revents & POLLIN) != 0 && winch_.drain()) screen_.resize();
      redraw(false);
    }
  }

  // --- output ---
  void print(std::string_view text) { screen_.print(text); }
  void end_line() {
    if (style_ != Style::kNone) print(color::kReset);
    style_ = Style::kNone;
    if (screen_.output_column() != 0) print("\n");
  }
  enum class Style { kNone, kReasoning, kText, kSummary };
  void stream(Style s, std::string_view text) {
    if (style_ != s) {
      if (style_ != Style::kNone) print(color::kReset);
      if (style_ == Style::kReasoning || (s == Style::kReasoning && screen_.output_column() != 0)) {
        print("\n");
      }
      if (s == Style::kReasoning) print(color::kGrey);
      if (s == Style::kSummary) print(color::kMagenta);
      style_ = s;
    }
    print(text);
  }
  void block(std::string_view colour, std::string_view text) {
    end_line();
    print(std::string(colour) + std::string(text) + std::string(color::kReset));
    if (!text.empty() && text.back() != '\n') print("\n");
  }

  void drain() {
    for (UiEvent& e : fe_.take()) event(e);
  }

  void event(const UiEvent& e) {
    using K = UiEvent::Kind;
    footer_.ctx_used = e.ctx;
    switch (e.kind) {
      case K::kReasoning: stream(Style::kReasoning, e.text); break;
      case K::kText: stream(Style::kText, e.text); break;
      case K::kCallBegin: block(color::kCyan, "⋯ calling " + e.text); break;
      case K::kRoundEnd: end_line(); break;
      case K::kToolCalls: block(color::kCyan, e.text); break;
      case K::kToolResult: block(color::kDim, e.text); break;
      case K::kPrompt:
        footer_.label = (footer_.label + 1) % 6;
        phase_start_ = Clock::now();
        break;
      case K::kPrefill: {
        if (footer_.phase != Phase::kPrefill) phase_start_ = Clock::now();
        footer_.phase = Phase::kPrefill;
        footer_.prefill_done = e.a;
        footer_.prefill_total = e.b;
        const double s = std::chrono::duration<double>(Clock::now() - phase_start_).count();
        footer_.prefill_rate = s > 0 ? e.a / s : 0;
        break;
      }
      case K::kPrefillCut:
        block(color::kYellow, "interrupted: the model saw " + std::to_string(e.a) + " of the " +
                                  std::to_string(e.b) + " tokens of that message");
        break;
      case K::kToken: {
        if (footer_.phase != Phase::kGeneration || e.a == 1) phase_start_ = Clock::now();
        footer_.phase = Phase::kGeneration;
        footer_.generated = e.a;
        footer_.greedy = e.flag;
        const double s = std::chrono::duration<double>(Clock::now() - phase_start_).count();
        footer_.gen_rate = s > 0 && e.a > 1 ? (e.a - 1) / s : 0;
        break;
      }
      case K::kCompactBegin:
        block(color::kMagenta, "COMPACTING " + std::to_string(e.a) + " tokens");
        footer_.phase = Phase::kCompacting;
        footer_.compact_tokens = 0;
        break;
      case K::kSummary:
        footer_.phase = Phase::kCompacting;
        ++footer_.compact_tokens;
        stream(Style::kSummary, e.text);
        break;
      case K::kCompactEnd:
        block(color::kMagenta,
              e.flag
                  ? "compacted: " + std::to_string(e.a) + " -> " + std::to_string(e.b) + " tokens"
                  : "compaction stopped (" + e.text + "): the conversation is kept as it was");
        break;
      case K::kNote: block("", e.text); break;
      case K::kProblem:
        block(color::kRed, "error: " + e.text);
        footer_.phase = Phase::kError;
        footer_.error = e.text;
        break;
      case K::kQuestion:
        question_ = e.text;
        screen_.bell();
        break;
      case K::kIdle:
        end_line();
        if (footer_.phase != Phase::kError) footer_.phase = Phase::kIdle;
        break;
      case K::kSaving: footer_.phase = Phase::kSaving; break;
      case K::kSessions: ids_ = e.ids; break;
      case K::kQuit: worker_done_ = true; break;
    }
    dirty_ = true;
  }

  void redraw(bool now) {
    const auto t = Clock::now();
    if (!now && (!dirty_ || t - last_redraw_ < kFooterRedraw)) return;
    footer_.queued = inbox_.queued_prompts();
    std::string prompt = kPrompt;
    tui::LineEditor::View view;
    if (!question_.empty()) {
      prompt = question_ + " [y/n] ";
      view = {};
    } else {
      view = editor_.view(std::max(1, screen_.width() - tui::display_width(prompt)));
    }
    screen_.set_footer(tui::format_footer(footer_, screen_.width()), prompt, view);
    last_redraw_ = t;
    dirty_ = false;
  }

  // --- input ---
  void key(const tui::Key& k) {
    dirty_ = true;
    if (!question_.empty()) return answer(k);
    switch (k.type) {
      case tui::KeyType::kCtrlX:
        if (auto text = inbox_.pop_first_prompt()) editor_.set_text(*text);
        return;
      case tui::KeyType::kEsc:
        if (inbox_.busy()) interrupt();
        return;
      case tui::KeyType::kCtrlL: screen_.clear(); return;
      default: break;
    }
    tui::EditResult r = editor_.apply(k);
    switch (r.kind) {
      case tui::EditResult::kSubmit: submit(r.text); break;
      case tui::EditResult::kInterrupt:
        if (inbox_.busy()) {
          interrupt();
        } else {
          block(color::kDim, "(press Ctrl+D on an empty line to leave)");
        }
        break;
      case tui::EditResult::kEof: quit(); break;
      case tui::EditResult::kCandidates: {
        std::string line;
        for (const std::string& c : r.candidates) line += c + "  ";
        block(color::kDim, line);
        break;
      }
      case tui::EditResult::kBell: screen_.bell(); break;
      case tui::EditResult::kNone: break;
    }
  }

  void answer(const tui::Key& k) {
    bool yes = false;
    if (k.type == tui::KeyType::kText && (k.text == "y" || k.text == "Y")) {
      yes = true;
    } else if (!(k.type == tui::KeyType::kText && (k.text == "n" || k.text == "N")) &&
               k.type != tui::KeyType::kEnter && k.type != tui::KeyType::kCtrlC &&
               k.type != tui::KeyType::kEsc) {
      return;  // only y, n, Enter (no), Ctrl+C and ESC (no) answer
    }
    block(color::kDim, question_ + (yes ? " yes" : " no"));
    question_.clear();
    fe_.answer(yes);
  }

  void interrupt() {
    worker_.interrupt().store(true);
    footer_.phase = Phase::kInterrupted;
  }

  void quit() {
    if (inbox_.busy()) interrupt();
    inbox_.submit_command(*agent::parse_command("/quit"));
    inbox_.close();
  }

  void submit(std::string text) {
    text.resize(base::trim_end(text).size());
    if (text.empty()) return;
    std::optional<agent::Command> c = agent::parse_command(text);
    if (!c) {
      block(color::kBold, "> " + echo(text));
      if (inbox_.busy())
        block(color::kDim,
              "(queued: the model is busy; it goes with the next tool result or turn)");
      inbox_.submit_prompt(std::move(text));
      return;
    }
    const bool busy = inbox_.busy();
    switch (c->kind) {
      case agent::CommandKind::kUnknown:
        screen_.bell();
        editor_.set_text(text);
        return;
      case agent::CommandKind::kHelp: block("", agent::help_text()); return;
      case agent::CommandKind::kPower:  // at once, also during a turn (the engine's next unit)
        block(color::kDim, text);
        block("", app::power_command(engine_, c->arg));
        footer_.power = engine_.power();
        return;
      case agent::CommandKind::kQuit: return quit();
      default: break;
    }
    if (busy && c->info->needs_idle) {
      block(color::kYellow, c->name + ": command requires the model to be idle");
      return;
    }
    if (busy) block(color::kDim, c->name + " scheduled at the next safe point");
    block(color::kDim, text);
    inbox_.submit_command(std::move(*c));
  }

  const AgentOptions& o_;
  Engine& engine_;  // the worker's; set_power alone is called from here
  const int wake_rd_;
  tui::Screen screen_;
  tui::WinchPipe winch_;
  tui::KeyDecoder keys_;
  tui::History history_;
  tui::LineEditor editor_;
  TuiFrontend fe_;
  Inbox inbox_;
  Worker worker_;
  tui::FooterState footer_;
  std::vector<std::string> ids_;
  std::string question_;
  Style style_ = Style::kNone;
  Clock::time_point phase_start_ = Clock::now();
  Clock::time_point last_redraw_{};
  bool dirty_ = true;
  bool worker_done_ = false;
};

}  // namespace

int run_interactive(Engine& engine, const Tokenizer& tok, const AgentOptions& o) {
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "ds4-agent: cannot create a pipe\n");
    return 1;
  }
  int status = 0;
  {
    Ui ui(engine, tok, o, wake[0], wake[1]);
    status = ui.run();
  }
  ::close(wake[0]);
  ::close(wake[1]);
  return status;
}

}  // namespace ds4::agent_app
