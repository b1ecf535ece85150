// src/agent/dispatch.h: running the tool calls of one assistant round (features.md §5.3).
// Owns: the table of tool names and their required parameters, reading each tool's parameters
// from strings, and the combined tool message of a round ("Tool result i (name):" per call).
// Does not own: what the tools do (file_tools.h, edit.h, search.h, bash_jobs.h) or how calls are
// parsed from DSML (chat/).
#pragma once

#include <span>
#include <string>

#include "agent/tool_args.h"
#include "agent/tool_context.h"

namespace ds4::agent {

struct ToolCall {
  std::string name;
  ToolParams params;
};

// Runs one call. Unknown tool: "Tool error: unknown tool: X"; a required parameter missing:
// "Tool error: missing required parameter 'P' for tool X".
ToolResult run_tool(ToolContext& ctx, const ToolCall& call);

// "Tool result i (name):\n<text>" for each call (i from 1, trailing line breaks of the text
// dropped), separated by blank lines.
std::string combine_tool_results(std::span<const ToolCall> calls,
                                 std::span<const ToolResult> results);

// Runs the calls in order and returns the combined message; an empty block is an error.
std::string run_tool_calls(ToolContext& ctx, std::span<const ToolCall> calls);

}  // namespace ds4::agent
