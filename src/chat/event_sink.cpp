// src/chat/event_sink.cpp: event assembly for the output parser (see event_sink.h).
#include "chat/event_sink.h"

#include <utility>

#include "chat/json.h"

namespace ds4::chat {

size_t incomplete_utf8_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xc0) == 0x80) continue;  // continuation: keep looking for the lead byte
    size_t need = 1;
    if (c >= 0xc0 && c <= 0xdf) need = 2;
    if (c >= 0xe0 && c <= 0xef) need = 3;
    if (c >= 0xf0 && c <= 0xf7) need = 4;
    return back < need ? back : 0;
  }
  return 0;
}

void EventSink::switch_to(OutputEventKind kind, int tool_index) {
  if (has_pending_ && (pending_.kind != kind || pending_.tool_index != tool_index)) {
    settle_raw(true);
    if (!pending_.text.empty()) ready_.push_back(std::move(pending_));
    has_pending_ = false;
  }
  if (!has_pending_) {
    pending_ = OutputEvent{kind, {}, tool_index};
    has_pending_ = true;
  }
}

void EventSink::settle_raw(bool final) {
  if (raw_.empty()) return;
  const size_t keep = final ? 0 : incomplete_utf8_tail(raw_);
  json::append_escaped(std::string_view(raw_).substr(0, raw_.size() - keep), &pending_.text);
  raw_.erase(0, raw_.size() - keep);
}

void EventSink::text(OutputEventKind kind, std::string_view bytes) {
  if (bytes.empty()) return;
  switch_to(kind, -1);
  pending_.text += bytes;
}

void EventSink::arguments(int tool_index, std::string_view json_text) {
  if (json_text.empty()) return;
  switch_to(OutputEventKind::kToolCallArguments, tool_index);
  settle_raw(true);
  pending_.text += json_text;
}

void EventSink::raw_string_value(int tool_index, std::string_view bytes) {
  if (bytes.empty()) return;
  switch_to(OutputEventKind::kToolCallArguments, tool_index);
  raw_ += bytes;
}

void EventSink::structural(OutputEvent event) {
  if (has_pending_) {
    settle_raw(true);
    if (!pending_.text.empty()) ready_.push_back(std::move(pending_));
    has_pending_ = false;
  }
  ready_.push_back(std::move(event));
}

void EventSink::flush(bool final, std::vector<OutputEvent>* out) {
  if (has_pending_) {
    settle_raw(final);
    std::string& t = pending_.text;
    // Raw bytes still held belong to a character that continues in raw_, so the escaped text is
    // complete; text/reasoning may end in the first bytes of a character: keep those.
    const size_t keep = (final || pending_.kind == OutputEventKind::kToolCallArguments)
                            ? 0
                            : incomplete_utf8_tail(t);
    if (t.size() > keep) {
      OutputEvent e{pending_.kind, t.substr(0, t.size() - keep), pending_.tool_index};
      t.erase(0, t.size() - keep);
      ready_.push_back(std::move(e));
    }
    if (final && raw_.empty() && t.empty()) has_pending_ = false;
  }
  for (OutputEvent& e : ready_) out->push_back(std::move(e));
  ready_.clear();
}

size_t EventSink::held_bytes() const {
  return raw_.size() + (has_pending_ ? pending_.text.size() : 0);
}

}  // namespace ds4::chat
