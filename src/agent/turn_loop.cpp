// src/agent/turn_loop.cpp: user turn -> assistant rounds -> tool results, on one session.
#include "agent/turn_loop.h"

#include <algorithm>
#include <utility>

#include "agent/round_calls.h"
#include "agent/turn_text.h"
#include "gen/generation.h"

namespace ds4::agent {
namespace {

constexpr std::string_view kInvalidDsml = "Tool error: invalid DSML tool call: ";

std::string too_big_result(int tokens) {
  return "Tool error: the tool result (" + std::to_string(tokens) +
         " tokens) does not fit in the context. Ask for less output: a smaller line range, "
         "max_lines, a narrower search, or head/tail of a command's output.";
}

}  // namespace

std::string join_queued(const std::vector<std::string>& texts) {
  if (texts.size() == 1) return texts[0];
  std::string out;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) out += "\n\n";
    out += "Queued user message " + std::to_string(i + 1) + ":\n" + texts[i];
  }
  return out;
}

TurnLoop::TurnLoop(Session& session, const Tokenizer& tok, ToolContext& tools,
                   TurnLoopOptions options, TurnObserver& observer, ApproveFn approve,
                   std::function<std::vector<std::string>()> queued)
    : session_(session),
      tok_(tok),
      tools_(tools),
      options_(std::move(options)),
      observer_(observer),
      approve_(std::move(approve)),
      queued_(std::move(queued)),
      rng_(options_.sampling.seed) {}

Status TurnLoop::append(std::vector<TokenId> tokens) {
  std::vector<TokenId> all = std::move(pending_);
  pending_.clear();
  all.insert(all.end(), tokens.begin(), tokens.end());
  // The session holds at most n_ctx - 1 tokens (Engine::step).
  if (session_.n_tokens() + static_cast<int64_t>(all.size()) > session_.n_ctx() - 1) {
    return Status::resource_exhausted(
        "context full: %d tokens held, %zu more do not fit in --ctx %d (no compaction yet: start "
        "again with a larger --ctx)",
        session_.n_tokens(), all.size(), session_.n_ctx());
  }
  return session_.append(all).status();
}

Status TurnLoop::start() {
  DS4_ASSIGN_OR_RETURN(std::vector<TokenId> tokens,
                       system_prompt_tokens(tok_, options_.mode, options_.extra_system));
  observer_.on_prompt("system", tok_.decode(tokens), static_cast<int>(tokens.size()));
  return append(std::move(tokens));
}

Status TurnLoop::append_user_turn(std::vector<chat::ContentBlock> blocks, std::string_view what) {
  DS4_ASSIGN_OR_RETURN(std::vector<TokenId> tokens, user_turn_tokens(tok_, options_.mode, blocks));
  const bool tool_turn = blocks.front().kind == chat::ContentBlockKind::kToolResult;
  const int64_t held = session_.n_tokens() + static_cast<int64_t>(pending_.size());
  if (tool_turn &&
      held + static_cast<int64_t>(tokens.size()) + kToolResultReserveTokens > session_.n_ctx()) {
    // The context guard (§5.5): a result too big for what is left becomes a short error.
    blocks.front().text = too_big_result(static_cast<int>(tokens.size()));
    DS4_ASSIGN_OR_RETURN(tokens, user_turn_tokens(tok_, options_.mode, blocks));
  }
  observer_.on_prompt(what, tok_.decode(tokens), static_cast<int>(tokens.size()));
  return append(std::move(tokens));
}

std::vector<chat::ContentBlock> TurnLoop::queued_blocks() {
  if (!queued_) return {};
  const std::vector<std::string> texts = queued_();
  if (texts.empty()) return {};
  return {chat::ContentBlock{.kind = chat::ContentBlockKind::kText, .text = join_queued(texts)}};
}

std::string TurnLoop::run_calls(const std::vector<ToolCall>& calls) {
  observer_.on_tool_calls(calls);
  std::vector<ToolResult> results;
  results.reserve(calls.size());
  for (const ToolCall& call : calls) {
    const std::string reason = approval_reason(tools_.workspace, call);
    if (!reason.empty() && !(approve_ && approve_(call, reason))) {
      results.push_back(denied_result(reason));
    } else {
      results.push_back(run_tool(tools_, call));
    }
  }
  return combine_tool_results(calls, results);
}

Result<TurnLoop::Round> TurnLoop::generate_round() {
  const bool thinking =
      chat::effective_think_mode(options_.mode.think, options_.mode.context_size) !=
      chat::ThinkMode::kNone;
  const int room = session_.n_ctx() - session_.n_tokens() - kRoundClosingTokens;
  if (room <= 0) {
    return Status::resource_exhausted("context full: %d of %d tokens used (no compaction yet)",
                                      session_.n_tokens(), session_.n_ctx());
  }
  const int limit = std::min(options_.max_round_tokens, room);
  gen::OutputSpec spec{.thinking = thinking, .tools = true};
  if (static_cast<size_t>(rounds_) < options_.scripted_rounds.size()) {
    spec.forced = tok_.encode(options_.scripted_rounds[rounds_], SpecialTokens::kRecognize);
    spec.forced.push_back(tok_.special_ids().eos);
  }
  gen::Generation g(tok_, std::move(spec));
  Round r;
  std::vector<gen::Event> events;
  for (int i = 0; i < limit; ++i) {
    const gen::Generation::Draw d = g.draw(options_.sampling, limit - i);
    const TokenId sampled = d.forced ? *d.forced : session_.sample(d.params, rng_);
    events.clear();
    const gen::Generation::Taken t = g.take(d, sampled, &events);
    r.tokens.push_back(t.id);
    observer_.on_output(events);
    if (t.end) {
      // The last token is taken but not evaluated: it goes in with the EOS that closes the round.
      r.eos = t.id == tok_.special_ids().eos;
      if (!r.eos) pending_.push_back(t.id);
      break;
    }
    DS4_TRY(session_.eval(t.id));
    tools_.jobs.pump();  // keep background jobs' pipes drained while the model writes
  }
  events.clear();
  g.finish(&events);
  observer_.on_output(events);
  pending_.push_back(tok_.special_ids().eos);
  r.raw = g.raw();
  return r;
}

Status TurnLoop::run_turn(std::string_view user_text) {
  DS4_TRY(append_user_turn(
      {chat::ContentBlock{.kind = chat::ContentBlockKind::kText, .text = std::string(user_text)}},
      "user"));
  const bool thinking =
      chat::effective_think_mode(options_.mode.think, options_.mode.context_size) !=
      chat::ThinkMode::kNone;
  for (;;) {
    DS4_ASSIGN_OR_RETURN(Round round, generate_round());
    observer_.on_round(rounds_, round.raw, static_cast<int>(round.tokens.size()));
    ++rounds_;
    RoundCalls rc = read_round_calls(round.raw, thinking);
    std::string message;
    if (!rc.error.empty()) {
      message = std::string(kInvalidDsml) + rc.error + dsml_syntax_reminder();
    } else if (!rc.calls.empty()) {
      message = run_calls(rc.calls);
    } else {
      return Status::ok();  // a reply without tools: the turn is over (EOS is pending)
    }
    observer_.on_tool_result(message);
    std::vector<chat::ContentBlock> blocks = {
        {.kind = chat::ContentBlockKind::kToolResult, .text = std::move(message)}};
    for (chat::ContentBlock& b : queued_blocks()) blocks.push_back(std::move(b));
    DS4_TRY(append_user_turn(std::move(blocks), "tool"));
  }
}

}  // namespace ds4::agent
