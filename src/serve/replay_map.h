// src/serve/replay_map.h: tool-call id -> the DSML block exactly as sampled (features.md §2.4).
// Owns: the bounded map (least recently used ids go first once max_ids is reached) and its lock.
// The scheduler adds the ids of each finished tool-call turn; submitters look them up while
// rendering, so the next request's history repeats the sampled bytes and reuses the session.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ds4::serve {

class ReplayMap {
 public:
  explicit ReplayMap(size_t max_ids) : max_ids_(max_ids) {}

  // Remembers `block` for every id (one block shared by the calls of one turn).
  void remember(std::span<const std::string> ids, const std::string& block);
  // The block of `id`, touching it; nullopt when unknown or evicted.
  std::optional<std::string> find(const std::string& id);
  size_t size() const;
  // The (id, block) pairs a checkpoint whose decoded text is `text` should carry on disk
  // (features.md §3.1 KTM): blocks that occur verbatim in `text`, or whose start (through the
  // opening tag) ends `text` -- a checkpoint stops before the last sampled token of its turn.
  std::vector<std::pair<std::string, std::string>> entries_in(std::string_view text) const;

 private:
  struct Entry {
    std::shared_ptr<const std::string> block;
    std::list<std::string>::iterator lru;
  };
  size_t max_ids_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recent first
  std::unordered_map<std::string, Entry> by_id_;
};

// The DSML block of a raw tool-call turn: from the whitespace before `<｜DSML｜tool_calls>` (after
// the last `</think>` when `thinking`) through `</｜DSML｜tool_calls>`; "" when there is none.
std::string sampled_tool_block(const std::string& raw, bool thinking);

}  // namespace ds4::serve
