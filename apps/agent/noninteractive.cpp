// apps/agent/noninteractive.cpp: ds4-agent without a terminal (features.md §5.10). The main
// thread reads stdin; the worker thread (worker.h) owns the session, its KV and the tools. A
// prompt is submitted after kQuietMs without new input, or at EOF; a submission whose every line
// starts with '/' is a series of commands instead (/save, /switch ID, ...). Input that arrives
// while a turn runs is queued (+DWARFSTAR_QUEUED) and handed to the turn with its next tool
// result, or else starts the next turn; +DWARFSTAR_WAITING says the worker is idle and waiting.
#include <poll.h>
#include <unistd.h>

#include <thread>

#include "base/text.h"
#include "console_frontend.h"

namespace ds4::agent_app {
namespace {

// Input is one prompt until stdin has been quiet this long (a pasted block arrives in pieces).
constexpr int kQuietMs = 200;
constexpr size_t kReadChunk = 4096;

void submit(Inbox& inbox, std::string* pending) {
  // Trailing line breaks and blanks are not part of a prompt; a blank prompt is none.
  std::string text(base::trim_end(*pending));
  pending->clear();
  if (text.empty()) return;
  std::vector<agent::Command> commands;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    const std::string_view line = std::string_view(text).substr(at, nl - at);
    at = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::optional<agent::Command> c = agent::parse_command(line);
    if (!c) return inbox.submit_prompt(std::move(text));
    commands.push_back(std::move(*c));
  }
  for (agent::Command& c : commands) inbox.submit_command(std::move(c));
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
  ConsoleFrontend fe(stdout, stderr, o.trace, o.approval);
  if (!fe.trace_ok()) {
    std::fprintf(stderr, "ds4-agent: cannot open the trace file '%s'\n", o.trace.c_str());
    return 1;
  }
  Inbox inbox(!o.prompt.has_value());
  Worker worker(engine, tok, o, inbox, fe);
  int status = 0;
  std::thread w([&] { status = worker.run(); });
  if (o.prompt) {
    inbox.submit_prompt(*o.prompt);
    inbox.close();
  } else {
    read_stdin(inbox);
  }
  w.join();
  return status;
}

}  // namespace ds4::agent_app
