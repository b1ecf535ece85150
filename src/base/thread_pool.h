// src/base/thread_pool.h: a fixed pool of worker threads for data-parallel loops.
// Owns: its worker threads (joined in the destructor) and the hand-off of one loop at a time.
// Does not own: the work's data; callers partition it (parallel_for hands out task indices).
#pragma once

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
  // returns when all calls have finished. Tasks are handed out dynamically (an atomic counter), so
  // uneven tasks balance. Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop();
  void run_tasks(std::unique_lock<std::mutex>& lock);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* job_ = nullptr;  // guarded by mu_
  int64_t n_tasks_ = 0;                                // guarded by mu_
  int64_t next_task_ = 0;                              // guarded by mu_
  int64_t generation_ = 0;                             // guarded by mu_
  int busy_ = 0;                                       // guarded by mu_
  bool stop_ = false;                                  // guarded by mu_
};

}  // namespace ds4::base
