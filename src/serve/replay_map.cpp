// src/serve/replay_map.cpp: the LRU-bounded exact-replay map.
#include "serve/replay_map.h"

#include <algorithm>
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

namespace {

// True when `block` occurs in `text`, or a prefix of it that covers the opening tag ends `text`.
bool carried_by(std::string_view text, std::string_view block) {
  constexpr std::string_view kOpen = "<｜DSML｜tool_calls>";
  if (text.find(block) != std::string_view::npos) return true;
  const size_t open = block.find(kOpen);
  if (open == std::string_view::npos) return false;
  for (size_t n = std::min(block.size() - 1, text.size()); n >= open + kOpen.size(); --n) {
    if (text.ends_with(block.substr(0, n))) return true;
  }
  return false;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ReplayMap::entries_in(
    std::string_view text) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (text.find("｜DSML｜tool_calls>") == std::string_view::npos) return out;
  std::lock_guard lock(mu_);
  std::unordered_map<const std::string*, bool> seen;  // blocks are shared by a turn's ids
  for (const auto& [id, e] : by_id_) {
    auto [it, fresh] = seen.try_emplace(e.block.get(), false);
    if (fresh) it->second = carried_by(text, *e.block);
    if (it->second) out.emplace_back(id, *e.block);
  }
  return out;
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
