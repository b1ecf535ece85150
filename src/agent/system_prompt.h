// src/agent/system_prompt.h: the system prompt ds4-agent starts every session with (features.md
// §5.2), in our own words.
// Owns: the agent's standing instructions (who it is, the DSML contract, how to read and edit
// files, how to run long shell jobs, the working rules), the JSON schemas of its tools, the
// reminder of the DSML syntax that follows a malformed call, and the session's first tokens:
// BOS, the think-mode prefix and the system text rendered as chat (its DSML examples become real
// DSML tokens), then the user's extra --system text as plain text after a blank line.
// Does not own: the tools themselves (dispatch.h), the chat template's own tools block wording
// (chat/), or when the prompt is appended (turn_loop.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/chat.h"
#include "ds4/status.h"
#include "ds4/tokenizer.h"

namespace ds4::agent {

// The --system text when the user gives none (features.md §5.1); an empty --system drops it.
inline constexpr std::string_view kDefaultExtraSystem =
    "You are a helpful coding assistant running inside ds4-agent.";

// The built-in instructions (without the tool schemas, which the chat template's tools block
// lists after them).
std::string_view system_instructions();

// One OpenAI-style function schema (JSON text) per tool of the dispatcher, in table order.
std::span<const std::string_view> tool_schemas();

// Appended to a "Tool error: invalid DSML tool call: ..." message: the nested shape to write.
std::string dsml_syntax_reminder();

// How a session is rendered: the think mode and the context size (Think-Max rule).
struct PromptMode {
  chat::ThinkMode think = chat::ThinkMode::kHigh;
  int64_t context_size = 0;
};

// The first tokens of a session: the rendered system message (BOS, think-mode prefix,
// instructions, tools block), then "\n\n" + `extra` as plain text when `extra` is not empty.
Result<std::vector<TokenId>> system_prompt_tokens(const Tokenizer& tok, const PromptMode& mode,
                                                  std::string_view extra);

}  // namespace ds4::agent
