// apps/agent/inbox.cpp: the queue between a front-end and the worker.
#include "inbox.h"

namespace ds4::agent_app {
namespace {
constexpr const char* kWaitingMarker = "+DWARFSTAR_WAITING";
constexpr const char* kQueuedMarker = "+DWARFSTAR_QUEUED";
}  // namespace

void Inbox::queued_marker_locked() {
  if (markers_ && (busy_ || !items_.empty())) std::fprintf(stderr, "%s\n", kQueuedMarker);
}

void Inbox::submit_prompt(std::string text) {
  std::lock_guard lock(mu_);
  queued_marker_locked();
  items_.push_back({std::move(text), std::nullopt});
  cv_.notify_all();
}

void Inbox::submit_command(agent::Command c) {
  std::lock_guard lock(mu_);
  queued_marker_locked();
  items_.push_back({{}, std::move(c)});
  cv_.notify_all();
}

void Inbox::close() {
  std::lock_guard lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

std::optional<WorkItem> Inbox::next() {
  std::unique_lock lock(mu_);
  busy_ = false;
  if (markers_ && items_.empty() && !eof_) std::fprintf(stderr, "%s\n", kWaitingMarker);
  cv_.wait(lock, [&] { return !items_.empty() || eof_; });
  if (items_.empty()) return std::nullopt;
  busy_ = true;
  WorkItem w;
  if (items_.front().command) {
    w.command = std::move(items_.front().command);
    items_.pop_front();
    return w;
  }
  while (!items_.empty() && !items_.front().command) {
    w.prompts.push_back(std::move(items_.front().prompt));
    items_.pop_front();
  }
  return w;
}

std::vector<std::string> Inbox::take_prompts() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  while (!items_.empty() && !items_.front().command) {
    out.push_back(std::move(items_.front().prompt));
    items_.pop_front();
  }
  return out;
}

std::optional<std::string> Inbox::pop_first_prompt() {
  std::lock_guard lock(mu_);
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    if (!it->command) {
      std::string text = std::move(it->prompt);
      items_.erase(it);
      return text;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Inbox::queued_prompts() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const Item& i : items_) {
    if (!i.command) out.push_back(i.prompt);
  }
  return out;
}

bool Inbox::busy() {
  std::lock_guard lock(mu_);
  return busy_;
}

void Inbox::fail() {
  std::lock_guard lock(mu_);
  failed_ = true;
}

bool Inbox::failed() {
  std::lock_guard lock(mu_);
  return failed_;
}

}  // namespace ds4::agent_app
