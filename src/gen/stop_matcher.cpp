// src/gen/stop_matcher.cpp: earliest stop-string match with a rolling hold-back window.
#include "gen/stop_matcher.h"

#include <algorithm>

namespace ds4::gen {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (s.empty()) continue;
    max_len_ = std::max(max_len_, s.size());
    stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::feed(std::string_view bytes) {
  if (hit_) return {};
  if (stops_.empty()) return std::string(bytes);
  held_.append(bytes);
  size_t first = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    if (at < first) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    hit_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the last max_len - 1 bytes: a stop string may start there and end in a later chunk.
  // The cut never splits a UTF-8 character (continuation bytes stay with their lead byte).
  size_t cut = held_.size() - std::min(held_.size(), max_len_ - 1);
  while (cut > 0 && (static_cast<unsigned char>(held_[cut]) & 0xC0) == 0x80) --cut;
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return hit_ ? std::string() : out;
}

}  // namespace ds4::gen
