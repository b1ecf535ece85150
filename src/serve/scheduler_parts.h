// src/serve/scheduler_parts.h: the scheduler's private records (scheduler.cpp, scheduler_admit.cpp,
// scheduler_step.cpp and scheduler_disk.cpp): a waiting request, a request placed into a session,
// and a pool slot.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gen/generation.h"
#include "serve/scheduler.h"

namespace ds4::serve {

struct Scheduler::Waiting {
  Request request;
  std::shared_ptr<Ticket> ticket;
};

// A request admitted into a session.
struct Scheduler::Active {
  Active(const Tokenizer& tok, Request r, std::shared_ptr<Ticket> t, uint64_t seed, uint64_t order)
      : request(std::move(r)),
        ticket(std::move(t)),
        rng(seed),
        gen(tok, request.output),
        arrival(order) {}
  Request request;
  std::shared_ptr<Ticket> ticket;
  Rng rng;
  gen::Generation gen;
  uint64_t arrival;             // admission order: prefill chunks share a step's budget by it
  std::vector<TokenId> prompt;  // the effective prompt (prefix_match.h), set by place()
  bool decoding = false;
  int cached = 0;
  int generated = 0;
  int limit = 0;      // tokens this request may still sample in total
  TokenId next = 0;   // decoding: the token sampled this step, evaluated by the step
  size_t target = 0;  // prefilling: the prompt length the session reaches with this step
  // Drafting (scheduler_draft.cpp): `next` was taken in the step before, in place of a refused
  // draft, and is evaluated by this one without a draw.
  bool carried = false;
  bool drafting = true;  // false once its acceptance stayed too low
  decode::Acceptance acceptance;
  // This step's verification, when it drafts: the token taken and its drafts, the request's rule
  // that keeps them (StepEntry::accept), and the end a kept token brought, if any.
  std::vector<TokenId> run;
  Session::DraftAccept accept;
  std::optional<FinishReason> run_end;
};

// The refusal of a prompt that does not fit in a session (at submit, and at placement when a
// re-tokenized continuation grew past it).
inline Status prompt_over_context(size_t tokens, int n_ctx) {
  return Status::out_of_range("Prompt has %zu tokens, but the configured context size is %d tokens",
                              tokens, n_ctx);
}

// The disk files a request may load besides token-text ones (kv::KvcQuery::visible_keys), and the
// live bindings it may use: Responses its own, chat and messages the thinking-visible ones.
inline uint8_t visible_keys(Protocol p) {
  switch (p) {
    case Protocol::kResponses: return kv::kKvcResponsesTextFlag;
    case Protocol::kChat: return kv::kKvcThinkingTextFlag;
    case Protocol::kCompletions: break;
  }
  return 0;
}

struct Scheduler::Slot {
  std::unique_ptr<Session> session;
  std::unique_ptr<Active> active;
  uint64_t last_used = 0;  // use_clock_ when a request last left it (0: never used)
  // Disk cache bookkeeping (scheduler_disk.cpp).
  size_t last_stored = 0;  // highest frontier saved or loaded: continued saves go beyond it
  size_t saved_at = 0;     // the session's length when it was last saved or loaded (0: never)
  size_t cold = 0;         // the current request's cold save point (0: none)
  // The visible-transcript binding the last request left (features.md §2.7): the client's
  // rendering of the session without its hidden reasoning, true while the session holds
  // `visible_at` tokens; it keys the evict and shutdown saves (§3.3). Empty: none.
  std::string visible;
  size_t visible_at = 0;
  uint8_t visible_flag = 0;  // kv::kKvcResponsesTextFlag or kv::kKvcThinkingTextFlag
  // The decoded text of `text_tokens`, a copy of the session's tokens when it was last needed
  // (choose_slot's text-prefix rule; Scheduler::live_text keeps it in step with the session).
  std::vector<TokenId> text_tokens;
  std::string text;
};

}  // namespace ds4::serve
