// src/serve/ticket.h: the channel between one request's submitter and the scheduler.
// Owns: the request's event queue (scheduler pushes, submitter pops with a timeout so it can send
// keepalives), its cancel flag (submitter sets, scheduler polls between steps) and an optional
// probe the poll also runs (a submitter that cannot see its client leave by a failed write, such
// as a non-streaming HTTP response, lets the scheduler ask at each step).
// Thread-safe: exactly one producer (the scheduler) and one consumer (the submitter).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
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
  // `gone` returns true once the request's client has left; cancelled() then turns true. It runs
  // on the scheduler thread, so it must be cheap; clear it (nullptr) before what it reads dies.
  void set_probe(std::function<bool()> gone);

  // Producer side.
  bool cancelled() const;
  void push(std::vector<Event>* events);  // moves the events in, in order
  void push(Event event);
  bool finished() const;  // a kDone event was pushed

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  bool done_ = false;
  mutable std::atomic<bool> cancelled_{false};
  mutable std::mutex probe_mu_;  // the probe is set and cleared while the scheduler may run it
  std::function<bool()> probe_;
};

}  // namespace ds4::serve
