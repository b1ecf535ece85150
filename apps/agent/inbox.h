// apps/agent/inbox.h: what a front-end hands the worker: prompts and commands, in order.
// Owns: the queue between the thread that reads input (the UI, or stdin) and the worker, its
// end (EOF, quit), whether the worker is busy, and the markers of the non-interactive mode
// (+DWARFSTAR_WAITING when the worker waits for input, +DWARFSTAR_QUEUED when input arrives while
// it is busy). Does not own: parsing input (the front-ends) or running it (worker.h).
#pragma once

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/commands.h"

namespace ds4::agent_app {

// One thing the worker does next: a turn on these prompts (several queued ones together), or a
// command.
struct WorkItem {
  std::vector<std::string> prompts;
  std::optional<agent::Command> command;
};

class Inbox {
 public:
  // markers: print the non-interactive markers on stderr.
  explicit Inbox(bool markers) : markers_(markers) {}

  void submit_prompt(std::string text);
  void submit_command(agent::Command c);
  void close();  // no more input: the worker leaves once idle
  // The worker's wait for its next item; nullopt at the end.
  std::optional<WorkItem> next();
  // Prompts queued during a turn, up to the first queued command (the turn loop appends them
  // with the next tool result).
  std::vector<std::string> take_prompts();
  // The first queued prompt, taken back (Ctrl+X); nullopt when none.
  std::optional<std::string> pop_first_prompt();
  std::vector<std::string> queued_prompts();  // for the footer
  bool busy();
  void fail();
  bool failed();

 private:
  struct Item {
    std::string prompt;
    std::optional<agent::Command> command;
  };
  void queued_marker_locked();

  const bool markers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  bool eof_ = false;
  bool busy_ = true;  // until the system prompt is in
  bool failed_ = false;
};

}  // namespace ds4::agent_app
