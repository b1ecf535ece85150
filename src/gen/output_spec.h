// src/gen/output_spec.h: how a request's output is to be generated and read -- what the
// generation core needs to know besides the tokens.
// Owns: OutputSpec (stop strings, thinking, tool calls, a forced tool choice, a reasoning budget,
// the test hook's forced tokens) and the tool choice beyond auto.
// Does not own: the prompt, sampling parameters or limits (the caller's: serve::Request, the ds4
// CLI's options).
#pragma once

#include <string>
#include <vector>

#include "ds4/types.h"

namespace ds4::gen {

// tool_choice beyond auto (features.md §2; OpenAI "required" / a named function, Anthropic "any" /
// a named tool, Responses the same): the output after the reasoning is a DSML tool-call block,
// with kNamed exactly one invoke of names[0]. "none" never gets here: api/ drops the tools.
enum class ToolMode { kAuto, kRequired, kNamed };
struct ToolChoice {
  ToolMode mode = ToolMode::kAuto;
  std::vector<std::string> names;  // kRequired: the declared tools; kNamed: the one to call
  bool one_call = false;           // kRequired: one invoke only (parallel calls disabled)
};

struct OutputSpec {
  std::vector<std::string> stop;  // stop strings (raw output bytes); empty strings ignored
  bool parse_output = true;       // split reasoning / content / tool calls; false: all text
  bool thinking = false;          // output starts inside reasoning (closed by </think>)
  bool tools = false;             // recognise DSML tool-call blocks
  ToolChoice tool_choice;         // kRequired / kNamed need tools (output_forcing.h)
  int reasoning_budget = 0;       // > 0 (thinking): </think> is forced after this many tokens
  // Test hook: these tokens are taken in place of the first sampled ones (the model still
  // evaluates each), so a test can make a tiny model emit a particular tool call.
  std::vector<TokenId> forced;
};

}  // namespace ds4::gen
