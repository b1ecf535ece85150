// src/api/responses_store.h: the conversations behind recent Responses ids, so a request with
// previous_response_id continues the state the server still holds (features.md §1.4.3).
// Owns: a small LRU of response id -> the conversation it ended with (the input items as chat
// messages plus the assistant turn it produced), behind its own lock (HTTP threads read and
// write it). Instructions and tools are not stored: each request brings its own.
#pragma once

#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ds4/chat.h"

namespace ds4::api {

class ResponsesStore {
 public:
  explicit ResponsesStore(size_t capacity = 64) : capacity_(capacity) {}

  void put(const std::string& id, std::vector<chat::Message> conversation) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0) return;
    if (auto it = index_.find(id); it != index_.end()) order_.erase(it->second);
    order_.emplace_front(id, std::move(conversation));
    index_[id] = order_.begin();
    while (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

  std::optional<std::vector<chat::Message>> find(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, std::vector<chat::Message>>;
  const size_t capacity_;
  std::mutex mu_;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace ds4::api
