// apps/agent/noninteractive.cpp: ds4-agent without a terminal (features.md §5.10). The main
// thread reads stdin; a worker thread owns the session, its KV and the tools. A prompt is
// submitted after kQuietMs without new input, or at EOF; input that arrives while a turn runs is
// queued (+DWARFSTAR_QUEUED) and handed to the turn with its next tool result, or else starts the
// next turn; +DWARFSTAR_WAITING says the worker is idle and waiting for input.
#include <poll.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "agent_app.h"

namespace ds4::agent_app {
namespace {

// Input is one prompt until stdin has been quiet this long (a pasted block arrives in pieces).
constexpr int kQuietMs = 200;
constexpr size_t kReadChunk = 4096;
constexpr const char* kWaitingMarker = "+DWARFSTAR_WAITING";
constexpr const char* kQueuedMarker = "+DWARFSTAR_QUEUED";

// What the reader hands the worker.
class Inbox {
 public:
  // markers: print the markers (stdin mode; a -p run prints none).
  explicit Inbox(bool markers) : markers_(markers) {}
  void submit(std::string text) {
    std::lock_guard lock(mu_);
    if (markers_ && (busy_ || !prompts_.empty())) std::fprintf(stderr, "%s\n", kQueuedMarker);
    prompts_.push_back(std::move(text));
    cv_.notify_all();
  }
  void close() {
    std::lock_guard lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }
  // The worker's wait for its next turn: every prompt queued (empty at EOF when idle).
  std::vector<std::string> next_turn() {
    std::unique_lock lock(mu_);
    busy_ = false;
    if (markers_ && prompts_.empty() && !eof_) std::fprintf(stderr, "%s\n", kWaitingMarker);
    cv_.wait(lock, [&] { return !prompts_.empty() || eof_; });
    busy_ = true;
    return take_locked();
  }
  // Prompts queued during a turn (the loop appends them with the next tool result).
  std::vector<std::string> take() {
    std::lock_guard lock(mu_);
    return take_locked();
  }
  void fail() {
    std::lock_guard lock(mu_);
    failed_ = true;
  }
  bool failed() {
    std::lock_guard lock(mu_);
    return failed_;
  }

 private:
  std::vector<std::string> take_locked() {
    std::vector<std::string> out(prompts_.begin(), prompts_.end());
    prompts_.clear();
    return out;
  }

  const bool markers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> prompts_;
  bool eof_ = false;
  bool busy_ = true;  // until the system prompt is in
  bool failed_ = false;
};

agent::ApproveFn approver(Approval mode, ConsoleObserver& obs) {
  return [mode, &obs](const agent::ToolCall&, std::string_view reason) {
    const bool ok = mode == Approval::kYolo;
    obs.on_approval(reason, ok);
    return ok;
  };
}

void worker(Engine& engine, const Tokenizer& tok, const AgentOptions& o, Inbox& inbox) {
  auto fail = [&](const Status& st) {
    std::fprintf(stderr, "ds4-agent: %s\n", st.message().c_str());
    inbox.fail();
  };
  auto session = engine.create_session(app::session_options(o.run));
  if (!session.is_ok()) return fail(session.status());
  ConsoleObserver obs(stdout, stderr, o.trace);
  if (!obs.trace_ok()) {
    return fail(Status::io_error("cannot open the trace file '%s'", o.trace.c_str()));
  }
  agent::ToolContext tools({.workdir = "."});
  agent::TurnLoopOptions lo{.mode = {.think = chat::effective_think_mode(o.run.think, o.run.ctx),
                                     .context_size = o.run.ctx},
                            .sampling = o.run.sampling,
                            .max_round_tokens = o.n_predict,
                            .extra_system = o.system,
                            .scripted_rounds = o.scripted};
  agent::TurnLoop loop(**session, tok, tools, std::move(lo), obs, approver(o.approval, obs),
                       [&] { return inbox.take(); });
  if (Status st = loop.start(); !st.is_ok()) return fail(st);
  for (;;) {
    const std::vector<std::string> prompts = inbox.next_turn();
    if (prompts.empty()) return;  // EOF and idle
    if (Status st = loop.run_turn(agent::join_queued(prompts)); !st.is_ok()) return fail(st);
  }
}

// Trailing line breaks and blanks are not part of a prompt; a blank prompt is none.
std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.pop_back();
  }
  return text;
}

void submit(Inbox& inbox, std::string* pending) {
  std::string text = trimmed(std::move(*pending));
  pending->clear();
  if (!text.empty()) inbox.submit(std::move(text));
}

// Reads stdin until EOF or a worker failure, submitting a prompt after each quiet spell.
void read_stdin(Inbox& inbox) {
  std::string pending;
  char buf[kReadChunk];
  while (!inbox.failed()) {
    pollfd pfd{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&pfd, 1, kQuietMs);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {
      submit(inbox, &pending);
      continue;
    }
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
  }
  submit(inbox, &pending);
  inbox.close();
}

}  // namespace

int run_noninteractive(Engine& engine, const Tokenizer& tok, const AgentOptions& o) {
  Inbox inbox(!o.prompt.has_value());
  std::thread w(worker, std::ref(engine), std::cref(tok), std::cref(o), std::ref(inbox));
  if (o.prompt) {
    inbox.submit(*o.prompt);
    inbox.close();
  } else {
    read_stdin(inbox);
  }
  w.join();
  return inbox.failed() ? 1 : 0;
}

}  // namespace ds4::agent_app
