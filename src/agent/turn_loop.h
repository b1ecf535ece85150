// src/agent/turn_loop.h: the agent's turn loop over one engine session (features.md §5.5, §5.9).
// Owns: the session's transcript as tokens appended in order -- the system prompt once, then per
// user turn the user message and assistant rounds, each round followed by EOS and, when it called
// tools, by the combined tool result as a user turn -- without re-evaluating what the session
// already holds; each round generated on the shared generation core (gen::Generation: greedy
// inside DSML structure, its end at a closed tool-call block or EOS); its calls read by the DSML
// automaton (round_calls.h), approved (approval.h) and run (dispatch.h); an invalid block answered
// by "Tool error: invalid DSML tool call: ..." and the syntax reminder; input queued during a
// turn appended with the next tool result; the context guard; compaction (compaction.h) at its
// soft and hard triggers; interruption between prefill pieces and generated tokens; the system
// prompt's checkpoint in memory (a reset, a rebuild and a compaction start from it); the test
// hook's scripted rounds.
// Does not own: the terminal, threads or input (the app), session files (session_store.h), the
// tools (dispatch.h), rendering rules (chat/), the engine.
#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/approval.h"
#include "agent/dispatch.h"
#include "agent/system_prompt.h"
#include "agent/tool_context.h"
#include "decode/decoder.h"
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
  decode::Drafting drafting;     // MTP drafts per step in assistant rounds (--mtp, --mtp-draft)
  int max_round_tokens = 50000;  // -n: tokens one assistant round may generate
  std::string extra_system;      // --system text, appended as plain text
  // Tokens evaluated between two progress reports and interruption checks.
  int prefill_piece = 2048;
  // Set by the owner (Ctrl+C) to stop the prefill, generation or compaction under way at its next
  // piece or token; the loop only reads it.
  const std::atomic<bool>* interrupt = nullptr;
  // Test hook (the app's hidden --test-scripted-output): the i-th generation -- assistant rounds
  // and compaction summaries, in order -- takes the i-th text's tokens, then EOS, instead of
  // sampling (the session still evaluates each, as the server's forced output does); generations
  // after the last one sample.
  std::vector<std::string> scripted_rounds;
};

// How a turn, a compaction or a rebuild ended when it did not fail.
enum class TurnEnd { kDone, kInterrupted };

// What the loop tells its owner, on the worker thread, as it happens.
class TurnObserver {
 public:
  virtual ~TurnObserver() = default;
  // Tokens appended to the session that the model did not generate (system, user, tool turns).
  virtual void on_prompt(std::string_view /*what*/, std::string_view /*text*/, int /*tokens*/) {}
  // Evaluation of tokens the model did not generate: `done` of `total` so far.
  virtual void on_prefill(int /*done*/, int /*total*/) {}
  // The generation core's events of the round being generated (reasoning, text, call pieces),
  // then the count of tokens generated so far in the round and whether the next is drawn greedily.
  virtual void on_output(const std::vector<gen::Event>& /*events*/) {}
  virtual void on_token(int /*generated*/, bool /*greedy*/) {}
  // A round ended: its raw bytes and token count.
  // `drafts`: the round's MTP drafts (all zero without --mtp).
  virtual void on_round(int /*round*/, std::string_view /*raw*/, int /*tokens*/,
                        const decode::Acceptance& /*drafts*/) {}
  // The calls about to run, and the combined tool message the model will read.
  virtual void on_tool_calls(const std::vector<ToolCall>& /*calls*/) {}
  virtual void on_tool_result(std::string_view /*message*/) {}
  // Compaction: it began with `used` tokens; the summary's text as it is written; it ended
  // (`st` ok, or why the old transcript was kept) with the transcript at `after` tokens.
  virtual void on_compaction_begin(int /*used*/) {}
  virtual void on_summary(std::string_view /*text*/) {}
  virtual void on_compaction_end(const Status& /*st*/, int /*before*/, int /*after*/) {}
  // Evaluation of the user's or a tool's turn was interrupted after `kept` of its `total` tokens:
  // the model saw only those.
  virtual void on_prefill_interrupted(int /*kept*/, int /*total*/) {}
};

class TurnLoop {
 public:
  // Everything is borrowed and must outlive the loop; `approve` is asked before each call that
  // needs approval (approval.h); `queued` (may be empty) hands over input that arrived during a
  // turn, appended with the next tool result.
  TurnLoop(Session& session, const Tokenizer& tok, ToolContext& tools, TurnLoopOptions options,
           TurnObserver& observer, ApproveFn approve,
           std::function<std::vector<std::string>()> queued = {});

  // Renders the session's first tokens (system_prompt.h) for these options, once; start() calls
  // it. system_tokens() is empty before.
  Status render_system();
  const std::vector<TokenId>& system_tokens() const { return system_; }
  // Starts the transcript with the system prompt: from `checkpoint` (a payload of exactly those
  // tokens, e.g. the sysprompt file) when it loads and holds them, else evaluated. Afterwards
  // system_checkpoint() holds its payload; from_checkpoint() says which way it went.
  Status start(std::span<const uint8_t> checkpoint = {});
  const std::vector<uint8_t>& system_checkpoint() const { return system_payload_; }
  bool from_checkpoint() const { return from_checkpoint_; }
  // Back to the system prompt alone (the in-memory checkpoint; /new).
  Status reset();
  // Adopts a saved session: `payload` (Session::save bytes) goes into the session as is; nothing
  // is evaluated. Errors leave the loop at the system prompt.
  Status load(std::span<const uint8_t> payload);
  // Makes the transcript `tokens` (a stripped session's text) and evaluates it from the system
  // checkpoint when it starts with the system prompt. Interrupted: the loop is back at the
  // system prompt alone.
  Result<TurnEnd> rebuild(std::vector<TokenId> tokens);

  // One user turn: the message, then assistant rounds until one ends without calling a tool.
  // Interrupted (prefill, generation, compaction): the turn is over, the transcript holds what
  // was evaluated, closed by EOS. Errors: evaluation failed, or the context is full even after
  // compaction (the session then holds what was said so far and the turn is over).
  Result<TurnEnd> run_turn(std::string_view user_text);
  // Compacts now (/compact): summary, rebuild, re-evaluation. Interrupted or failed: the old
  // transcript is kept (and evaluated again before the next turn: the live state saw the
  // request).
  Result<TurnEnd> compact();
  // Evaluates what is taken but not yet evaluated (a round's EOS) so that the session's state
  // holds the whole transcript (before a save).
  Status flush();

  // The think mode of the turns from now on (/think, /nothink); the system prompt stays.
  void set_think(chat::ThinkMode think) { options_.mode.think = think; }
  chat::ThinkMode think() const { return options_.mode.think; }

  const std::vector<TokenId>& transcript() const { return transcript_; }
  int rounds() const { return rounds_; }  // assistant rounds generated so far
  // Tokens the engine evaluated for this loop (EvalStats), generated ones included.
  int64_t evaluated() const { return evaluated_; }
  // MTP drafts verified and kept in this loop's assistant rounds.
  const decode::Acceptance& acceptance() const { return acceptance_; }
  int compactions() const { return compactions_; }

 private:
  struct Round {
    int tokens = 0;
    std::string raw;
    bool interrupted = false;
    std::string preflight;  // the round was stopped: its edit's old text selects no one range
    decode::Acceptance drafts;
  };
  bool interrupted() const;
  // Brings the session to the whole transcript in pieces (progress, interruption). Interrupted:
  // returns false, the session holds a prefix of the transcript.
  Result<bool> catch_up(bool interruptible);
  // Appends a turn the model did not generate and evaluates it. Interrupted: the transcript keeps
  // the evaluated part, closed by EOS.
  Result<bool> feed(std::vector<TokenId> tokens, std::string_view what);
  Result<bool> append_user_turn(std::vector<chat::ContentBlock> blocks, std::string_view what);
  // The generation's scripted text (test hook), if any is left.
  std::vector<TokenId> next_scripted();
  Result<Round> generate_round();
  Result<TurnEnd> compact_if_needed(int incoming);
  Result<TurnEnd> compact_now();
  Result<std::string> write_summary(bool* interrupted);
  std::string run_calls(const std::vector<ToolCall>& calls);
  std::vector<chat::ContentBlock> queued_blocks();
  int used() const { return static_cast<int>(transcript_.size()); }

  Session& session_;
  const Tokenizer& tok_;
  ToolContext& tools_;
  TurnLoopOptions options_;
  TurnObserver& observer_;
  ApproveFn approve_;
  std::function<std::vector<std::string>()> queued_;
  Rng rng_;
  std::vector<TokenId> system_;
  std::vector<uint8_t> system_payload_;
  bool from_checkpoint_ = false;
  std::vector<TokenId> transcript_;  // everything said; the session holds a prefix of it
  int rounds_ = 0;
  size_t scripted_next_ = 0;
  int64_t evaluated_ = 0;
  decode::Acceptance acceptance_;
  int compactions_ = 0;
};

// Input queued during a turn, as one user message's text: the text itself, or several as
// "Queued user message i:" sections.
std::string join_queued(const std::vector<std::string>& texts);

}  // namespace ds4::agent
