// src/agent/turn_loop.cpp: user turn -> assistant rounds -> tool results, on one session.
#include "agent/turn_loop.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "agent/compaction.h"
#include "agent/edit_watch.h"
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

bool starts_with(std::span<const TokenId> all, std::span<const TokenId> head) {
  return all.size() >= head.size() && std::equal(head.begin(), head.end(), all.begin());
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
      rng_(options_.sampling.seed) {
  options_.prefill_piece = std::max(options_.prefill_piece, 1);
}

bool TurnLoop::interrupted() const {
  return options_.interrupt != nullptr && options_.interrupt->load(std::memory_order_relaxed);
}

Result<bool> TurnLoop::catch_up(bool interruptible) {
  const std::span<const TokenId> live = session_.tokens();
  if (!starts_with(transcript_, live)) {
    // The state holds tokens the transcript does not (a compaction's request, another session):
    // start again from the system prompt's checkpoint when the transcript begins with it.
    if (!system_payload_.empty() && starts_with(transcript_, system_)) {
      DS4_TRY(session_.load(system_payload_));
    } else {
      const size_t first =
          std::min(transcript_.size(), static_cast<size_t>(options_.prefill_piece));
      DS4_ASSIGN_OR_RETURN(EvalStats st, session_.sync({transcript_.data(), first}));
      evaluated_ += st.evaluated;
    }
  }
  const int total = used() - session_.n_tokens();
  int done = 0;
  while (session_.n_tokens() < used()) {
    if (interruptible && interrupted()) return false;
    const int n = std::min(options_.prefill_piece, used() - session_.n_tokens());
    DS4_ASSIGN_OR_RETURN(EvalStats st, session_.append({transcript_.data() + session_.n_tokens(),
                                                        static_cast<size_t>(n)}));
    evaluated_ += st.evaluated;
    done += n;
    observer_.on_prefill(done, total);
  }
  return true;
}

Result<bool> TurnLoop::feed(std::vector<TokenId> tokens, std::string_view what) {
  // The session holds at most n_ctx - 1 tokens (Engine::step).
  if (used() + static_cast<int64_t>(tokens.size()) > session_.n_ctx() - 1) {
    return Status::resource_exhausted(
        "context full: %d tokens held, %zu more do not fit in --ctx %d (start again with a larger "
        "--ctx, or /compact)",
        used(), tokens.size(), session_.n_ctx());
  }
  observer_.on_prompt(what, tok_.decode(tokens), static_cast<int>(tokens.size()));
  const size_t before = transcript_.size();
  transcript_.insert(transcript_.end(), tokens.begin(), tokens.end());
  DS4_ASSIGN_OR_RETURN(bool whole, catch_up(/*interruptible=*/true));
  if (whole) return true;
  // The model saw only the evaluated prefix of this turn: that is what the transcript keeps,
  // closed by EOS.
  const size_t kept = std::max(before, static_cast<size_t>(session_.n_tokens()));
  transcript_.resize(kept);
  transcript_.push_back(tok_.special_ids().eos);
  observer_.on_prefill_interrupted(static_cast<int>(kept - before),
                                   static_cast<int>(tokens.size()));
  return false;
}

Status TurnLoop::render_system() {
  if (!system_.empty()) return Status::ok();
  DS4_ASSIGN_OR_RETURN(system_, system_prompt_tokens(tok_, options_.mode, options_.extra_system));
  return Status::ok();
}

Status TurnLoop::start(std::span<const uint8_t> checkpoint) {
  DS4_TRY(render_system());
  if (static_cast<int>(system_.size()) > session_.n_ctx() - 1) {
    return Status::resource_exhausted("the system prompt (%zu tokens) does not fit in --ctx %d",
                                      system_.size(), session_.n_ctx());
  }
  from_checkpoint_ = false;
  if (!checkpoint.empty() && session_.load(checkpoint).is_ok() &&
      std::ranges::equal(session_.tokens(), system_)) {
    from_checkpoint_ = true;
    system_payload_.assign(checkpoint.begin(), checkpoint.end());
  }
  observer_.on_prompt("system", tok_.decode(system_), static_cast<int>(system_.size()));
  transcript_ = system_;
  if (from_checkpoint_) return Status::ok();
  system_payload_.clear();
  DS4_TRY(catch_up(/*interruptible=*/false).status());
  DS4_ASSIGN_OR_RETURN(system_payload_, session_.save());
  return Status::ok();
}

Status TurnLoop::reset() {
  if (system_payload_.empty()) return Status::internal("the turn loop was not started");
  DS4_TRY(session_.load(system_payload_));
  transcript_ = system_;
  return Status::ok();
}

Status TurnLoop::load(std::span<const uint8_t> payload) {
  if (Status st = session_.load(payload); !st.is_ok()) {
    DS4_TRY(reset());
    return st;
  }
  transcript_.assign(session_.tokens().begin(), session_.tokens().end());
  return Status::ok();
}

Result<TurnEnd> TurnLoop::rebuild(std::vector<TokenId> tokens) {
  if (tokens.empty() || static_cast<int>(tokens.size()) > session_.n_ctx() - 1) {
    return Status::resource_exhausted("a transcript of %zu tokens does not fit in --ctx %d",
                                      tokens.size(), session_.n_ctx());
  }
  transcript_ = std::move(tokens);
  Result<bool> whole = catch_up(/*interruptible=*/true);
  if (whole.is_ok() && *whole) return TurnEnd::kDone;
  DS4_TRY(reset());
  if (!whole.is_ok()) return whole.status();
  return TurnEnd::kInterrupted;
}

Status TurnLoop::flush() { return catch_up(/*interruptible=*/false).status(); }

std::vector<TokenId> TurnLoop::next_scripted() {
  if (scripted_next_ >= options_.scripted_rounds.size()) return {};
  std::vector<TokenId> out =
      tok_.encode(options_.scripted_rounds[scripted_next_++], SpecialTokens::kRecognize);
  out.push_back(tok_.special_ids().eos);
  return out;
}

Result<bool> TurnLoop::append_user_turn(std::vector<chat::ContentBlock> blocks,
                                        std::string_view what) {
  DS4_ASSIGN_OR_RETURN(std::vector<TokenId> tokens, user_turn_tokens(tok_, options_.mode, blocks));
  const bool tool_turn = blocks.front().kind == chat::ContentBlockKind::kToolResult;
  const auto fits = [&](size_t n, int reserve) {
    return used() + static_cast<int64_t>(n) + reserve <= session_.n_ctx() - 1;
  };
  if (tool_turn && !fits(tokens.size(), kToolResultReserveTokens)) {
    // The hard trigger (§5.9): compact, then try again; a result still too big for what is left
    // becomes a short error (the context guard, §5.5).
    DS4_ASSIGN_OR_RETURN(TurnEnd end, compact_now());
    if (end == TurnEnd::kInterrupted) return false;
    if (!fits(tokens.size(), kToolResultReserveTokens)) {
      blocks.front().text = too_big_result(static_cast<int>(tokens.size()));
      DS4_ASSIGN_OR_RETURN(tokens, user_turn_tokens(tok_, options_.mode, blocks));
      if (!fits(tokens.size(), 0)) {
        return Status::resource_exhausted("context full after compaction: %d of %d tokens used",
                                          used(), session_.n_ctx());
      }
    }
  }
  return feed(std::move(tokens), what);
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
  // Room for the round's tokens and the EOS that closes it, within n_ctx - 1.
  int room = session_.n_ctx() - 1 - used() - 1;
  if (room <= 0) {
    DS4_ASSIGN_OR_RETURN(TurnEnd end, compact_now());
    if (end == TurnEnd::kInterrupted) return Round{.interrupted = true};
    room = session_.n_ctx() - 1 - used() - 1;
    if (room <= 0) {
      return Status::resource_exhausted("context full after compaction: %d of %d tokens used",
                                        used(), session_.n_ctx());
    }
  }
  DS4_ASSIGN_OR_RETURN(bool whole, catch_up(/*interruptible=*/true));
  if (!whole) {
    // Only the closing tokens of the previous round can be pending here: keep them.
    return Round{.interrupted = true};
  }
  const int limit = std::min(options_.max_round_tokens, room);
  gen::OutputSpec spec{.thinking = thinking, .tools = true};
  spec.forced = next_scripted();
  gen::Generation g(tok_, std::move(spec));
  // The `edit` call followed as it streams: "[upto]\n" fed in once the head of `old` is unique,
  // the round stopped once a complete `old` selects no single range (features.md §5.5).
  EditWatch watch(tools_.workspace, thinking);
  std::deque<TokenId> feed_next;
  size_t watched = 0;
  Round r;
  const TokenId eos = tok_.special_ids().eos;
  decode::Hooks hooks;
  hooks.replace = [&feed_next](std::span<const float>) -> std::optional<TokenId> {
    if (feed_next.empty()) return std::nullopt;
    const TokenId t = feed_next.front();
    feed_next.pop_front();
    return t;
  };
  // Per token, in order (a verified run of drafts takes several per step): shown, kept in the
  // transcript, and watched.
  hooks.taken = [&](const gen::Generation::Taken& t, std::span<const gen::Event> completed) {
    ++r.tokens;
    observer_.on_output(std::vector<gen::Event>(completed.begin(), completed.end()));
    observer_.on_token(r.tokens, g.dsml_greedy());
    if (!(t.end && t.id == eos)) transcript_.push_back(t.id);
    EditWatch::Action a = watch.feed(std::string_view(g.raw()).substr(watched));
    watched = g.raw().size();
    if (!a.preflight.empty()) {
      r.preflight = std::move(a.preflight);
      return false;  // the token is not evaluated: it goes in with the EOS, as at a round's end
    }
    if (!a.force.empty()) {
      const std::vector<TokenId> f = tok_.encode(a.force, SpecialTokens::kAsText);
      feed_next.assign(f.begin(), f.end());
    }
    return true;
  };
  // The last token is taken but not evaluated: it goes in with the EOS that closes the round.
  decode::Decoder d(session_, g, options_.sampling, rng_, limit, options_.drafting,
                    std::move(hooks));
  std::vector<TokenId> taken;
  std::vector<gen::Event> events;
  while (!d.done()) {
    if (interrupted()) {
      r.interrupted = true;
      break;
    }
    const int before = session_.n_tokens();
    DS4_TRY(d.advance(&taken, &events));
    evaluated_ += session_.n_tokens() - before;
    events.clear();      // shown token by token (hooks.taken)
    tools_.jobs.pump();  // keep background jobs' pipes drained while the model writes
  }
  r.drafts = d.acceptance();
  acceptance_.steps += r.drafts.steps;
  acceptance_.drafted += r.drafts.drafted;
  acceptance_.accepted += r.drafts.accepted;
  events.clear();
  g.finish(&events);
  observer_.on_output(events);
  transcript_.push_back(eos);
  r.raw = g.raw();
  return r;
}

Result<TurnEnd> TurnLoop::run_turn(std::string_view user_text) {
  DS4_ASSIGN_OR_RETURN(TurnEnd end, compact_if_needed(0));
  if (end == TurnEnd::kInterrupted) return end;
  DS4_ASSIGN_OR_RETURN(bool whole,
                       append_user_turn({chat::ContentBlock{.kind = chat::ContentBlockKind::kText,
                                                            .text = std::string(user_text)}},
                                        "user"));
  if (!whole) return TurnEnd::kInterrupted;
  const bool thinking =
      chat::effective_think_mode(options_.mode.think, options_.mode.context_size) !=
      chat::ThinkMode::kNone;
  for (;;) {
    DS4_ASSIGN_OR_RETURN(Round round, generate_round());
    observer_.on_round(rounds_, round.raw, round.tokens, round.drafts);
    ++rounds_;
    if (round.interrupted) return TurnEnd::kInterrupted;
    RoundCalls rc = read_round_calls(round.raw, thinking);
    std::string message;
    if (!round.preflight.empty()) {
      message = preflight_result(round.preflight);
    } else if (!rc.error.empty()) {
      message = std::string(kInvalidDsml) + rc.error + dsml_syntax_reminder();
    } else if (!rc.calls.empty()) {
      message = run_calls(rc.calls);
    } else {
      return TurnEnd::kDone;  // a reply without tools: the turn is over (EOS is pending)
    }
    observer_.on_tool_result(message);
    std::vector<chat::ContentBlock> blocks = {
        {.kind = chat::ContentBlockKind::kToolResult, .text = std::move(message)}};
    for (chat::ContentBlock& b : queued_blocks()) blocks.push_back(std::move(b));
    DS4_ASSIGN_OR_RETURN(end, compact_if_needed(0));
    if (end == TurnEnd::kInterrupted) return end;
    DS4_ASSIGN_OR_RETURN(whole, append_user_turn(std::move(blocks), "tool"));
    if (!whole) return TurnEnd::kInterrupted;
  }
}

Result<TurnEnd> TurnLoop::compact() { return compact_now(); }

Result<TurnEnd> TurnLoop::compact_if_needed(int incoming) {
  if (!needs_compaction(used() + incoming, session_.n_ctx())) return TurnEnd::kDone;
  return compact_now();
}

Result<std::string> TurnLoop::write_summary(bool* was_interrupted) {
  const int limit = std::min(kSummaryMaxTokens, session_.n_ctx() - 1 - used());
  gen::OutputSpec spec{.thinking = false, .tools = false};
  spec.forced = next_scripted();
  gen::Generation g(tok_, std::move(spec));
  // Greedy: the summary is a record, not a creative text.
  const SamplingParams greedy{.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
  const SpecialIds& ids = tok_.special_ids();
  std::string text;
  std::vector<gen::Event> events;
  const auto show = [&] {
    for (const gen::Event& e : events) {
      if (e.kind != gen::EventKind::kText && e.kind != gen::EventKind::kReasoning) continue;
      text += e.text;
      observer_.on_summary(e.text);
    }
    events.clear();
  };
  for (int i = 0; i < limit; ++i) {
    if (interrupted()) {
      *was_interrupted = true;
      return text;
    }
    const gen::Generation::Draw d = g.draw(greedy, limit - i);
    const TokenId sampled = d.forced ? *d.forced : session_.sample(d.params, rng_);
    // The summary ends at EOS, at a thinking tag or at DSML (it was asked for neither).
    if (sampled == ids.eos || sampled == ids.think_end || sampled == ids.think_start ||
        sampled == ids.dsml) {
      break;
    }
    const gen::Generation::Taken t = g.take(d, sampled, &events);
    show();
    transcript_.push_back(t.id);
    if (t.end) break;
    DS4_TRY(session_.eval(t.id));
    ++evaluated_;
  }
  g.finish(&events);
  show();
  return text;
}

Result<TurnEnd> TurnLoop::compact_now() {
  const int before = used();
  observer_.on_compaction_begin(before);
  std::vector<TokenId> old = transcript_;
  // Whatever happens, the transcript is either the rebuilt one or the old one; the live state
  // may hold the private request (catch_up() starts again from the checkpoint then).
  const auto give_up = [&](Status st) -> Result<TurnEnd> {
    transcript_ = std::move(old);
    observer_.on_compaction_end(st, before, used());
    return TurnEnd::kDone;
  };
  const auto interrupted_end = [&]() -> Result<TurnEnd> {
    transcript_ = std::move(old);
    observer_.on_compaction_end(Status::unavailable("interrupted"), before, used());
    return TurnEnd::kInterrupted;
  };
  PromptMode plain = options_.mode;
  plain.think = chat::ThinkMode::kNone;
  const std::vector<chat::ContentBlock> ask = {
      {.kind = chat::ContentBlockKind::kText, .text = std::string(compaction_request())}};
  DS4_ASSIGN_OR_RETURN(std::vector<TokenId> request, user_turn_tokens(tok_, plain, ask));
  const int room = session_.n_ctx() - 1 - before - static_cast<int>(request.size());
  if (room < kSummaryMinTokens) {
    return give_up(
        Status::resource_exhausted("no room left to write a summary (%d tokens free of %d)",
                                   session_.n_ctx() - 1 - before, session_.n_ctx()));
  }
  observer_.on_prompt("compaction request", tok_.decode(request), static_cast<int>(request.size()));
  transcript_.insert(transcript_.end(), request.begin(), request.end());
  DS4_ASSIGN_OR_RETURN(bool whole, catch_up(/*interruptible=*/true));
  if (!whole) return interrupted_end();
  bool stopped = false;
  DS4_ASSIGN_OR_RETURN(std::string raw, write_summary(&stopped));
  if (stopped) return interrupted_end();
  std::string summary = clean_summary(raw);
  if (summary.empty()) return give_up(Status::unavailable("the model wrote an empty summary"));
  if (const std::string jobs = tools_.jobs.summary(); !jobs.empty()) {
    summary += "\n\nShell jobs still registered:\n" + jobs;
  }
  const size_t bottom = old.size();
  const size_t tail =
      tail_start(old, system_.size(), bottom, session_.n_ctx(), tok_.special_ids().user);
  std::vector<TokenId> rebuilt = system_;
  tok_.encode_append(summary_opening() + summary + summary_closing(), SpecialTokens::kAsText,
                     &rebuilt);
  rebuilt.insert(rebuilt.end(), old.begin() + static_cast<std::ptrdiff_t>(tail), old.end());
  if (rebuilt.size() >= bottom) {
    return give_up(Status::unavailable(
        "the summary and the kept turns (%zu tokens) would not shrink the transcript (%zu)",
        rebuilt.size(), bottom));
  }
  transcript_ = std::move(rebuilt);
  DS4_ASSIGN_OR_RETURN(whole, catch_up(/*interruptible=*/true));
  if (!whole) return interrupted_end();
  ++compactions_;
  observer_.on_compaction_end(Status::ok(), before, used());
  return TurnEnd::kDone;
}

}  // namespace ds4::agent
