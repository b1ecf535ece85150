// src/serve/scheduler_step.cpp: one iteration of continuous batching. Every running request is
// advanced by the same Engine::step call: first each request's cancel flag (a cancelled or
// shutting-down request ends here, so its rows are gone from this step on), then one decode row
// per decoding request (its token sampled from its session's logits and streamed before it is
// evaluated, exactly as a request alone), then prefill chunks in arrival order, each at most
// --prefill-chunk tokens and together within what the step's token budget has left, and, while
// requests decode and the prefilling ones do not outnumber them, within the pacer's quantum
// (prefill_pacer.h: the step then takes about --itl-target-ms). A long prompt therefore takes
// several steps and holds back the decoding streams for about one target step each; a burst of
// new prompts takes full chunks until as many requests decode as still prefill.
#include <algorithm>
#include <chrono>
#include <optional>

#include "serve/scheduler.h"
#include "serve/scheduler_parts.h"

namespace ds4::serve {

void Scheduler::step() {
  order_.clear();
  for (auto& slot : slots_) {
    if (slot->active) order_.push_back(slot.get());
  }
  std::sort(order_.begin(), order_.end(),
            [](const Slot* x, const Slot* y) { return x->active->arrival < y->active->arrival; });
  for (Slot*& slot : order_) {
    if (slot->active->ticket->cancelled()) {
      finish(*slot, FinishReason::kCancelled);
    } else if (stopping_) {
      finish(*slot, FinishReason::kError, Status::unavailable("server shutting down"));
    }
    if (!slot->active) slot = nullptr;
  }
  std::erase(order_, nullptr);

  entries_.clear();
  entry_slots_.clear();
  draws_.clear();
  size_t decoding = 0;
  for (Slot* slot : order_) {
    if (!slot->active->decoding) continue;
    ++decoding;
    if (!slot->active->carried) {
      draws_.push_back(prepare_draw(*slot));
    } else if (disk_) {
      before_decode(*slot);  // its token was taken in the step before, without a draw
    }
  }
  picks_.clear();
  for (const Draw& d : draws_) {
    if (d.draw.forced) continue;
    picks_.push_back(
        {.session = d.slot->session.get(), .params = d.draw.params, .rng = &d.slot->active->rng});
  }
  engine_->pick(picks_, [this](int64_t n, const std::function<void(int64_t)>& task) {
    sample_pool_.parallel_for(n, task);
  });
  for (size_t i = 0, k = 0; i < draws_.size(); ++i) {
    if (!draws_[i].draw.forced) draws_[i].sampled = picks_[k++].token;
  }
  size_t budget = static_cast<size_t>(options_.batch_tokens);
  // The rows the step can give drafts: batch_tokens >= sessions leaves every decode row one.
  size_t spare = budget > decoding ? budget - decoding : 0;
  for (const Draw& d : draws_) take_token(*d.slot, d);
  for (Slot* slot : order_) {
    // A decoding request still running has its token to evaluate: with its drafts as a
    // verification entry of the step, or as one row.
    if (!slot->active || !slot->active->decoding) continue;
    if (drafts_now(*slot, decoding) && prepare_verification(*slot, spare)) {
      Active& a = *slot->active;
      entries_.push_back({.session = slot->session.get(), .tokens = a.run, .accept = &a.accept});
      entry_slots_.push_back(slot);
      budget -= a.run.size();
      spare -= a.run.size() - 1;
      continue;
    }
    slot->active->carried = false;
    entries_.push_back({.session = slot->session.get(),
                        .tokens = std::span<const TokenId>(&slot->active->next, 1)});
    entry_slots_.push_back(slot);
    --budget;  // batch_tokens >= sessions: every decode row fits
  }
  const size_t decode_rows = static_cast<size_t>(options_.batch_tokens) - budget;
  const size_t decoding_now = entries_.size();  // requests with a decode or verification entry
  const size_t prefilling =
      static_cast<size_t>(std::count_if(order_.begin(), order_.end(), [](const Slot* s) {
        return s->active && !s->active->decoding;
      }));
  size_t prompt_budget = pacer_.rows(decoding_now, prefilling, budget);
  for (Slot* slot : order_) {
    Active* a = slot->active.get();
    if (!a || a->decoding) continue;
    const size_t from = static_cast<size_t>(slot->session->n_tokens());
    const size_t room = std::min(prompt_budget, static_cast<size_t>(options_.prefill_chunk));
    if (room == 0 && from < a->prompt.size()) continue;  // the budget is spent: next step
    size_t target = std::min(a->prompt.size(), from + room);
    if (disk_ && target > from) target = chunk_stop(*slot, from, target);
    a->target = target;
    entries_.push_back(
        {.session = slot->session.get(),
         .tokens = std::span<const TokenId>(a->prompt).subspan(from, target - from)});
    entry_slots_.push_back(slot);
    budget -= target - from;
    prompt_budget -= target - from;
  }
  if (entries_.empty()) return;

  // Entry refusals come back per entry; a whole-step failure sets every entry's status too.
  const auto started = std::chrono::steady_clock::now();
  (void)engine_->step(entries_);
  pacer_.observe(decoding_now, prefilling,
                 static_cast<size_t>(options_.batch_tokens) - budget - decode_rows,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  quantum_.store(pacer_.quantum());
  if (const size_t rows = static_cast<size_t>(options_.batch_tokens) - budget; rows > 0) {
    steps_.fetch_add(1);
    rows_.fetch_add(rows);
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    Slot& slot = *entry_slots_[i];
    if (!entries_[i].status.is_ok()) {
      finish(slot, FinishReason::kError, std::move(entries_[i].status));
    } else if (entries_[i].accept != nullptr) {
      after_verification(slot, entries_[i]);
    } else if (!slot.active->decoding) {
      after_prefill(slot);
    }
  }
}

Scheduler::Draw Scheduler::prepare_draw(Slot& slot) {
  Active& a = *slot.active;
  if (disk_) before_decode(slot);
  // The generation core decides: a forced token, or the model's sample (drawn next, greedy on
  // DSML structure) as the forced shape allows it.
  return Draw{.slot = &slot, .draw = a.gen.draw(a.request.sampling, a.limit - a.generated)};
}

std::optional<FinishReason> Scheduler::take_drawn(Slot& slot, const Draw& d) {
  Active& a = *slot.active;
  ++a.generated;
  std::vector<Event> events;
  const gen::Generation::Taken t = a.gen.take(d.draw, d.sampled, &events);
  a.ticket->push(&events);
  if (t.end) return *t.end;
  a.next = t.id;
  if (a.generated >= a.limit) return FinishReason::kLength;
  return std::nullopt;
}

bool Scheduler::take_token(Slot& slot, const Draw& d) {
  const std::optional<FinishReason> end = take_drawn(slot, d);
  if (end) finish(slot, *end);
  return !end;
}

void Scheduler::after_prefill(Slot& slot) {
  Active& a = *slot.active;
  if (disk_) after_prefill_chunk(slot);
  if (a.target < a.prompt.size()) return;
  a.decoding = true;
  a.limit = std::max(
      0, std::min(a.request.max_tokens, options_.n_ctx - static_cast<int>(a.prompt.size()) - 1));
  if (a.limit == 0) finish(slot, FinishReason::kLength);
}

}  // namespace ds4::serve
