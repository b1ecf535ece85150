// src/engine/power.h: --power (features.md §10.11): the device's busy share held at a percentage
// by sleeping after each unit of work (a prefill chunk, a decode or verification step) for the
// time that unit took, scaled: sleep = busy x (100 - P) / P, so busy / (busy + sleep) = P / 100.
// The unit's own measured time is used (its results are back when it is paced), which makes the
// share exact for every unit instead of an average's. Outputs do not change; only wall time.
// Owns: the percentage and the busy and idle time it accounted. The percentage may be set from any
// thread (the agent's UI sets it while a turn runs); the rest is the engine thread's.
#pragma once

#include <atomic>
#include <chrono>

#include "ds4/status.h"

namespace ds4 {

class PowerGovernor {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMin = 1, kMax = 100;

  // Errors: percent outside [kMin, kMax] (unchanged). Full speed until set.
  Status set(int percent);
  int percent() const { return percent_.load(std::memory_order_relaxed); }

  // A unit of work starts; pace(start) after its results are back sleeps for its share.
  Clock::time_point start() const { return Clock::now(); }
  void pace(Clock::time_point start);

  double busy_seconds() const { return busy_; }
  double idle_seconds() const { return idle_; }

 private:
  std::atomic<int> percent_{kMax};
  double busy_ = 0.0;  // the paced units' time
  double idle_ = 0.0;  // the sleeps after them, as measured
};

}  // namespace ds4
