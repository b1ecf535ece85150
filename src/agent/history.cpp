// src/agent/history.cpp: user turns out of a transcript's text.
#include "agent/history.h"

#include <algorithm>

#include "agent/compaction.h"
#include "base/text.h"
#include "chat/dsml_automaton.h"
#include "ds4/chat.h"

namespace ds4::agent {
namespace {

constexpr std::string_view kToolResult = "<tool_result>";

// The visible text of an assistant turn, read by the shared DSML automaton: what follows the
// reasoning, tool-call blocks as a mark, up to EOS.
class VisibleText : public chat::DsmlListener {
 public:
  void on_dsml(const chat::DsmlEvent& e) override {
    using K = chat::DsmlEventKind;
    if (ended_) return;
    if (e.kind == K::kText && !in_block_) out_ += e.bytes;
    if (e.kind == K::kBlockOpen) {
      in_block_ = true;
      out_ += "[tool calls]";
    }
    if (e.kind == K::kBlockClose) in_block_ = false;
    if (e.kind == K::kEndOfSentence) ended_ = true;
  }
  std::string take() { return std::string(base::trim(out_)); }

 private:
  std::string out_;
  bool in_block_ = false;
  bool ended_ = false;
};

// One assistant round's visible text. The round starts with the assistant prefix's think tag:
// <think> (reasoning follows) or </think> (the answer follows).
std::string visible_answer(std::string_view round) {
  const bool thinking = round.starts_with(chat::kThinkStart);
  if (thinking) {
    round.remove_prefix(chat::kThinkStart.size());
  } else if (round.starts_with(chat::kThinkEnd)) {
    round.remove_prefix(chat::kThinkEnd.size());
  }
  chat::DsmlAutomaton automaton(chat::DsmlOptions{.thinking = thinking, .tool_calls = true});
  VisibleText text;
  automaton.feed(round, &text);
  automaton.finish(&text);
  return text.take();
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
  const size_t first_user = transcript.find(chat::kUserTag);
  const std::string_view head = transcript.substr(0, first_user);
  const std::string opening(base::trim(summary_opening()));
  if (const size_t s = head.find(opening); s != std::string_view::npos) {
    std::string_view body = head.substr(s + opening.size());
    const std::string closing(base::trim(summary_closing()));
    body = body.substr(0, body.find(closing));
    turns.push_back({.summary = true, .answer = clip_answer(base::trim(body))});
  }
  size_t at = first_user;
  while (at != std::string_view::npos) {
    at += chat::kUserTag.size();
    const size_t next = transcript.find(chat::kUserTag, at);
    const std::string_view seg =
        transcript.substr(at, next == std::string_view::npos ? next : next - at);
    at = next;
    const size_t a = seg.find(chat::kAssistantTag);
    const std::string_view user = seg.substr(0, a);
    const std::string answer = a == std::string_view::npos
                                   ? std::string()
                                   : visible_answer(seg.substr(a + chat::kAssistantTag.size()));
    if (user.starts_with(kToolResult) && !turns.empty() && !turns.back().summary) {
      HistoryTurn& t = turns.back();
      ++t.tool_rounds;
      if (!answer.empty()) t.answer += (t.answer.empty() ? "" : "\n") + answer;
      continue;
    }
    turns.push_back({.user = std::string(base::trim(user)), .answer = answer});
  }
  for (HistoryTurn& t : turns) t.answer = clip_answer(t.answer);
  n = std::clamp(n, 1, kHistoryMaxTurns);
  if (turns.size() > static_cast<size_t>(n)) {
    turns.erase(turns.begin(), turns.end() - n);
  }
  return turns;
}

}  // namespace ds4::agent
