// src/api/protocol.cpp: the failure rule and the one non-streaming collector.
#include "api/protocol.h"

namespace ds4::api {

void add_draft_usage(const serve::Usage& u, nlohmann::json* usage) {
  if (u.draft_steps == 0) return;
  (*usage)["ds4_mtp"] = {{"steps", u.draft_steps},
                         {"draft_tokens", u.draft_tokens},
                         {"accepted_draft_tokens", u.accepted_draft_tokens}};
}

using serve::EventKind;

bool failed(serve::FinishReason f) {
  return f == serve::FinishReason::kError || f == serve::FinishReason::kCancelled;
}

ApiError done_error(const serve::Event& done) {
  if (!done.error.is_ok()) return from_status(done.error);
  return ApiError{.status = 500, .message = "generation failed", .type = "server_error"};
}

std::string Turn::joined(EventKind kind) const {
  std::string out;
  for (const auto& e : events) {
    if (e.kind == kind) out += e.text;
  }
  return out;
}

std::vector<Turn::Call> Turn::calls() const {
  std::vector<Call> out;
  for (const auto& e : events) {
    if (e.kind == EventKind::kToolCallBegin) out.push_back({.id = e.tool_id, .name = e.text});
    if (e.kind == EventKind::kToolCallArguments && !out.empty()) out.back().arguments += e.text;
  }
  return out;
}

void Collector::add(const serve::Event& e) {
  switch (e.kind) {
    case EventKind::kReasoning:
    case EventKind::kText:
    case EventKind::kToolCallArguments: {
      if (e.text.empty()) break;
      auto& events = turn_.events;
      if (!events.empty() && events.back().kind == e.kind) {
        events.back().text += e.text;
      } else {
        events.push_back(e);
      }
      break;
    }
    case EventKind::kToolCallBegin:
    case EventKind::kToolCallEnd: turn_.events.push_back(e); break;
    case EventKind::kDone:
      turn_.done = e;
      done_ = true;
      body_ = render_(turn_);
      break;
  }
}

int Collector::status() const {
  return failed(turn_.done.finish) ? done_error(turn_.done).status : 200;
}

}  // namespace ds4::api
