// src/base/thread_pool.h: a fixed pool of worker threads for data-parallel loops.
// Owns: its worker threads (joined in the destructor) and the hand-off of one loop at a time.
// Does not own: the work's data; callers partition it (parallel_for hands out task indices).
//
// Hand-off is lock-free on the hot path (decode issues hundreds of small loops per token): one
// atomic word holds the loop's generation, task count and next index, claimed by compare-and-swap;
// idle workers spin briefly before sleeping on a condition variable; the caller works too and
// spins (then yields) until every task has finished.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ds4::base {

class ThreadPool {
 public:
  // n_threads counts the calling thread: n_threads = 1 runs everything inline. 0 means one per
  // hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(i) for every i in [0, n_tasks), spread over the pool and the calling thread, and
  // returns when all calls have finished. Tasks are handed out dynamically, so uneven tasks
  // balance. Not reentrant: fn must not call parallel_for on the same pool. n_tasks < 2^22.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t)>& fn);

  static constexpr int64_t kMaxTasks = int64_t{1} << 22;

 private:
  void worker_loop();
  // Claims the next task of generation `gen`; false when it has none left (or is over).
  bool claim(uint64_t gen, int64_t* index);
  void run_claimed(uint64_t gen);

  std::vector<std::thread> workers_;
  // [generation:20 bits][task count:22 bits][next index:22 bits]
  std::atomic<uint64_t> state_{0};
  std::atomic<const std::function<void(int64_t)>*> job_{nullptr};
  std::atomic<int64_t> finished_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // only for sleeping and waking
  std::condition_variable wake_;
};

}  // namespace ds4::base
