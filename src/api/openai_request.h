// src/api/openai_request.h: OpenAI chat-completions and completions request bodies -> serve.
// Owns: every protocol default (features.md §1.4-§1.6): field types and validation, the thinking
// resolution (thinking / think / reasoning_effort / the deepseek-chat alias), the fixed sampling
// of thinking mode, tool_choice, stop strings; then rendering (chat.h) and tokenization into a
// serve::Request. Never throws: malformed input is an ApiError.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "ds4/chat.h"
#include "ds4/tokenizer.h"
#include "serve/replay_map.h"
#include "serve/request.h"

namespace ds4::api {

inline constexpr std::string_view kFlashId = "deepseek-v4-flash";
inline constexpr std::string_view kProId = "deepseek-v4-pro";
// The fixed system text /v1/completions wraps its prompt in (features.md §1.4.4).
inline constexpr std::string_view kCompletionsSystem = "You are a helpful assistant";

// kMessages: Anthropic /v1/messages (anthropic_request.h); kResponses: /v1/responses
// (responses_request.h). All four build their serve::Request through build_request below.
enum class Endpoint { kChat, kCompletions, kMessages, kResponses };

struct ApiConfig {
  int n_ctx = 32768;
  std::string model_id = std::string(kFlashId);  // echoed when a request names no model
  // The prompt format every endpoint renders (ds4-server --chat-template; docs/chat.md).
  chat::Template chat_template = chat::Template::kOfficial;
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  std::vector<chat::Message> messages;             // completions: the wrapped prompt
  chat::ThinkMode think = chat::ThinkMode::kHigh;  // after the Think-Max context rule
  bool tools = false;                              // tool schemas rendered and DSML parsed
  serve::ToolChoice tool_choice;                   // required / named (api/tool_choice.h)
  int reasoning_budget = 0;                        // Anthropic thinking.budget_tokens (0: none)
  SamplingParams sampling;
  int max_tokens = 0;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  // Responses only: reasoning items are sent only when `reasoning.summary` asks for them.
  bool emit_reasoning = true;
  // Responses only: the response whose conversation this input continues ("" = none).
  std::string previous_response_id;
};

// True for the model ids the server answers to (the loaded model's aliases).
bool known_model(std::string_view id);

ApiResult<ApiRequest> parse_request(Endpoint endpoint, std::string_view body,
                                    const ApiConfig& config);

// Renders (in config.chat_template) and tokenizes. With `replay`, an assistant message whose call
// ids all map to one remembered block renders that block byte for byte (exact replay); otherwise,
// and without `replay`, its calls render canonically. Errors: rendering rejects the messages (400),
// the prompt does not fit in the context (400 context_length_exceeded).
ApiResult<serve::Request> build_request(const ApiRequest& r, const Tokenizer& tok,
                                        const ApiConfig& config,
                                        serve::ReplayMap* replay = nullptr);

}  // namespace ds4::api
