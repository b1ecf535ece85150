// src/serve/replay_map.cpp: the LRU-bounded exact-replay map.
#include "serve/replay_map.h"

#include <string_view>

namespace ds4::serve {

void ReplayMap::remember(std::span<const std::string> ids, const std::string& block) {
  if (max_ids_ == 0 || ids.empty() || block.empty()) return;
  auto shared = std::make_shared<const std::string>(block);
  std::lock_guard lock(mu_);
  for (const auto& id : ids) {
    auto it = by_id_.find(id);
    if (it != by_id_.end()) {
      lru_.erase(it->second.lru);
      by_id_.erase(it);
    }
    lru_.push_front(id);
    by_id_[id] = Entry{shared, lru_.begin()};
  }
  while (by_id_.size() > max_ids_) {
    by_id_.erase(lru_.back());
    lru_.pop_back();
  }
}

std::optional<std::string> ReplayMap::find(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return *it->second.block;
}

size_t ReplayMap::size() const {
  std::lock_guard lock(mu_);
  return by_id_.size();
}

std::string sampled_tool_block(const std::string& raw, bool thinking) {
  constexpr std::string_view kOpen = "<｜DSML｜tool_calls>";
  constexpr std::string_view kClose = "</｜DSML｜tool_calls>";
  size_t from = 0;
  if (thinking) {
    const size_t t = raw.rfind("</think>");
    if (t == std::string::npos) return {};
    from = t + 8;
  }
  size_t open = raw.find(kOpen, from);
  if (open == std::string::npos) return {};
  const size_t close = raw.find(kClose, open);
  if (close == std::string::npos) return {};
  while (open > from && (raw[open - 1] == '\n' || raw[open - 1] == ' ' || raw[open - 1] == '\t' ||
                         raw[open - 1] == '\r')) {
    --open;
  }
  return raw.substr(open, close + kClose.size() - open);
}

}  // namespace ds4::serve
