// src/base/thread_pool.cpp: ThreadPool implementation (mutex + condition variables, no spinning).
#include "base/thread_pool.h"

namespace ds4::base {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (n_threads <= 0) n_threads = 1;
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks(std::unique_lock<std::mutex>& lock) {
  // Entered and left with `lock` held; released around each task.
  while (job_ != nullptr && next_task_ < n_tasks_) {
    const int64_t i = next_task_++;
    const auto* job = job_;
    lock.unlock();
    (*job)(i);
    lock.lock();
  }
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  int64_t seen = generation_;
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++busy_;
    run_tasks(lock);
    if (--busy_ == 0) done_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t)>& fn) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t i = 0; i < n_tasks; ++i) fn(i);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  n_tasks_ = n_tasks;
  next_task_ = 0;
  ++generation_;
  wake_.notify_all();
  run_tasks(lock);  // the caller works too
  done_.wait(lock, [&] { return next_task_ >= n_tasks_ && busy_ == 0; });
  job_ = nullptr;
}

}  // namespace ds4::base
