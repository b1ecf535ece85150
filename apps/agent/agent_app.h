// apps/agent/agent_app.h: the `ds4-agent` program -- its options and the pieces main.cpp wires.
// Owns: AgentOptions (the shared run options of apps/common/run_options.h and the agent's own
// flags, each declared once in main.cpp), the observer that shows a turn (model text on stdout;
// reasoning, tool calls and results on stderr) and writes the --trace file, and the
// non-interactive runner (features.md §5.10).
// Does not own: the turn loop, tools or prompt (src/agent/), the engine.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "agent/turn_loop.h"
#include "apps/common/run_options.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"

namespace ds4::agent_app {

// How calls that need approval (src/agent/approval.h) are answered without a terminal.
enum class Approval { kAsk, kYolo, kDenyUnsafe };

struct AgentOptions {
  app::RunOptions run;                // model, backend, threads, ctx, sampling, think
  std::optional<std::string> prompt;  // -p: one turn, then exit; none: read stdin
  std::string system;                 // --system (extra system text)
  int n_predict = 50000;              // tokens per assistant round
  Approval approval = Approval::kAsk;
  std::string trace;                  // --trace FILE: JSON lines, appended
  std::vector<std::string> scripted;  // test hook: the assistant rounds' texts
};

// Shows a turn as it happens and appends it to the trace file when there is one.
class ConsoleObserver : public agent::TurnObserver {
 public:
  ConsoleObserver(FILE* out, FILE* err, const std::string& trace_path);
  ~ConsoleObserver() override;
  ConsoleObserver(const ConsoleObserver&) = delete;
  ConsoleObserver& operator=(const ConsoleObserver&) = delete;

  void on_prompt(std::string_view what, std::string_view text, int tokens) override;
  void on_output(const std::vector<gen::Event>& events) override;
  void on_round(int round, std::string_view raw, int tokens) override;
  void on_tool_calls(const std::vector<agent::ToolCall>& calls) override;
  void on_tool_result(std::string_view message) override;
  // A call that needed approval, and the answer it got.
  void on_approval(std::string_view reason, bool approved);
  bool trace_ok() const { return trace_ != nullptr || trace_path_.empty(); }

 private:
  void trace_line(const std::string& json_line);
  void end_reasoning();

  FILE* out_;
  FILE* err_;
  std::string trace_path_;
  FILE* trace_ = nullptr;
  bool in_reasoning_ = false;
  bool text_open_ = false;  // stdout has text since the last line break
};

// Non-interactive mode: the prompts of -p one after another, or prompts read from stdin
// (submitted after kQuietMs without input, or at EOF), markers on stderr. Returns the exit
// status: 0 when the input is done, 1 after a worker error.
int run_noninteractive(Engine& engine, const Tokenizer& tok, const AgentOptions& o);

}  // namespace ds4::agent_app
