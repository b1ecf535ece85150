// src/serve/scheduler_admit.cpp: admission. Waiting requests leave the queue in arrival order
// (FIFO: the oldest is placed first, and a request never overtakes an older one) when a session
// is idle, and each goes to the idle session whose tokens give the longest reusable prefix
// (prefix_match.h: a token prefix, else a decoded-text prefix), else to a free (empty) session,
// else to the least recently used idle one, whose checkpoint the disk cache keeps first when one
// is configured (scheduler_disk.cpp: the evict save).
#include <chrono>

#include "base/check.h"
#include "serve/scheduler.h"
#include "serve/scheduler_parts.h"

namespace ds4::serve {

void Scheduler::take(std::vector<std::unique_ptr<Waiting>>* out) {
  size_t idle = 0;
  for (const auto& slot : slots_) idle += slot->active == nullptr ? 1 : 0;
  while (!queue_.empty()) {
    Waiting& w = *queue_.front();
    if (w.ticket->cancelled()) {
      // The client left while it waited: it ends here, without taking a session.
      w.ticket->push(Event{.kind = EventKind::kDone,
                           .finish = FinishReason::kCancelled,
                           .usage = {.prompt_tokens = static_cast<int>(w.request.prompt.size())}});
    } else if (out->size() < idle) {
      out->push_back(std::move(queue_.front()));
    } else {
      return;
    }
    queue_.pop_front();
  }
}

const std::string& Scheduler::live_text(Slot& slot) {
  const auto live = slot.session->tokens();
  if (common_prefix(slot.text_tokens, live) != slot.text_tokens.size()) {
    slot.text_tokens.clear();  // rewound or replaced: no byte offsets per token, so all again
    slot.text.clear();
  }
  const auto tail = live.subspan(slot.text_tokens.size());
  slot.text += tok_->decode(tail);  // decoding is per token bytes: the text of a prefix extends
  slot.text_tokens.insert(slot.text_tokens.end(), tail.begin(), tail.end());
  return slot.text;
}

Steering Scheduler::steering_of(const Request& request) const {
  return request.steering.value_or(engine_->options().steering);
}

Status Scheduler::steer_session(Session& s, const Steering& want) {
  if (s.steering() == want) return Status::ok();
  if (s.n_tokens() > 0) DS4_TRY(s.rewind(0));
  return s.set_steering(want);
}

Scheduler::Slot* Scheduler::choose_slot(const Request& request, PromptPlan* plan) {
  Slot* reuse = nullptr;
  Slot* empty = nullptr;
  Slot* lru = nullptr;
  PromptPlan lru_plan;  // the miss plan of the least recently used session, kept from the scan
  const Steering want = steering_of(request);
  for (auto& slot : slots_) {
    if (slot->active) continue;
    const Session& s = *slot->session;
    if (s.n_tokens() == 0) {
      if (!empty) empty = slot.get();
      continue;
    }
    if (s.steering() != want) {  // computed with other scales: nothing of it is reusable
      if (!lru || slot->last_used < lru->last_used) {
        lru = slot.get();
        lru_plan = plan_prompt({}, *tok_, request);
      }
      continue;
    }
    PromptPlan p = plan_prompt(s.tokens(), *tok_, request,
                               [&]() -> const std::string& { return live_text(*slot); });
    if (p.source == CacheSource::kMiss) p = plan_visible(*slot, request, std::move(p));
    if (p.source != CacheSource::kMiss) {
      if (!reuse || p.reusable > plan->reusable) {
        reuse = slot.get();
        *plan = std::move(p);
      }
    } else if (!lru || slot->last_used < lru->last_used) {
      lru = slot.get();
      lru_plan = std::move(p);
    }
  }
  if (reuse) return reuse;
  if (empty) {
    *plan = plan_prompt(empty->session->tokens(), *tok_, request);
    return empty;
  }
  if (lru) *plan = std::move(lru_plan);
  return lru;
}

void Scheduler::place(std::unique_ptr<Waiting> w) {
  PromptPlan plan;
  Slot* slot = choose_slot(w->request, &plan);
  DS4_CHECK_MSG(slot != nullptr, "take() handed out more requests than idle sessions");
  uint64_t seed = w->request.sampling.seed;
  ++sequence_;
  if (seed == 0) {
    seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           (sequence_ * 0x9e3779b97f4a7c15ull);
  }
  slot->active =
      std::make_unique<Active>(*tok_, std::move(w->request), std::move(w->ticket), seed, sequence_);
  running_.fetch_add(1);
  Active& a = *slot->active;
  Session& s = *slot->session;
  const Steering want = steering_of(a.request);
  if (disk_ && plan.source == CacheSource::kMiss) plan = disk_miss(*slot, std::move(plan), want);
  if (Status st = steer_session(s, want); !st.is_ok())
    return finish(*slot, FinishReason::kError, st);
  // The last request's visible-transcript binding ends here (its evict save, if any, is done).
  slot->visible.clear();
  slot->visible_at = 0;
  a.prompt = std::move(plan.tokens);
  if (a.prompt.size() >= static_cast<size_t>(options_.n_ctx)) {
    // Only a re-tokenized text continuation can grow past the context (submit checked the rest).
    return finish(*slot, FinishReason::kError,
                  prompt_over_context(a.prompt.size(), options_.n_ctx));
  }
  // A session keeps its tokens only when they are a prefix of the prompt; otherwise it starts
  // again from position 0 (session.h: the CPU state cannot drop rows), which the first prefill
  // chunk then rebuilds.
  const auto live = s.tokens();
  if (common_prefix(live, a.prompt) != live.size()) {
    if (Status st = s.rewind(0); !st.is_ok()) return finish(*slot, FinishReason::kError, st);
  }
  a.cached = s.n_tokens();
}

}  // namespace ds4::serve
