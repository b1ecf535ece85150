// src/base/thread_pool.cpp: ThreadPool implementation (see the header for the hand-off scheme).
#include "base/thread_pool.h"

#include "base/check.h"

namespace ds4::base {
namespace {

constexpr int kIndexBits = 22;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr int kSpinsBeforeSleep = 20000;  // ~50-100 us of polling before a worker sleeps
constexpr int kSpinsBeforeYield = 2000;

uint64_t generation_of(uint64_t s) { return s >> (2 * kIndexBits); }
int64_t count_of(uint64_t s) { return static_cast<int64_t>((s >> kIndexBits) & kIndexMask); }
int64_t next_of(uint64_t s) { return static_cast<int64_t>(s & kIndexMask); }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (n_threads <= 0) n_threads = 1;
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::claim(uint64_t gen, int64_t* index) {
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (generation_of(s) != gen || next_of(s) >= count_of(s)) return false;
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
      *index = next_of(s);
      return true;
    }
  }
}

// Runs tasks of `gen` until none is left. A successful claim pins the job: the caller cannot
// start another loop before this task has finished, so job_ is the claimed loop's function.
void ThreadPool::run_claimed(uint64_t gen) {
  int64_t i = 0;
  while (claim(gen, &i)) {
    (*job_.load(std::memory_order_acquire))(i);
    finished_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = generation_of(state_.load());
  for (;;) {
    uint64_t gen = seen;
    for (int spin = 0; spin < kSpinsBeforeSleep && gen == seen && !stop_.load(); ++spin) {
      cpu_relax();
      gen = generation_of(state_.load(std::memory_order_acquire));
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || generation_of(state_.load()) != seen; });
      sleepers_.fetch_sub(1);
      gen = generation_of(state_.load());
    }
    if (stop_.load()) return;
    seen = gen;
    run_claimed(gen);
  }
}

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t)>& fn) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t i = 0; i < n_tasks; ++i) fn(i);
    return;
  }
  DS4_CHECK_MSG(n_tasks < kMaxTasks, "parallel_for with %lld tasks",
                static_cast<long long>(n_tasks));
  job_.store(&fn, std::memory_order_release);
  finished_.store(0, std::memory_order_release);
  const uint64_t gen = (generation_of(state_.load()) + 1) & ((uint64_t{1} << 20) - 1);
  // seq_cst store then seq_cst load of sleepers_: a worker that registers as a sleeper after this
  // load re-checks the generation under the mutex and sees the new one.
  state_.store((gen << (2 * kIndexBits)) | (static_cast<uint64_t>(n_tasks) << kIndexBits));
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  run_claimed(gen);
  for (int spin = 0; finished_.load(std::memory_order_acquire) < n_tasks; ++spin) {
    if (spin < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace ds4::base
