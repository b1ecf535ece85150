// apps/eval/eval_app.h: ds4-eval's options and its run over the question set (features.md §7).
// Owns: EvalOptions and run_cases (prompting, generation with the think budget, grading, the
// trace, the report, the baseline); main.cpp owns the flags and the model-free modes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/common/run_options.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "eval/question.h"
#include "eval/report.h"
#include "server_client.h"
#include "view.h"

namespace ds4::evalapp {

struct EvalOptions {
  app::RunOptions run;
  bool ctx_given = false;  // -c given: no sizing from the largest prompt
  int tokens = 16000;      // -n: generated tokens per case at most
  std::string trace;       // --trace FILE
  // The think budget (§7.3): with this many tokens or fewer left, </think> is forced (hard) or
  // taken when it ranks within `soft_rank` of the distribution (soft).
  int hard_budget = 512;
  int soft_budget = 1024;
  int soft_rank = 3;
  std::optional<ServerTarget> server;  // --server URL: each case asked of a running ds4-server
};

// The context every case fits in (no -c): the largest rendered prompt plus --tokens, at least
// chat::kThinkMaxMinContext with --think-max. Errors: over `max_ctx` (the model's,
// ModelInfo::n_ctx_max).
Result<int> context_for(const std::vector<eval::Question>& questions, const Tokenizer& tok,
                        const EvalOptions& o, int max_ctx);

// Runs every question on `engine` with `tok`, or through EvalOptions::server (both null then),
// showing it through `view` and writing the trace when asked. In order, but for a case the user
// picks (View::Action::kSwitch: it runs next, the one it interrupts, SWITCHED in the trace, after
// it). Stops at SIGINT or the view's quit (the running case STOPPED, the rest PENDING). Returns
// each case's result, in the questions' order.
Result<std::vector<eval::CaseResult>> run_cases(Engine* engine, const Tokenizer* tok,
                                                const std::vector<eval::Question>& questions,
                                                const EvalOptions& o, View& view);

}  // namespace ds4::evalapp
