// src/gen/event.h: what one request's generation produces, as events -- the vocabulary the
// generation core speaks to its users (the server's scheduler and protocols, the ds4 CLI).
// Owns: EventKind and Event (reasoning, text, tool-call pieces, and a final kDone with the
// finish reason and usage), FinishReason and Usage, and their names.
// Does not own: how events are framed for a protocol (api/) or shown (apps/cli).
#pragma once

#include <string>

#include "ds4/status.h"

namespace ds4::gen {

enum class FinishReason {
  kStop,       // EOS or a stop string
  kLength,     // max_tokens or the context is full
  kToolCalls,  // the model closed a tool-call block
  kError,      // evaluation failed or the server is shutting down
  kCancelled,  // the submitter cancelled (client gone, an interrupt)
};
const char* to_string(FinishReason reason);

struct Usage {
  int prompt_tokens = 0;      // tokens of the effective prompt
  int cached_tokens = 0;      // of those, reused from the live session
  int completion_tokens = 0;  // sampled tokens (EOS included when sampled)
  int reasoning_tokens = 0;   // of those, taken while the output was reasoning (before </think>)
  // MTP speculative decoding (issue 51): verification passes, drafts verified, drafts kept.
  int draft_steps = 0;
  int draft_tokens = 0;
  int accepted_draft_tokens = 0;
};

enum class EventKind {
  kReasoning,          // text: reasoning bytes
  kText,               // text: content bytes
  kToolCallBegin,      // text: tool name; tool_index; tool_id
  kToolCallArguments,  // text: a fragment of the arguments JSON object; tool_index
  kToolCallEnd,        // tool_index
  kDone,               // always last: finish, usage, error (kError) and the raw output
};
const char* to_string(EventKind kind);

struct Event {
  EventKind kind = EventKind::kText;
  std::string text;
  int tool_index = -1;
  std::string tool_id;
  FinishReason finish = FinishReason::kStop;
  Usage usage;
  Status error;               // kDone with kError: why
  std::string stop_sequence;  // kDone with kStop: the stop string that matched ("" = EOS)
};

}  // namespace ds4::gen
