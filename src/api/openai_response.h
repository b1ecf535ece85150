// src/api/openai_response.h: serve events -> OpenAI response bodies and SSE chunks
// (features.md §1.11-§1.12), and the model list.
// Owns: chat.completion / text_completion objects, chat.completion.chunk / text_completion
// stream chunks (role, reasoning_content and content deltas, tool-call headers then argument
// deltas, the final finish_reason, the optional usage chunk, [DONE]), usage with cached tokens,
// finish-reason names, and the /v1/models objects.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "api/openai_request.h"
#include "api/protocol.h"
#include "serve/request.h"

namespace ds4::api {

struct ResponseMeta {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;     // chatcmpl-... / cmpl-...
  std::string model;  // as the request named it
  long long created = 0;
  bool include_usage = false;
  int prompt_tokens = 0;       // known before the prefill (Anthropic message_start)
  bool emit_reasoning = true;  // Responses: reasoning items only when asked for
  // Chat: tool_choice named one function. OpenAI then ends a call with finish_reason "stop",
  // not "tool_calls" (the client asked for that call; it did not choose to make it).
  bool named_tool = false;
};

// "stop", "length", "tool_calls" ("stop" for a call a named tool_choice forced); errors and
// cancellations have no OpenAI name ("error").
const char* finish_reason_name(serve::FinishReason reason, bool named_tool = false);

// Non-streaming: gathers a request's events into its response.
class ResponseCollector final : public Collector {
 public:
  explicit ResponseCollector(ResponseMeta meta) : meta_(std::move(meta)) {}
  void add(const serve::Event& e) override;
  bool done() const override { return done_; }
  // After kDone: 200 and the completion object, or the error status and body.
  int status() const override;
  std::string body() const override;

 private:
  struct Call {
    std::string id, name, arguments;
  };
  ResponseMeta meta_;
  std::string content_, reasoning_;
  std::vector<Call> calls_;
  serve::Event done_event_;
  bool done_ = false;
};

// Streaming: turns each event into the SSE bytes to send (possibly none).
class StreamEncoder final : public StreamWriter {
 public:
  explicit StreamEncoder(ResponseMeta meta) : meta_(std::move(meta)) {}
  // The first bytes of the stream (chat: the assistant role chunk).
  std::string start() override;
  std::string encode(const serve::Event& e) override;
  std::string keepalive() override;

 private:
  // chat: `payload` is the delta object; completions: the text.
  std::string chunk(const nlohmann::json& payload, const char* finish) const;
  ResponseMeta meta_;
};

struct ModelCard {
  std::string name;  // human-readable, e.g. "DeepSeek V4 Flash"
  int n_ctx = 0;
};
std::string models_list_json(const ModelCard& card);
// nullopt-like: "" when `id` is not one of the listed ids.
std::string model_json(std::string_view id, const ModelCard& card);

}  // namespace ds4::api
