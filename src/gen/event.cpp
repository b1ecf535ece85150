// src/gen/event.cpp: names of the generation enums (logs, traces, tests).
#include "gen/event.h"

namespace ds4::gen {

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kToolCalls: return "tool_calls";
    case FinishReason::kError: return "error";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "?";
}

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kReasoning: return "reasoning";
    case EventKind::kText: return "text";
    case EventKind::kToolCallBegin: return "tool_call_begin";
    case EventKind::kToolCallArguments: return "tool_call_arguments";
    case EventKind::kToolCallEnd: return "tool_call_end";
    case EventKind::kDone: return "done";
  }
  return "?";
}

}  // namespace ds4::gen
