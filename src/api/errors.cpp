// src/api/errors.cpp: error bodies and status mapping.
#include "api/errors.h"

#include <nlohmann/json.hpp>

namespace ds4::api {

using nlohmann::json;

std::string error_body(const ApiError& e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  if (e.n_prompt_tokens >= 0) err["n_prompt_tokens"] = e.n_prompt_tokens;
  if (e.n_ctx >= 0) err["n_ctx"] = e.n_ctx;
  return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string anthropic_error_body(const ApiError& e) {
  const char* type = "api_error";
  switch (e.status) {
    case 400: type = "invalid_request_error"; break;
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: type = "overloaded_error"; break;
    default: break;
  }
  json err = {{"type", type}, {"message", e.message}};
  if (e.n_prompt_tokens >= 0) err["n_prompt_tokens"] = e.n_prompt_tokens;
  if (e.n_ctx >= 0) err["n_ctx"] = e.n_ctx;
  return json{{"type", "error"}, {"error", err}}.dump(-1, ' ', false,
                                                      json::error_handler_t::replace);
}

ApiError bad_request(std::string message, std::string param) {
  return ApiError{.status = 400, .message = std::move(message), .param = std::move(param)};
}

ApiError not_found(std::string message, std::string code) {
  return ApiError{.status = 404, .message = std::move(message), .code = std::move(code)};
}

ApiError context_exceeded(long long n_prompt, long long n_ctx, std::string param, bool at_least) {
  return ApiError{.status = 400,
                  .message = "Prompt has " + std::string(at_least ? "at least " : "") +
                             std::to_string(n_prompt) +
                             " tokens, but the configured context size is " +
                             std::to_string(n_ctx) + " tokens",
                  .param = std::move(param),
                  .code = "context_length_exceeded",
                  .n_prompt_tokens = n_prompt,
                  .n_ctx = n_ctx};
}

ApiError from_status(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange: return bad_request(s.message());
    case StatusCode::kResourceExhausted:
      return ApiError{.status = 429, .message = s.message(), .type = "rate_limit_error"};
    case StatusCode::kUnavailable:
      return ApiError{.status = 503, .message = s.message(), .type = "server_error"};
    default: return ApiError{.status = 500, .message = s.message(), .type = "server_error"};
  }
}

}  // namespace ds4::api
