// src/agent/history.h: a transcript's recent turns as a person reads them (/history, /switch).
// Owns: splitting a transcript's text (tokens decoded, special tokens as their text) into user
// turns with the assistant's visible answer -- reasoning dropped, tool-call blocks shown as a
// mark, tool results folded into the turn that asked for them -- plus a compaction summary, and
// the clipping of long answers. Does not own: the transcript (turn_loop.h) or display (the app).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ds4::agent {

// An answer is shown up to this many lines and bytes.
inline constexpr int kHistoryMaxLines = 80;
inline constexpr size_t kHistoryMaxBytes = 12000;
inline constexpr int kHistoryDefaultTurns = 3;
inline constexpr int kHistoryMaxTurns = 200;

struct HistoryTurn {
  bool summary = false;  // a compaction summary (user is empty)
  std::string user;      // what the user wrote
  std::string answer;    // the assistant's visible text over the turn's rounds, clipped
  int tool_rounds = 0;   // tool results the turn went through
};

// The last `n` turns (a compaction summary counts as one), oldest first.
std::vector<HistoryTurn> recent_turns(std::string_view transcript, int n);

// Clips to kHistoryMaxLines lines and kHistoryMaxBytes bytes (at a UTF-8 boundary), saying so.
std::string clip_answer(std::string_view text);

}  // namespace ds4::agent
