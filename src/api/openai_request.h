// src/api/openai_request.h: OpenAI chat-completions and completions request bodies -> ApiRequest.
// Owns: every OpenAI protocol default (features.md §1.4-§1.6): field types and validation, the
// thinking controls (thinking / think / reasoning_effort), the fixed sampling of thinking mode,
// messages and their tool calls, tools and tool_choice, stream_options, stop strings, and the
// completions prompt wrapper. Never throws: malformed input is an ApiError.
// Does not own: the shared request, build_request and the helpers every parser uses
// (request_common.h).
#pragma once

#include <string_view>

#include "api/errors.h"
#include "api/request_common.h"

namespace ds4::api {

// The fixed system text /v1/completions wraps its prompt in (features.md §1.4.4).
inline constexpr std::string_view kCompletionsSystem = "You are a helpful assistant";

// `endpoint`: kChat or kCompletions.
ApiResult<ApiRequest> parse_request(Endpoint endpoint, std::string_view body,
                                    const ApiConfig& config);

}  // namespace ds4::api
