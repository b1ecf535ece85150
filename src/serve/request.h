// src/serve/request.h: the typed vocabulary between a protocol front end and the scheduler.
// Owns: Request (a rendered, tokenized prompt plus how to generate from it) and Protocol; the
// events a request produces are the generation core's (gen/event.h).
// Does not own: JSON or any protocol defaults (api/ decides them), sessions (scheduler.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ds4/sampling.h"
#include "ds4/session.h"
#include "ds4/status.h"
#include "ds4/tokenizer.h"
#include "ds4/types.h"
#include "gen/event.h"
#include "gen/output_spec.h"

namespace ds4::serve {

// The generation core's vocabulary (gen/), used throughout the serving stack.
using gen::Event;
using gen::EventKind;
using gen::FinishReason;
using gen::ToolChoice;
using gen::ToolMode;
using gen::Usage;

// Whose rendering a request's text is (features.md §1.13, §2.7, §3.1): after a thinking turn
// the client renders its history without the hidden reasoning the live session holds, so a
// Responses turn, or a tool-less chat / Anthropic messages one, leaves that visible transcript as
// the key of the session's evict and shutdown saves, and a file keyed so serves only requests of
// the same protocol. kCompletions (and tests) use token-text keys only.
enum class Protocol { kCompletions, kChat, kResponses };  // kChat: also Anthropic messages

struct Request {
  std::vector<TokenId> prompt;  // the rendered prompt, tokenized (Tokenizer::encode_rendered)
  std::string rendered;         // its text: the byte-prefix match against a live session
  // The client text in `rendered` (chat::RenderedPrompt::plain): special-token strings there are
  // tokenized as text, here and wherever a suffix of `rendered` is tokenized again.
  std::vector<TextRange> plain;
  SamplingParams sampling;  // seed 0: the scheduler picks one
  int max_tokens = 256;     // clamped to the room left in the context
  gen::OutputSpec output;   // stop strings, thinking, tool calls and forcing
  Protocol protocol = Protocol::kCompletions;
  // The template kept the reasoning of earlier turns (chat::keeps_earlier_reasoning): a client's
  // next request repeats the "<think>" this prompt ends with (the visible transcript, §2.7).
  bool keeps_reasoning = false;
  // The request's directional steering scales (the "dir_steering" extension field, features.md
  // §8); none: the server's (--dir-steering-*). A session computed with other scales is not
  // reused for it, and the disk cache serves and keeps only the server's.
  std::optional<Steering> steering;
};

// Appends the tokens of rendered[from..] (a continuation of tokens that cover rendered[..from]),
// the client-text ranges kept as text.
void append_rendered_tokens(const Tokenizer& tok, const Request& r, size_t from,
                            std::vector<TokenId>* out);

}  // namespace ds4::serve
