// src/serve/request.h: the typed vocabulary between a protocol front end and the scheduler.
// Owns: Request (a rendered, tokenized prompt plus how to generate from it), Event (what one
// request produced: reasoning, text, tool-call pieces, and a final kDone with the finish reason and
// usage), FinishReason and Usage.
// Does not own: JSON or any protocol defaults (api/ decides them), sessions (scheduler.h).
#pragma once

#include <string>
#include <vector>

#include "ds4/sampling.h"
#include "ds4/status.h"
#include "ds4/types.h"

namespace ds4::serve {

enum class FinishReason {
  kStop,       // EOS or a stop string
  kLength,     // max_tokens or the context is full
  kToolCalls,  // the model closed a tool-call block
  kError,      // evaluation failed or the server is shutting down
  kCancelled,  // the submitter cancelled (client gone)
};
const char* to_string(FinishReason reason);

struct Usage {
  int prompt_tokens = 0;      // tokens of the effective prompt
  int cached_tokens = 0;      // of those, reused from the live session
  int completion_tokens = 0;  // sampled tokens (EOS included when sampled)
};

// tool_choice beyond auto (features.md §2; OpenAI "required" / a named function, Anthropic "any" /
// a named tool, Responses the same): the output after the reasoning is a DSML tool-call block,
// with kNamed exactly one invoke of names[0]. "none" never gets here: api/ drops the tools.
enum class ToolMode { kAuto, kRequired, kNamed };
struct ToolChoice {
  ToolMode mode = ToolMode::kAuto;
  std::vector<std::string> names;  // kRequired: the declared tools; kNamed: the one to call
  bool one_call = false;           // kRequired: one invoke only (parallel calls disabled)
};

// Whose rendering a request's text is (features.md §1.13, §2.7, §3.1): after a thinking turn
// the client renders its history without the hidden reasoning the live session holds, so a
// Responses turn, or a tool-less chat / Anthropic messages one, leaves that visible transcript as
// the key of the session's evict and shutdown saves, and a file keyed so serves only requests of
// the same protocol. kCompletions (and tests) use token-text keys only.
enum class Protocol { kCompletions, kChat, kResponses };  // kChat: also Anthropic messages

struct Request {
  std::vector<TokenId> prompt;    // the rendered prompt, tokenized with specials recognised
  std::string rendered;           // its text: the byte-prefix match against a live session
  SamplingParams sampling;        // seed 0: the scheduler picks one
  int max_tokens = 256;           // clamped to the room left in the context
  std::vector<std::string> stop;  // stop strings (raw output bytes); empty strings ignored
  bool parse_output = true;       // split reasoning / content / tool calls; false: all text
  bool thinking = false;          // output starts inside reasoning (closed by </think>)
  bool tools = false;             // recognise DSML tool-call blocks
  ToolChoice tool_choice;         // kRequired / kNamed need tools (output_forcing.h)
  int reasoning_budget = 0;       // > 0 (thinking): </think> is forced after this many tokens
  Protocol protocol = Protocol::kCompletions;
  // The template kept the reasoning of earlier turns (chat::keeps_earlier_reasoning): a client's
  // next request repeats the "<think>" this prompt ends with (the visible transcript, §2.7).
  bool keeps_reasoning = false;
  // Test hook: these tokens are taken in place of the first sampled ones (the model still
  // evaluates each), so a test can make the tiny model emit a particular tool call.
  std::vector<TokenId> forced;
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

}  // namespace ds4::serve
