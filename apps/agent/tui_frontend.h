// apps/agent/tui_frontend.h: the worker's side of the terminal UI: what the worker reports
// becomes events queued for the UI thread, which draws them (interactive.cpp).
// Owns: the event queue and the pipe that wakes the UI's poll loop, the questions the worker
// waits on (approval, save first?) and their answers, the trace file.
// Does not own: the terminal (the UI thread's tui::Screen), input, the worker.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "trace.h"
#include "worker.h"

namespace ds4::agent_app {

struct UiEvent {
  enum class Kind {
    kReasoning,  // text
    kText,       // text
    kCallBegin,  // text: the tool's name
    kRoundEnd,
    kToolCalls,     // text: the calls, formatted
    kToolResult,    // text: its first lines, as shown
    kPrompt,        // a = tokens (what the model did not generate), text = what
    kPrefill,       // a = done, b = total
    kPrefillCut,    // a = kept, b = total
    kToken,         // a = generated in the round, flag = the next is drawn greedily
    kCompactBegin,  // a = used
    kSummary,       // text
    kCompactEnd,    // a = before, b = after, text = why it failed (empty: ok)
    kNote,          // text
    kProblem,       // text, flag = fatal
    kQuestion,      // text: a yes/no question the worker waits on
    kIdle,
    kSaving,
    kSessions,  // ids
    kQuit,
  };
  Kind kind;
  std::string text;
  int a = 0, b = 0;
  bool flag = false;
  int ctx = 0;  // context used when it happened
  std::vector<std::string> ids;
};

class TuiFrontend : public Frontend {
 public:
  // wake_fd: a pipe's write end; one byte is written after each queued event.
  TuiFrontend(int wake_fd, const std::string& trace_path, Approval approval);
  ~TuiFrontend() override;
  bool trace_ok() const { return trace_.ok(); }
  TuiFrontend(const TuiFrontend&) = delete;
  TuiFrontend& operator=(const TuiFrontend&) = delete;

  // UI thread: the events queued so far.
  std::vector<UiEvent> take();
  // UI thread: the answer to the pending question (the worker goes on).
  void answer(bool yes);
  // UI thread: leaving; every question from now on is answered no.
  void close();

  // Worker thread (Frontend and TurnObserver).
  void on_prompt(std::string_view what, std::string_view text, int tokens) override;
  void on_prefill(int done, int total) override;
  void ready(bool from_checkpoint) override;
  void on_output(const std::vector<gen::Event>& events) override;
  void on_token(int generated, bool greedy) override;
  void on_round(int round, std::string_view raw, int tokens,
                const decode::Acceptance& drafts) override;
  void on_tool_calls(const std::vector<agent::ToolCall>& calls) override;
  void on_tool_result(std::string_view message) override;
  void on_compaction_begin(int used) override;
  void on_summary(std::string_view text) override;
  void on_compaction_end(const Status& st, int before, int after) override;
  void on_prefill_interrupted(int kept, int total) override;
  void note(std::string_view text) override;
  void problem(std::string_view text, bool fatal) override;
  bool approve(const agent::ToolCall& call, std::string_view reason) override;
  bool confirm(std::string_view question) override;
  bool keep_going() const override { return true; }
  void idle() override;
  void saving() override;
  void sessions(std::vector<std::string> ids) override;
  void quit() override;

 private:
  void push(UiEvent e);
  bool ask(std::string question);

  const int wake_fd_;
  const Approval approval_;
  Trace trace_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<UiEvent> events_;
  std::optional<bool> answer_;
  bool asking_ = false;
  bool closed_ = false;
};

}  // namespace ds4::agent_app
