// src/api/openai_response.h: serve events -> OpenAI response bodies and SSE chunks
// (features.md §1.11-§1.12), and the model list.
// Owns: chat.completion / text_completion objects rendered from a gathered Turn,
// chat.completion.chunk / text_completion stream chunks (role, reasoning_content and content
// deltas, tool-call headers then argument deltas, the final finish_reason, the optional usage
// chunk, [DONE]), usage with cached tokens, finish-reason names, and the /v1/models objects.
// Does not own: gathering the events of a non-streaming request (Collector, protocol.h).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "api/protocol.h"
#include "serve/request.h"

namespace ds4::api {

// "stop", "length", "tool_calls" ("stop" for a call a named tool_choice forced); errors and
// cancellations have no OpenAI name ("error").
const char* finish_reason_name(serve::FinishReason reason, bool named_tool = false);

// Non-streaming: the chat.completion / text_completion object (or the error body) of a turn.
Collector openai_collector(ResponseMeta meta);

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
