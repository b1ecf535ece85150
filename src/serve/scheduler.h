// src/serve/scheduler.h: the one thread that owns the engine and every session.
// Owns: the Engine, the session pool, the bounded FIFO of waiting requests, and the loop that
// admits requests into free sessions and advances each running request one step at a time (a
// prefill chunk or one decoded token), checking its cancel flag between steps.
// With a disk cache (disk_cache.h) it also decides, by cache_policy.h, when a session's checkpoint
// is copied out and handed to the disk writer (cold, continued, evict, shutdown), and loads the
// longest matching file into a session on a miss (features.md §3.3, §3.5).
// Does not own: tokenization of prompts (submitters do it), JSON, sockets, files.
//
// Built for continuous batching: the loop already walks a pool of sessions and advances each by
// one step; a later issue turns "one step of each" into one batched engine call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ds4/engine.h"
#include "ds4/tokenizer.h"
#include "serve/cache_policy.h"
#include "serve/disk_cache.h"
#include "serve/prefix_match.h"
#include "serve/replay_map.h"
#include "serve/request.h"
#include "serve/ticket.h"

namespace ds4::serve {

struct SchedulerOptions {
  int n_ctx = 32768;
  int prefill_chunk = SessionOptions{}.prefill_chunk;
  int max_queue = 32;        // waiting requests at most; one more is refused (kResourceExhausted)
  int sessions = 1;          // sessions in the pool (requests running at once)
  CachePolicyOptions cache;  // when checkpoints go to the disk cache (used with a DiskCache)
};

struct SchedulerStats {
  int queued = 0;
  int running = 0;
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
  Scheduler(std::unique_ptr<Engine> engine, const Tokenizer& tok, const SchedulerOptions& options,
            ReplayMap* replay, DiskCache* disk);
  void run();
  void admit();  // moves waiting requests into free slots (lock held)
  void step(Slot& slot);
  void prefill_step(Slot& slot);
  void decode_step(Slot& slot);
  void finish(Slot& slot, FinishReason reason, Status error = Status::ok());
  // Disk cache (scheduler_disk.cpp).
  PromptPlan disk_miss(Slot& slot, PromptPlan plan);  // evict save, then a load or a cold plan
  size_t chunk_stop(const Slot& slot, size_t from, size_t to) const;
  void after_prefill_chunk(Slot& slot);
  void before_decode(Slot& slot);
  void save_checkpoint(Slot& slot, kv::SaveReason reason);
  void save_on_shutdown();

  std::unique_ptr<Engine> engine_;
  const Tokenizer* tok_;
  SchedulerOptions options_;
  ReplayMap* replay_;
  DiskCache* disk_;
  std::vector<std::unique_ptr<Slot>> slots_;  // scheduler thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Waiting;
  std::deque<std::unique_ptr<Waiting>> queue_;  // guarded by mu_
  std::atomic<bool> stopping_{false};
  std::atomic<int> running_{0};
  uint64_t sequence_ = 0;  // scheduler thread only: seeds requests that asked for none
  std::thread thread_;
};

}  // namespace ds4::serve
