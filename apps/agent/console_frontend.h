// apps/agent/console_frontend.h: the plain front-end's view of the worker (non-interactive mode).
// Owns: how a turn shows without a terminal -- model text on stdout; reasoning, tool calls,
// approvals, tool results (first 4 KiB) and problems on stderr; notes (command results) on
// stdout -- and the --trace file (JSON lines, appended) where every piece goes whole.
// Does not own: input (noninteractive.cpp), the worker (worker.h).
#pragma once

#include <cstdio>
#include <string>

#include "agent_app.h"
#include "inbox.h"
#include "trace.h"
#include "worker.h"

namespace ds4::agent_app {

class ConsoleFrontend : public Frontend {
 public:
  ConsoleFrontend(FILE* out, FILE* err, const std::string& trace_path, Approval approval);
  ~ConsoleFrontend() override;
  ConsoleFrontend(const ConsoleFrontend&) = delete;
  ConsoleFrontend& operator=(const ConsoleFrontend&) = delete;
  bool trace_ok() const { return trace_.ok(); }

  void on_prompt(std::string_view what, std::string_view text, int tokens) override;
  void on_prefill(int done, int total) override;
  void on_token(int generated, bool greedy) override;
  void ready(bool from_checkpoint) override;
  void on_output(const std::vector<gen::Event>& events) override;
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
  bool confirm(std::string_view) override { return false; }  // nobody to ask: not saved
  bool keep_going() const override { return false; }
  void saving() override;

 private:
  void end_reasoning();

  FILE* out_;
  FILE* err_;
  Approval approval_;
  Trace trace_;
  bool in_reasoning_ = false;
  bool text_open_ = false;  // stdout has text since the last line break
};

}  // namespace ds4::agent_app
