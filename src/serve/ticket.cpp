// src/serve/ticket.cpp: the per-request event queue and cancel flag.
#include "serve/ticket.h"

namespace ds4::serve {

std::optional<Event> Ticket::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void Ticket::push(std::vector<Event>* events) {
  if (events->empty()) return;
  {
    std::lock_guard lock(mu_);
    for (auto& e : *events) {
      if (e.kind == EventKind::kDone) done_ = true;
      events_.push_back(std::move(e));
    }
  }
  events->clear();
  cv_.notify_one();
}

void Ticket::push(Event event) {
  std::vector<Event> one;
  one.push_back(std::move(event));
  push(&one);
}

void Ticket::set_probe(std::function<bool()> gone) {
  std::lock_guard lock(probe_mu_);
  probe_ = std::move(gone);
}

bool Ticket::cancelled() const {
  if (cancelled_.load(std::memory_order_relaxed)) return true;
  std::lock_guard lock(probe_mu_);
  if (probe_ && probe_()) cancelled_.store(true, std::memory_order_relaxed);
  return cancelled_.load(std::memory_order_relaxed);
}

bool Ticket::finished() const {
  std::lock_guard lock(mu_);
  return done_;
}

}  // namespace ds4::serve
