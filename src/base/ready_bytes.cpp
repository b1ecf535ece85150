// src/base/ready_bytes.cpp: see ready_bytes.h.
#include "base/ready_bytes.h"

#include <algorithm>

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

void ReadyBytes::fail() {
  {
    std::lock_guard lock(mu_);
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

}  // namespace ds4::base
