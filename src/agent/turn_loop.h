// src/agent/turn_loop.h: the agent's turn loop over one engine session (features.md §5.5).
// Owns: the session's transcript as tokens appended in order -- the system prompt once, then per
// user turn the user message and assistant rounds, each round followed by EOS and, when it called
// tools, by the combined tool result as a user turn -- without re-evaluating what the session
// already holds; each round generated on the shared generation core (gen::Generation: greedy
// inside DSML structure, its end at a closed tool-call block or EOS); its calls read by the DSML
// automaton (round_calls.h), approved (approval.h) and run (dispatch.h); an invalid block answered
// by "Tool error: invalid DSML tool call: ..." and the syntax reminder; input queued during a
// turn appended with the next tool result; the context guard; the test hook's scripted rounds.
// Does not own: the terminal, threads or input (the app), the tools (dispatch.h), rendering rules
// (chat/), the engine. No compaction yet: a full context ends the turn with an error.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/approval.h"
#include "agent/dispatch.h"
#include "agent/system_prompt.h"
#include "agent/tool_context.h"
#include "ds4/sampling.h"
#include "ds4/session.h"
#include "ds4/tokenizer.h"
#include "gen/event.h"

namespace ds4::agent {

// Room a tool result leaves for the rounds after it (features.md §5.5 context guard): the model
// must still be able to answer or call another tool.
inline constexpr int kToolResultReserveTokens = 1024;
// A round needs room for at least one token and the EOS that closes it.
inline constexpr int kRoundClosingTokens = 2;

struct TurnLoopOptions {
  PromptMode mode;               // think mode and context size the transcript is rendered for
  SamplingParams sampling;       // the model's sampling outside DSML structure
  int max_round_tokens = 50000;  // -n: tokens one assistant round may generate
  std::string extra_system;      // --system text, appended as plain text
  // Test hook (the app's hidden --test-scripted-output): the i-th assistant round takes the i-th
  // text's tokens, then EOS, instead of sampling (the session still evaluates each, as the
  // server's forced output does); rounds after the last one sample.
  std::vector<std::string> scripted_rounds;
};

// What the loop tells its owner, on the worker thread, as it happens.
class TurnObserver {
 public:
  virtual ~TurnObserver() = default;
  // Tokens appended to the session that the model did not generate (system, user, tool turns).
  virtual void on_prompt(std::string_view /*what*/, std::string_view /*text*/, int /*tokens*/) {}
  // The generation core's events of the round being generated (reasoning, text, call pieces).
  virtual void on_output(const std::vector<gen::Event>& /*events*/) {}
  // A round ended: its raw bytes and token count.
  virtual void on_round(int /*round*/, std::string_view /*raw*/, int /*tokens*/) {}
  // The calls about to run, and the combined tool message the model will read.
  virtual void on_tool_calls(const std::vector<ToolCall>& /*calls*/) {}
  virtual void on_tool_result(std::string_view /*message*/) {}
};

class TurnLoop {
 public:
  // Everything is borrowed and must outlive the loop; `approve` is asked before each call that
  // needs approval (approval.h); `queued` (may be empty) hands over input that arrived during a
  // turn, appended with the next tool result.
  TurnLoop(Session& session, const Tokenizer& tok, ToolContext& tools, TurnLoopOptions options,
           TurnObserver& observer, ApproveFn approve,
           std::function<std::vector<std::string>()> queued = {});

  // Appends the system prompt (the first call only evaluates it).
  Status start();
  // One user turn: the message, then assistant rounds until one ends without calling a tool.
  // Errors: evaluation failed, or the context is full (the session then holds what was said so
  // far and the turn is over).
  Status run_turn(std::string_view user_text);

  int rounds() const { return rounds_; }  // assistant rounds generated so far

 private:
  struct Round {
    std::vector<TokenId> tokens;  // taken, the last one (EOS or the block's close) not evaluated
    std::string raw;
    bool eos = false;  // ended by EOS (else by a closed block or the token limit)
  };
  Result<Round> generate_round();
  Status append(std::vector<TokenId> tokens);
  Status append_user_turn(std::vector<chat::ContentBlock> blocks, std::string_view what);
  std::string run_calls(const std::vector<ToolCall>& calls);
  std::vector<chat::ContentBlock> queued_blocks();

  Session& session_;
  const Tokenizer& tok_;
  ToolContext& tools_;
  TurnLoopOptions options_;
  TurnObserver& observer_;
  ApproveFn approve_;
  std::function<std::vector<std::string>()> queued_;
  Rng rng_;
  std::vector<TokenId> pending_;  // taken but not evaluated yet (a round's last token, its EOS)
  int rounds_ = 0;
};

// Input queued during a turn, as one user message's text: the text itself, or several as
// "Queued user message i:" sections.
std::string join_queued(const std::vector<std::string>& texts);

}  // namespace ds4::agent
