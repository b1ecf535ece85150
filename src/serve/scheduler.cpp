// src/serve/scheduler.cpp: admission, per-step prefill and decode, finishing requests.
#include "serve/scheduler.h"

#include <algorithm>
#include <chrono>

#include "serve/scheduler_parts.h"

namespace ds4::serve {

Result<std::unique_ptr<Scheduler>> Scheduler::start(std::unique_ptr<Engine> engine,
                                                    const Tokenizer& tok,
                                                    const SchedulerOptions& options,
                                                    ReplayMap* replay, DiskCache* disk) {
  if (options.max_queue < 0 || options.sessions < 1) {
    return Status::invalid_argument("scheduler: max_queue %d and sessions %d must be >= 0 and >= 1",
                                    options.max_queue, options.sessions);
  }
  if (disk) DS4_TRY(validate(options.cache));
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(engine), tok, options, replay, disk));
  for (int i = 0; i < options.sessions; ++i) {
    DS4_ASSIGN_OR_RETURN(auto session,
                         s->engine_->create_session(
                             {.n_ctx = options.n_ctx, .prefill_chunk = options.prefill_chunk}));
    auto slot = std::make_unique<Slot>();
    slot->session = std::move(session);
    s->slots_.push_back(std::move(slot));
  }
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

Scheduler::Scheduler(std::unique_ptr<Engine> engine, const Tokenizer& tok,
                     const SchedulerOptions& options, ReplayMap* replay, DiskCache* disk)
    : engine_(std::move(engine)), tok_(&tok), options_(options), replay_(replay), disk_(disk) {}

Scheduler::~Scheduler() {
  shutdown();
  if (thread_.joinable()) thread_.join();
}

Result<std::shared_ptr<Ticket>> Scheduler::submit(Request request) {
  if (request.prompt.empty()) return Status::invalid_argument("empty prompt");
  if (request.prompt.size() >= static_cast<size_t>(options_.n_ctx)) {
    return Status::out_of_range(
        "Prompt has %zu tokens, but the configured context size is %d tokens",
        request.prompt.size(), options_.n_ctx);
  }
  auto ticket = std::make_shared<Ticket>();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status::unavailable("server shutting down");
    if (queue_.size() >= static_cast<size_t>(options_.max_queue)) {
      return Status::resource_exhausted("server busy: %zu requests are already waiting",
                                        queue_.size());
    }
    queue_.push_back(std::make_unique<Waiting>(Waiting{std::move(request), ticket}));
  }
  cv_.notify_one();
  return ticket;
}

void Scheduler::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mu_);
  return {.queued = static_cast<int>(queue_.size()), .running = running_.load()};
}

void Scheduler::run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      const auto busy = [&] {
        return std::any_of(slots_.begin(), slots_.end(),
                           [](const auto& s) { return s->active != nullptr; });
      };
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || busy(); });
      if (stopping_) {
        for (auto& w : queue_) {
          w->ticket->push(Event{.kind = EventKind::kDone,
                                .finish = FinishReason::kError,
                                .error = Status::unavailable("server shutting down")});
        }
        queue_.clear();
      }
      admit();
      if (stopping_ && !busy()) break;
    }
    for (auto& slot : slots_) {
      if (slot->active) step(*slot);
    }
  }
  if (disk_) save_on_shutdown();
}

void Scheduler::admit() {
  while (!queue_.empty()) {
    // The free session sharing the longest token prefix with the request (FIFO order is kept:
    // only the oldest waiting request is placed).
    Slot* best = nullptr;
    size_t best_common = 0;
    for (auto& slot : slots_) {
      if (slot->active) continue;
      const size_t c = common_prefix(slot->session->tokens(), queue_.front()->request.prompt);
      if (!best || c > best_common) best = slot.get(), best_common = c;
    }
    if (!best) return;
    auto w = std::move(queue_.front());
    queue_.pop_front();
    uint64_t seed = w->request.sampling.seed;
    if (seed == 0) {
      seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
             (++sequence_ * 0x9e3779b97f4a7c15ull);
    }
    best->active =
        std::make_unique<Active>(*tok_, std::move(w->request), std::move(w->ticket), seed);
    running_.fetch_add(1);
  }
}

void Scheduler::step(Slot& slot) {
  Active& a = *slot.active;
  if (a.ticket->cancelled()) return finish(slot, FinishReason::kCancelled);
  if (stopping_)
    return finish(slot, FinishReason::kError, Status::unavailable("server shutting down"));
  if (!a.decoding) return prefill_step(slot);
  decode_step(slot);
}

void Scheduler::prefill_step(Slot& slot) {
  Active& a = *slot.active;
  Session& s = *slot.session;
  const bool first = !a.planned;
  size_t from = s.tokens().size();
  if (first) {
    PromptPlan plan = plan_prompt(s.tokens(), *tok_, a.request);
    if (disk_ && plan.source == CacheSource::kMiss) plan = disk_miss(slot, std::move(plan));
    a.prompt = std::move(plan.tokens);
    a.planned = true;
    if (a.prompt.size() >= static_cast<size_t>(options_.n_ctx)) {
      return finish(slot, FinishReason::kError,
                    Status::out_of_range("Prompt has %zu tokens, but the configured context size "
                                         "is %d tokens",
                                         a.prompt.size(), options_.n_ctx));
    }
    // A session keeps its tokens only when they are a prefix of the prompt; otherwise it rebuilds
    // from position 0 (session.h), so the first chunk starts there and stays one chunk long.
    const auto live = s.tokens();
    from = common_prefix(live, a.prompt) == live.size() ? live.size() : 0;
  }
  size_t target = std::min(a.prompt.size(), from + options_.prefill_chunk);
  if (disk_) target = chunk_stop(slot, from, target);
  auto st = s.sync(std::span<const TokenId>(a.prompt).first(target));
  if (!st.is_ok()) return finish(slot, FinishReason::kError, st.status());
  if (first) a.cached = st->reused;
  if (disk_) after_prefill_chunk(slot);
  if (target < a.prompt.size()) return;
  a.decoding = true;
  a.limit = std::max(
      0, std::min(a.request.max_tokens, options_.n_ctx - static_cast<int>(a.prompt.size()) - 1));
  if (a.limit == 0) finish(slot, FinishReason::kLength);
}

void Scheduler::decode_step(Slot& slot) {
  Active& a = *slot.active;
  Session& s = *slot.session;
  if (disk_) before_decode(slot);
  const size_t i = static_cast<size_t>(a.generated);
  SamplingParams params = a.request.sampling;
  if (a.gen.dsml_greedy()) params.temperature = 0.0f;  // protocol structure: greedy (§2.5)
  // The test hook's tokens first, then what the output must say (a forced tool choice, a
  // reasoning budget), else the model's sample as the forced shape allows it.
  std::optional<TokenId> forced;
  if (i < a.request.forced.size()) forced = a.request.forced[i];
  if (!forced) forced = a.gen.forced_next(a.limit - a.generated);
  const TokenId id = forced ? *forced : a.gen.vet(s.sample(params, a.rng));
  ++a.generated;
  if (id == tok_->special_ids().eos) {
    return finish(slot, a.gen.tool_calls() > 0 ? FinishReason::kToolCalls : FinishReason::kStop);
  }
  std::vector<Event> events;
  const bool end = a.gen.push(id, &events);
  a.ticket->push(&events);
  if (end) return finish(slot, a.gen.stop_hit() ? FinishReason::kStop : FinishReason::kToolCalls);
  if (a.generated >= a.limit) return finish(slot, FinishReason::kLength);
  Status st = s.eval(id);
  if (!st.is_ok()) finish(slot, FinishReason::kError, std::move(st));
}

void Scheduler::finish(Slot& slot, FinishReason reason, Status error) {
  Active& a = *slot.active;
  std::vector<Event> events;
  a.gen.finish(&events);
  if (replay_ && a.gen.tool_calls() > 0) {
    replay_->remember(a.gen.tool_ids(), sampled_tool_block(a.gen.raw(), a.request.thinking));
  }
  Event done{.kind = EventKind::kDone, .text = a.gen.raw(), .finish = reason};
  const size_t prompt = a.planned ? a.prompt.size() : a.request.prompt.size();
  done.usage = {.prompt_tokens = static_cast<int>(prompt),
                .cached_tokens = a.cached,
                .completion_tokens = a.generated};
  done.error = std::move(error);
  if (reason == FinishReason::kStop && a.gen.stop_hit()) done.stop_sequence = a.gen.stop_matched();
  events.push_back(std::move(done));
  a.ticket->push(&events);
  slot.active.reset();
  running_.fetch_sub(1);
}

}  // namespace ds4::serve
