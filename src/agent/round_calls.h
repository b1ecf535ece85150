// src/agent/round_calls.h: the tool calls of one assistant round, read from its raw output by the
// one DSML automaton (chat/dsml_automaton.h), and what makes a round's DSML invalid
// (features.md §5.5).
// Owns: turning the automaton's events into calls with string parameters (a string="true" value
// as decoded, a string="false" value as its JSON text, a lone JSON string unquoted), and the
// details of an invalid block: an unterminated block or call, an empty block, an invoke or a
// parameter without a name, stray text between tags, a tool call inside <think></think>.
// Does not own: recognising DSML (the automaton), running the calls (dispatch.h), the error
// message around the detail (turn_loop.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/dispatch.h"

namespace ds4::agent {

struct RoundCalls {
  std::vector<ToolCall> calls;  // in order; empty when `error` is set
  std::string error;            // non-empty: why the round's DSML is invalid (nothing runs)
  bool block = false;           // the output opened a tool-call block after its reasoning
};

// `raw`: every byte the round generated (its tool-call block exactly as sampled); `thinking`: the
// round started inside the reasoning.
RoundCalls read_round_calls(std::string_view raw, bool thinking);

}  // namespace ds4::agent
