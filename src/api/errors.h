// src/api/errors.h: OpenAI-style error responses (features.md §1.9).
// Owns: ApiError (HTTP status + the fields of {"error": {...}}), its JSON body, the mapping from
// serve/engine Status codes, and ApiResult<T> (a value or an ApiError) for the api functions.
#pragma once

#include <string>
#include <variant>

#include "ds4/status.h"

namespace ds4::api {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" = null
  std::string code;   // "" = null
  // context_length_exceeded only: the two numbers the message names (-1 = absent).
  long long n_prompt_tokens = -1;
  long long n_ctx = -1;
};

template <class T>
using ApiResult = std::variant<T, ApiError>;

// {"error":{"message":...,"type":...,"param":...,"code":...}}
std::string error_body(const ApiError& e);
// Anthropic's shape: {"type":"error","error":{"type":...,"message":...}} (the type from the
// status: invalid_request_error, authentication_error, not_found_error, request_too_large,
// rate_limit_error, overloaded_error for 503, api_error otherwise).
std::string anthropic_error_body(const ApiError& e);

ApiError bad_request(std::string message, std::string param = "");
ApiError not_found(std::string message, std::string code = "");
// 400 context_length_exceeded with both numbers.
// `at_least`: n_prompt is a lower bound (a prompt refused before it was tokenized whole).
ApiError context_exceeded(long long n_prompt, long long n_ctx, std::string param,
                          bool at_least = false);
// A serve-side failure: 429 queue full, 503 shutting down, 400 too long, else 500.
ApiError from_status(const Status& s);

}  // namespace ds4::api
