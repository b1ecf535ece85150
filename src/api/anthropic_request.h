// src/api/anthropic_request.h: Anthropic Messages request bodies (POST /v1/messages) -> the
// shared ApiRequest (features.md §1.4.2, spec/clients.md "Claude Code").
// Owns: the Messages field rules: system as a string or blocks (blocks starting with
// "x-anthropic-" dropped, so Claude Code's per-request billing line never breaks the KV prefix;
// role "system" entries inside messages merged into the system text), text / thinking /
// tool_use / tool_result / redacted blocks, Anthropic tool schemas (input_schema) turned into
// the OpenAI function shape, tool_choice, max_tokens, sampling, stop_sequences, and the thinking
// controls (thinking {enabled|disabled|adaptive}, output_config.effort). Never throws.
// Does not own: the shared request, build_request and the parsers' helpers (request_common.h).
#pragma once

#include <string_view>

#include "api/errors.h"
#include "api/request_common.h"

namespace ds4::api {

ApiResult<ApiRequest> parse_messages_request(std::string_view body, const ApiConfig& config);

}  // namespace ds4::api
