// apps/agent/worker.h: the worker thread of ds4-agent (features.md §5): it owns the only engine
// session, its KV, the tools, the turn loop and the session files, and runs what the front-end
// queues -- turns and commands -- one at a time.
// Owns: the session's identity (title, creation time, id) and whether it changed since it was
// saved; the system prompt's checkpoint file; the commands that touch the session (/save
// /compact /list /switch /del /strip /history /new /think /nothink /quit); Ctrl+C's flag.
// Does not own: the terminal or input (the front-ends: interactive.cpp, noninteractive.cpp),
// the turn loop's rules (src/agent/turn_loop.h), the file format (src/agent/session_store.h).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/session_store.h"
#include "agent/turn_loop.h"
#include "agent_app.h"
#include "inbox.h"

namespace ds4::agent_app {

// What the worker tells the person, on the worker thread: the turn as it happens (TurnObserver),
// notes, problems and questions.
class Frontend : public agent::TurnObserver {
 public:
  // The loop whose transcript the callbacks may read (on the worker thread) for the context used.
  void attach(const agent::TurnLoop* loop, int n_ctx) {
    loop_ = loop;
    n_ctx_ = n_ctx;
  }
  // Command results and what happened (one or more lines).
  virtual void note(std::string_view text) = 0;
  // Something failed; `fatal`: the worker stops.
  virtual void problem(std::string_view text, bool fatal) = 0;
  // A call that needs approval (src/agent/approval.h): run it?
  virtual bool approve(const agent::ToolCall& call, std::string_view reason) = 0;
  // A yes/no question (save the session first?).
  virtual bool confirm(std::string_view question) = 0;
  // A turn failed: go on (interactive) or stop with status 1 (non-interactive)?
  virtual bool keep_going() const = 0;
  // The worker is idle again (or saving a session: `saving`); ids of the saved sessions, most
  // recent first, when they changed (for Tab completion).
  // The session is ready (the system prompt in, from its checkpoint or evaluated).
  virtual void ready(bool /*from_checkpoint*/) {}
  virtual void idle() {}
  virtual void saving() {}
  virtual void sessions(std::vector<std::string> /*ids*/) {}
  // The worker is leaving.
  virtual void quit() {}

 protected:
  int ctx_used() const { return loop_ ? static_cast<int>(loop_->transcript().size()) : 0; }
  int ctx_total() const { return n_ctx_; }
  // Tokens the engine evaluated for this session's loop so far (generated ones included).
  int64_t evaluated() const { return loop_ ? loop_->evaluated() : 0; }

 private:
  const agent::TurnLoop* loop_ = nullptr;
  int n_ctx_ = 0;
};

class Worker {
 public:
  Worker(Engine& engine, const Tokenizer& tok, const AgentOptions& o, Inbox& inbox, Frontend& fe);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // The thread's body: starts the session (system prompt from its checkpoint when it can), then
  // runs the inbox's items until it closes or /quit. Returns the exit status: 0, or 1 after a
  // failure the front-end does not go on from.
  int run();
  // Set by the front-end (Ctrl+C): the prefill, generation, compaction or command under way stops
  // at its next safe point. Cleared before each item.
  std::atomic<bool>& interrupt() { return interrupt_; }

 private:
  Status start();
  Status start_system();
  void turn(const std::vector<std::string>& prompts);
  void command(const agent::Command& c);
  void save();
  void list();
  void switch_to(const std::string& prefix);
  void remove(const std::string& prefix);
  void strip(const std::string& prefix);
  void history(const std::string& arg);
  void new_session();
  void compact();
  void set_think(bool on);
  // A dirty session: ask whether to save it first (before /switch, /new, leaving).
  void offer_save();
  void publish_sessions();
  bool sessions_ok();
  std::string id() const;
  // The live session is a new one: no title, creation time or unsaved change yet.
  void forget_identity();

  Engine& engine_;
  const Tokenizer& tok_;
  const AgentOptions& o_;
  Inbox& inbox_;
  Frontend& fe_;
  std::atomic<bool> interrupt_{false};
  std::unique_ptr<Session> session_;
  std::unique_ptr<agent::ToolContext> tools_;
  std::unique_ptr<agent::TurnLoop> loop_;
  std::optional<agent::SessionStore> store_;
  std::string title_;     // the first user prompt, normalised (agent::make_title)
  uint64_t created_ = 0;  // fixed at the first turn; 0 before it
  bool dirty_ = false;    // said something since the last save or load
  bool quit_ = false;
  int status_ = 0;
};

}  // namespace ds4::agent_app
