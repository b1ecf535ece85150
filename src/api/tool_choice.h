// src/api/tool_choice.h: each protocol's tool_choice as a serve::ToolChoice, checked against the
// tools the request declares (features.md §2; what the real APIs accept where the spec is
// silent).
// Owns: the three wire shapes (OpenAI chat: "none" | "auto" | "required" | {"type":"function",
// "function":{"name"}} | {"type":"allowed_tools",...}; Anthropic Messages: {"type":"auto" |
// "any" | "tool" | "none", "name", "disable_parallel_tool_use"}; Responses: "none" | "auto" |
// "required" | {"type":"function","name"} | allowed_tools | hosted tool types), the parallel
// switches (parallel_tool_calls: false, disable_parallel_tool_use: true: one call), and the
// errors: an unknown value, a forced choice without tools, a named tool the request lacks.
// Does not own: rendering the tools (attach_tools), the forcing itself (gen/output_forcing.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "api/errors.h"
#include "serve/request.h"

namespace ds4::api {

struct ParsedToolChoice {
  bool none = false;  // "none": the schemas are not rendered and no call is parsed
  serve::ToolChoice choice;
};

// Each takes the request body; an absent tool_choice is auto.
ApiResult<ParsedToolChoice> openai_tool_choice(const nlohmann::json& body);
ApiResult<ParsedToolChoice> anthropic_tool_choice(const nlohmann::json& body);
ApiResult<ParsedToolChoice> responses_tool_choice(const nlohmann::json& body);

// `tools`: the request's tools in the OpenAI function shape, as rendered (null or empty: none).
// Fills choice->names (required: every declared tool, or the allowed_tools subset; named: the
// one tool). Errors (400, param tool_choice): required or named without tools, a named tool
// that is not declared.
std::optional<ApiError> bind_tool_choice(const nlohmann::json* tools, serve::ToolChoice* choice);

}  // namespace ds4::api
