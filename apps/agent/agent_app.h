// apps/agent/agent_app.h: the `ds4-agent` program -- its options and the front-ends main.cpp
// chooses between.
// Owns: AgentOptions (the shared run options of apps/common/run_options.h and the agent's own
// flags, each declared once in main.cpp) and the two runners: the terminal UI (interactive.cpp)
// and the plain, non-interactive one (noninteractive.cpp, features.md §5.10).
// Does not own: the worker (worker.h), the turn loop, tools or prompt (src/agent/), the engine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/common/run_options.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"

namespace ds4::agent_app {

// How calls that need approval (src/agent/approval.h) are answered.
enum class Approval { kAsk, kYolo, kDenyUnsafe };

struct AgentOptions {
  app::RunOptions run;                // model, backend, threads, ctx, sampling, think
  std::optional<std::string> prompt;  // -p: submitted after startup (non-interactive: then exit)
  std::string system;                 // --system (extra system text)
  int n_predict = 50000;              // tokens per assistant round
  Approval approval = Approval::kAsk;
  std::string trace;                  // --trace FILE: JSON lines, appended
  std::string kv_dir;                 // --kv-dir: saved sessions (empty: ~/.ds4/kvcache)
  std::string history_file;           // the UI's input history (empty: ~/.ds4_agent_history)
  std::vector<std::string> scripted;  // test hook: the generations' texts
  int test_save_pause_ms = 0;         // test hook: a save pauses halfway for this long
};

// Non-interactive mode: the prompt of -p, or prompts (and single-line commands) read from stdin,
// submitted after a quiet spell or at EOF; markers on stderr. Returns the exit status: 0 when the
// input is done, 1 after a worker error.
int run_noninteractive(Engine& engine, const Tokenizer& tok, const AgentOptions& o);

// The terminal UI (stdin and stdout are a terminal). Returns the exit status.
int run_interactive(Engine& engine, const Tokenizer& tok, const AgentOptions& o);

}  // namespace ds4::agent_app
