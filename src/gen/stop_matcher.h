// src/gen/stop_matcher.h: stop strings over a stream of output bytes (features.md §1.7).
// Owns: finding the earliest match of any stop string across chunk boundaries and holding back
// the bytes that could still begin one, so text after a match is never released.
// Does not own: UTF-8 boundaries (the output parser holds incomplete characters).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ds4::gen {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);  // empty strings are dropped

  // Takes the next bytes; returns the bytes now known to come before any stop string. After a
  // match, hit() is true and everything from the match on is dropped.
  std::string feed(std::string_view bytes);
  // The held-back bytes (end of stream without a match).
  std::string flush();
  bool hit() const { return hit_; }
  // After a match: the stop string that matched (the first listed among those matching earliest).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;
  bool hit_ = false;
  std::string matched_;
};

}  // namespace ds4::gen
