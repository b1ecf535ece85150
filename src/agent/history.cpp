// src/agent/history.cpp: user turns out of a transcript's text.
#include "agent/history.h"

#include <algorithm>

#include "agent/compaction.h"

namespace ds4::agent {
namespace {

constexpr std::string_view kUser = "<｜User｜>";
constexpr std::string_view kAssistant = "<｜Assistant｜>";
constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kToolResult = "<tool_result>";
constexpr std::string_view kDsmlOpen = "<｜DSML｜tool_calls>";
constexpr std::string_view kDsmlClose = "</｜DSML｜tool_calls>";

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// One assistant round's visible text: after the reasoning, up to EOS, tool calls as a mark.
std::string visible_answer(std::string_view round) {
  if (const size_t e = round.find(kEos); e != std::string_view::npos) round = round.substr(0, e);
  if (const size_t t = round.find(kThinkEnd); t != std::string_view::npos) {
    round = round.substr(t + kThinkEnd.size());
  } else if (round.starts_with("<think>")) {
    return {};  // reasoning that never closed
  }
  std::string out;
  for (;;) {
    const size_t open = round.find(kDsmlOpen);
    out += round.substr(0, open);
    if (open == std::string_view::npos) break;
    out += "[tool calls]";
    const size_t close = round.find(kDsmlClose, open);
    if (close == std::string_view::npos) break;
    round = round.substr(close + kDsmlClose.size());
  }
  return std::string(trim(out));
}

}  // namespace

std::string clip_answer(std::string_view text) {
  size_t cut = std::min(text.size(), kHistoryMaxBytes);
  int lines = 0;
  for (size_t i = 0; i < cut; ++i) {
    if (text[i] == '\n' && ++lines == kHistoryMaxLines) {
      cut = i;
      break;
    }
  }
  if (cut == text.size()) return std::string(text);
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "\n[... clipped]";
}

std::vector<HistoryTurn> recent_turns(std::string_view transcript, int n) {
  std::vector<HistoryTurn> turns;
  const size_t first_user = transcript.find(kUser);
  const std::string_view head = transcript.substr(0, first_user);
  const std::string opening(trim(summary_opening()));
  if (const size_t s = head.find(opening); s != std::string_view::npos) {
    std::string_view body = head.substr(s + opening.size());
    const std::string closing(trim(summary_closing()));
    body = body.substr(0, body.find(closing));
    turns.push_back({.summary = true, .answer = clip_answer(trim(body))});
  }
  size_t at = first_user;
  while (at != std::string_view::npos) {
    at += kUser.size();
    const size_t next = transcript.find(kUser, at);
    const std::string_view seg =
        transcript.substr(at, next == std::string_view::npos ? next : next - at);
    at = next;
    const size_t a = seg.find(kAssistant);
    const std::string_view user = seg.substr(0, a);
    const std::string answer = a == std::string_view::npos
                                   ? std::string()
                                   : visible_answer(seg.substr(a + kAssistant.size()));
    if (user.starts_with(kToolResult) && !turns.empty() && !turns.back().summary) {
      HistoryTurn& t = turns.back();
      ++t.tool_rounds;
      if (!answer.empty()) t.answer += (t.answer.empty() ? "" : "\n") + answer;
      continue;
    }
    turns.push_back({.user = std::string(trim(user)), .answer = answer});
  }
  for (HistoryTurn& t : turns) t.answer = clip_answer(t.answer);
  n = std::clamp(n, 1, kHistoryMaxTurns);
  if (turns.size() > static_cast<size_t>(n)) {
    turns.erase(turns.begin(), turns.end() - n);
  }
  return turns;
}

}  // namespace ds4::agent
