// src/engine/power.cpp: --power's pacing (power.h).
#include "engine/power.h"

#include <thread>

namespace ds4 {

Status PowerGovernor::set(int percent) {
  if (percent < kMin || percent > kMax) {
    return Status::invalid_argument("power %d is outside %d..%d (percent of full speed)", percent,
                                    kMin, kMax);
  }
  percent_.store(percent, std::memory_order_relaxed);
  return Status::ok();
}

void PowerGovernor::pace(Clock::time_point start) {
  const Clock::time_point end = Clock::now();
  const double busy = std::chrono::duration<double>(end - start).count();
  busy_ += busy;
  const int p = percent();
  if (p >= kMax || busy <= 0.0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(busy * (kMax - p) / p));
  idle_ += std::chrono::duration<double>(Clock::now() - end).count();
}

}  // namespace ds4
