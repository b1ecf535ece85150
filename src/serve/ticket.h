// src/serve/ticket.h: the channel between one request's submitter and the scheduler.
// Owns: the request's event queue (scheduler pushes, submitter pops with a timeout so it can send
// keepalives) and its cancel flag (submitter sets, scheduler polls between steps).
// Thread-safe: exactly one producer (the scheduler) and one consumer (the submitter).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "serve/request.h"

namespace ds4::serve {

class Ticket {
 public:
  // Consumer side.
  // The next event, or nullopt when none arrived within `timeout`.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  // Asks the scheduler to stop this request at its next step (a prefill chunk or a token).
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }

  // Producer side.
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  void push(std::vector<Event>* events);  // moves the events in, in order
  void push(Event event);
  bool finished() const;  // a kDone event was pushed

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace ds4::serve
