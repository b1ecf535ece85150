// src/api/responses_request.h: OpenAI Responses request bodies (POST /v1/responses) -> the shared
// ApiRequest (features.md §1.4.3, spec/clients.md "Codex CLI").
// Owns: input as a string or items (message, function_call, function_call_output, reasoning,
// custom tool calls and outputs; bookkeeping items skipped), instructions, function tools (every
// other tool type skipped, never rejected), tool_choice, max_output_tokens, temperature, top_p,
// reasoning {effort, summary}, stream, and previous_response_id resolved against the
// ResponsesStore (a 400 telling the client to resend the full input when it is gone).
// Does not own: the shared request, build_request and the parsers' helpers (request_common.h).
#pragma once

#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/request_common.h"
#include "api/responses_store.h"

namespace ds4::api {

struct ResponsesParsed {
  ApiRequest request;
  // The conversation without instructions and tools: stored under the new response id.
  std::vector<chat::Message> conversation;
};

ApiResult<ResponsesParsed> parse_responses_request(std::string_view body, const ApiConfig& config,
                                                   ResponsesStore* store);

}  // namespace ds4::api
