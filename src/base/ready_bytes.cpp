// src/base/ready_bytes.cpp: see ready_bytes.h.
#include "base/ready_bytes.h"

#include <algorithm>
#include <exception>
#include <thread>

namespace ds4::base {

void ReadyBytes::publish(size_t n) {
  {
    std::lock_guard lock(mu_);
    n = std::min(n, total_);
    if (n <= ready_) return;
    ready_ = n;
  }
  cv_.notify_all();
}

void ReadyBytes::finish() {
  {
    std::lock_guard lock(mu_);
    if (failed_ || finished_) return;
    ready_ = total_;
    finished_ = true;
  }
  cv_.notify_all();
}

void ReadyBytes::fail() {
  {
    std::lock_guard lock(mu_);
    if (failed_ || finished_) return;
    failed_ = true;
  }
  cv_.notify_all();
}

bool ReadyBytes::wait(size_t end) const {
  end = std::min(end, total_);
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return failed_ || ready_ >= end; });
  return !failed_;
}

bool ReadyBytes::wait_finished() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return failed_ || finished_; });
  return finished_;
}

Status fill_beside(ReadyBytes& ready, const FillBytes& fill,
                   const std::function<Status()>& consume) {
  Status consumed;
  std::exception_ptr consume_threw;
  std::thread consumer([&] {
    try {
      consumed = consume();
    } catch (...) {
      consume_threw = std::current_exception();
    }
  });
  Status filled;
  std::exception_ptr fill_threw;
  try {
    filled = fill([&](size_t n) { ready.publish(n); });
  } catch (...) {
    fill_threw = std::current_exception();
    filled = Status::internal("the fill threw");
  }
  if (filled.is_ok()) {
    ready.finish();
  } else {
    ready.fail();
  }
  consumer.join();
  if (fill_threw) std::rethrow_exception(fill_threw);
  if (consume_threw) std::rethrow_exception(consume_threw);
  DS4_TRY(std::move(filled));
  return consumed;
}

}  // namespace ds4::base
