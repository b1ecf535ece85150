// src/agent/turn_text.h: the tokens a user turn adds to the agent's transcript.
// Owns: rendering one user turn -- the user's text, tool results, or both -- as the chat template
// writes it after an assistant turn ("<｜User｜>" + blocks + "<｜Assistant｜>" + the think tag),
// and tokenizing it so that what the user, a file or a command wrote stays text (special-token
// strings inside it never become control tokens). Does not own: the template's rules (chat/), the
// session's first tokens (system_prompt.h), or when turns are appended (turn_loop.h).
#pragma once

#include <span>
#include <vector>

#include "agent/system_prompt.h"
#include "ds4/chat.h"
#include "ds4/status.h"
#include "ds4/tokenizer.h"

namespace ds4::agent {

// The tokens of a user turn holding `blocks` (text blocks and tool results, in order), through
// the assistant prefix of the reply that follows.
Result<std::vector<TokenId>> user_turn_tokens(const Tokenizer& tok, const PromptMode& mode,
                                              std::span<const chat::ContentBlock> blocks);

}  // namespace ds4::agent
