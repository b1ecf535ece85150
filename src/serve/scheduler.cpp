// src/serve/scheduler.cpp: the pool's creation, the submit side, the loop, finishing requests.
#include "serve/scheduler.h"

#include <algorithm>

#include "serve/scheduler_parts.h"

namespace ds4::serve {
namespace {

// Threads (the scheduler's own among them) that draw a step's tokens: one per session, at most
// four and at most half the hardware's, but two wherever there are two sessions, so that the
// threaded tests run the parallel draws on a 2-core machine too.
int sample_threads(int sessions) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::clamp(sessions, 1, std::max(2, std::min(4, hw / 2)));
}

}  // namespace

Result<std::unique_ptr<Scheduler>> Scheduler::start(std::unique_ptr<Engine> engine,
                                                    const Tokenizer& tok,
                                                    const SchedulerOptions& options,
                                                    ReplayMap* replay, DiskCache* disk) {
  if (options.max_queue < 0 || options.sessions < 1) {
    return Status::invalid_argument("scheduler: max_queue %d and sessions %d must be >= 0 and >= 1",
                                    options.max_queue, options.sessions);
  }
  if (options.batch_tokens < options.sessions || options.batch_tokens > Engine::kMaxStepRows) {
    return Status::invalid_argument(
        "scheduler: batch_tokens %d must be within [sessions, %d] = [%d, %d]: every decoding "
        "session needs its row in a step",
        options.batch_tokens, Engine::kMaxStepRows, options.sessions, Engine::kMaxStepRows);
  }
  if (!(options.itl_target_ms >= 0 && options.itl_target_ms <= 60000)) {
    return Status::invalid_argument("scheduler: itl_target_ms %g must be within [0, 60000]",
                                    options.itl_target_ms);
  }
  if (disk) DS4_TRY(validate(options.cache));
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(engine), tok, options, replay, disk));
  for (int i = 0; i < options.sessions; ++i) {
    auto session = s->engine_->create_session(
        {.n_ctx = options.n_ctx, .prefill_chunk = options.prefill_chunk});
    if (!session.is_ok()) {
      return session.status().with_context("session " + std::to_string(i + 1) + " of " +
                                           std::to_string(options.sessions));
    }
    auto slot = std::make_unique<Slot>();
    slot->session = std::move(*session);
    s->slots_.push_back(std::move(slot));
  }
  s->order_.reserve(s->slots_.size());
  s->entries_.reserve(s->slots_.size());
  s->entry_slots_.reserve(s->slots_.size());
  s->draws_.reserve(s->slots_.size());
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

Scheduler::Scheduler(std::unique_ptr<Engine> engine, const Tokenizer& tok,
                     const SchedulerOptions& options, ReplayMap* replay, DiskCache* disk)
    : engine_(std::move(engine)),
      tok_(&tok),
      options_(options),
      replay_(replay),
      disk_(disk),
      sample_pool_(sample_threads(options.sessions)),
      pacer_(options.itl_target_ms / 1e3),
      quantum_(pacer_.quantum()) {}

Scheduler::~Scheduler() {
  shutdown();
  if (thread_.joinable()) thread_.join();
}

Result<std::shared_ptr<Ticket>> Scheduler::submit(Request request) {
  if (request.prompt.empty()) return Status::invalid_argument("empty prompt");
  // Refused before it waits or takes a session: it could never run.
  if (request.prompt.size() >= static_cast<size_t>(options_.n_ctx)) {
    return prompt_over_context(request.prompt.size(), options_.n_ctx);
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
  const int running = running_.load();
  return {.queued = static_cast<int>(queue_.size()),
          .running = running,
          .sessions = options_.sessions,
          .free = options_.sessions - running,
          .steps = steps_.load(),
          .rows = rows_.load(),
          .prefill_quantum = quantum_.load()};
}

bool Scheduler::busy() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const auto& s) { return s->active != nullptr; });
}

void Scheduler::run() {
  std::vector<std::unique_ptr<Waiting>> arrivals;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || busy(); });
      if (stopping_) {
        for (auto& w : queue_) {
          w->ticket->push(Event{.kind = EventKind::kDone,
                                .finish = FinishReason::kError,
                                .error = Status::unavailable("server shutting down")});
        }
        queue_.clear();
      }
      take(&arrivals);
      if (stopping_ && !busy() && arrivals.empty()) break;
    }
    for (auto& w : arrivals) place(std::move(w));
    arrivals.clear();
    step();
  }
  if (disk_) save_on_shutdown();
}

void Scheduler::finish(Slot& slot, FinishReason reason, Status error) {
  Active& a = *slot.active;
  std::vector<Event> events;
  a.gen.finish(&events);
  if (replay_ && a.gen.tool_calls() > 0) {
    replay_->remember(a.gen.tool_ids(), sampled_tool_block(a.gen.raw(), a.request.output.thinking));
  }
  bind_visible(slot, reason);
  Event done{.kind = EventKind::kDone, .text = a.gen.raw(), .finish = reason};
  done.usage = {.prompt_tokens = static_cast<int>(a.prompt.size()),
                .cached_tokens = a.cached,
                .completion_tokens = a.generated,
                .reasoning_tokens = a.gen.reasoning_tokens(),
                .draft_steps = a.acceptance.steps,
                .draft_tokens = a.acceptance.drafted,
                .accepted_draft_tokens = a.acceptance.accepted};
  done.error = std::move(error);
  if (reason == FinishReason::kStop && a.gen.stop_hit()) done.stop_sequence = a.gen.stop_matched();
  events.push_back(std::move(done));
  // The session is free before the submitter sees kDone, so stats() never counts an ended
  // request as running.
  const std::shared_ptr<Ticket> ticket = std::move(a.ticket);
  slot.active.reset();
  slot.last_used = ++use_clock_;
  running_.fetch_sub(1);
  ticket->push(&events);
}

}  // namespace ds4::serve
