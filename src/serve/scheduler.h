// src/serve/scheduler.h: the one thread that owns the engine and every session.
// Owns: the Engine, the session pool, the bounded FIFO of waiting requests, and the loop that
// places waiting requests into sessions (scheduler_admit.cpp: the longest reusable prefix, else a
// free session, else the least recently used idle one) and advances every running request
// together in ONE batched Engine::step per iteration (scheduler_step.cpp: a decode row for each
// decoding request, then prefill chunks in arrival order under the step's token budget), checking
// each request's cancel flag before every step (continuous batching, design/server.md).
// With a disk cache (disk_cache.h) it also decides, by cache_policy.h, when a session's checkpoint
// is copied out and handed to the disk writer (cold, continued, evict, shutdown), and loads the
// longest matching file into a session on a miss (features.md §3.3, §3.5).
// Does not own: tokenization of prompts (submitters do it), JSON, sockets, files.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "decode/decoder.h"
#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "gen/generation.h"
#include "serve/cache_policy.h"
#include "serve/disk_cache.h"
#include "serve/prefill_pacer.h"
#include "serve/prefix_match.h"
#include "serve/replay_map.h"
#include "serve/request.h"
#include "serve/ticket.h"

namespace ds4::serve {

// The default token budget of one step: the default prefill chunk, so one request alone
// prefills as fast as before, and a step of the largest budget stays a few hundred ms on a GPU,
// bounding how long a prefill can hold back the decode rows that share the step.
inline constexpr int kDefaultBatchTokens = 2048;
// The default time a step holding decode rows and a prompt chunk aims at (--itl-target-ms): the
// decoding streams beside a long prompt get a token about this often (prefill_pacer.h).
inline constexpr double kDefaultItlTargetMs = 100;

struct SchedulerOptions {
  int n_ctx = 32768;                                   // per session
  int prefill_chunk = SessionOptions{}.prefill_chunk;  // one request's rows per step at most
  int max_queue = 32;  // waiting requests at most; one more is refused (kResourceExhausted)
  int sessions = 1;    // sessions in the pool (requests running at once)
  // Rows of one batched step in all: one per decoding request first, then prefill chunks. At
  // least `sessions` (so every decoding request gets its row and a prefill still advances) and at
  // most Engine::kMaxStepRows.
  int batch_tokens = kDefaultBatchTokens;
  // While requests decode, the prompt rows of a step are paced so that the step takes about this
  // long (prefill_pacer.h); 0: a prompt takes what the budget leaves.
  double itl_target_ms = kDefaultItlTargetMs;
  CachePolicyOptions cache;  // when checkpoints go to the disk cache (used with a DiskCache)
  // MTP drafting (--mtp, --mtp-draft, --mtp-margin; an engine with an MTP file): a request that
  // decodes alone drafts and verifies as the ds4 CLI does (scheduler_draft.cpp says when).
  decode::Drafting drafting;
};

struct SchedulerStats {
  int queued = 0;              // waiting for a session
  int running = 0;             // placed in a session (prefilling or decoding)
  int sessions = 0;            // the pool's size
  int free = 0;                // sessions no request runs in (sessions - running)
  uint64_t steps = 0;          // batched engine steps run so far
  uint64_t rows = 0;           // token rows those steps evaluated
  size_t prefill_quantum = 0;  // prompt rows a step beside decoding requests carries at most now
};

class Scheduler {
 public:
  // Creates the sessions and starts the thread. The tokenizer is borrowed: it must outlive the
  // scheduler. Errors: bad options, a session that does not fit in memory.
  // `replay` (may be null: exact replay off) is borrowed too; each tool-call turn's sampled
  // block is remembered there under its call ids.
  // `disk` (may be null: no disk cache) is borrowed as well and must outlive the scheduler: the
  // sessions still holding tokens are saved to it when the thread ends (reason shutdown).
  static Result<std::unique_ptr<Scheduler>> start(std::unique_ptr<Engine> engine,
                                                  const Tokenizer& tok,
                                                  const SchedulerOptions& options,
                                                  ReplayMap* replay = nullptr,
                                                  DiskCache* disk = nullptr);
  ~Scheduler();  // shutdown(), then joins the thread
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request behind the waiting ones. Errors: kInvalidArgument (empty prompt),
  // kOutOfRange (the prompt does not fit in the context), kResourceExhausted (queue full),
  // kUnavailable (shutting down).
  Result<std::shared_ptr<Ticket>> submit(Request request);
  // Refuses new requests and ends queued and running ones with kError at their next step.
  // Returns at once; the destructor waits for the thread.
  void shutdown();

  int n_ctx() const { return options_.n_ctx; }
  const ModelInfo& model_info() const { return engine_->info(); }
  SchedulerStats stats() const;

 private:
  struct Active;
  struct Slot;
  struct Waiting;
  Scheduler(std::unique_ptr<Engine> engine, const Tokenizer& tok, const SchedulerOptions& options,
            ReplayMap* replay, DiskCache* disk);
  void run();
  bool busy() const;  // a request runs in some session
  // Admission (scheduler_admit.cpp). take() pops, in arrival order, as many waiting requests as
  // there are idle sessions and ends the cancelled ones it meets (lock held); place() puts one
  // into a session and plans its prompt.
  void take(std::vector<std::unique_ptr<Waiting>>* out);
  void place(std::unique_ptr<Waiting> w);
  Slot* choose_slot(const Request& request, PromptPlan* plan);
  // The decoded text of an idle session's tokens, kept in the slot between admissions: only the
  // tokens appended since are decoded; tokens that changed otherwise are decoded again.
  const std::string& live_text(Slot& slot);
  // One batched engine step (scheduler_step.cpp).
  void step();
  // A decoding request's next token, in three parts: what it needs (the disk checkpoint before
  // decode, the generation core's draw: its sampling parameters or a forced token), the model's
  // draw (Engine::pick for every request of the step at once: on the device where the backend
  // picks tokens, else on sample_pool_), then taking the token
  // (false: the request finished instead).
  struct Draw {
    Slot* slot;
    gen::Generation::Draw draw;
    TokenId sampled = 0;
  };
  Draw prepare_draw(Slot& slot);
  bool take_token(Slot& slot, const Draw& d);
  // take_token without the finish: the reason the request ends with the token (it is then not
  // evaluated), else nullopt and the token in Active::next.
  std::optional<FinishReason> take_drawn(Slot& slot, const Draw& d);
  // Drafting (scheduler_draft.cpp): whether the slot's token drafts this step (`decoding`: the
  // step's decoding requests); its drafts, at most `room`, and the verification that evaluates
  // them in the step (Active::run and Active::accept; false: no drafts came, the token is one row
  // of the step as usual); and after the step, the verification's counts and end.
  bool drafts_now(const Slot& slot, size_t decoding) const;
  bool prepare_verification(Slot& slot, size_t room);
  void after_verification(Slot& slot, const StepEntry& entry);
  void after_prefill(Slot& slot);
  void finish(Slot& slot, FinishReason reason, Status error = Status::ok());
  // Directional steering: the scales a request runs with (its own, else the engine's), and
  // bringing a session to them (a session computed with other scales starts again: empty).
  Steering steering_of(const Request& request) const;
  Status steer_session(Session& s, const Steering& want);
  // Disk cache (scheduler_disk.cpp): files hold states of the engine's own scales only.
  // disk_miss: the evict save, the session brought to the request's scales (`want`), then a load
  // (only for the engine's scales) or a cold plan.
  PromptPlan disk_miss(Slot& slot, PromptPlan plan, const Steering& want);
  size_t chunk_stop(const Slot& slot, size_t from, size_t to) const;
  void after_prefill_chunk(Slot& slot);
  void before_decode(Slot& slot);
  void save_checkpoint(Slot& slot, kv::SaveReason reason);
  void save_on_shutdown();
  // Visible-transcript bindings (scheduler_visible.cpp): remembered when a thinking turn ends,
  // used by a request that starts with the transcript (else `miss` is returned unchanged).
  void bind_visible(Slot& slot, FinishReason reason);
  PromptPlan plan_visible(Slot& slot, const Request& request, PromptPlan miss) const;

  std::unique_ptr<Engine> engine_;
  const Tokenizer* tok_;
  SchedulerOptions options_;
  ReplayMap* replay_;
  DiskCache* disk_;
  // Scheduler thread only.
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t sequence_ = 0;     // counts admissions: arrival order, and seeds for requests with none
  uint64_t use_clock_ = 0;    // stamps a slot when a request leaves it (least recently used)
  std::vector<Slot*> order_;  // this step's running slots in arrival order
  std::vector<StepEntry> entries_;  // this step's engine entries ...
  std::vector<Slot*> entry_slots_;  // ... and the slot of each
  std::vector<Draw> draws_;         // this step's decoding requests
  std::vector<PickEntry> picks_;    // ... the model's draws among them
  // Host draws side by side: each request has its own logits and random state, and a draw over
  // the 129,280-token vocabulary costs ~0.2 ms on the host, a row of the step.
  base::ThreadPool sample_pool_;
  PrefillPacer pacer_;  // the prompt rows of a step beside decode rows

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Waiting>> queue_;  // guarded by mu_
  std::atomic<bool> stopping_{false};
  std::atomic<int> running_{0};
  std::atomic<uint64_t> steps_{0};
  std::atomic<uint64_t> rows_{0};
  std::atomic<size_t> quantum_{0};  // pacer_.quantum(), for stats()
  std::thread thread_;
};

}  // namespace ds4::serve
