// src/api/request_common.h: the request every protocol parses into, and what the three request
// parsers (OpenAI chat, Anthropic Messages, OpenAI Responses) share, so every protocol renders
// through the same chat::Message shapes.
// Owns: ApiRequest, ApiConfig, the Endpoint names and the model ids; build_request (rendering,
// tokenizing, the context check, exact replay of remembered tool-call blocks); for the parsers:
// the typed optional-field reader, the tools in the client's key order, attaching tool schemas
// to the system message, the thinking resolution after the protocol-specific controls are read,
// the model check, and the mapping between Anthropic tool ids (toolu_HEX) and the call ids the
// replay map keys (call_HEX).
// Does not own: any protocol's own fields (openai_request.h, anthropic_request.h,
// responses_request.h), tool_choice (tool_choice.h).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
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

// kChat, kCompletions: OpenAI (openai_request.h); kMessages: Anthropic /v1/messages
// (anthropic_request.h); kResponses: /v1/responses (responses_request.h). All four build their
// serve::Request through build_request below.
enum class Endpoint { kChat, kCompletions, kMessages, kResponses };

struct ApiConfig {
  int n_ctx = 32768;
  std::string model_id = std::string(kFlashId);  // echoed when a request names no model
  // The prompt format every endpoint renders (ds4-server --chat-template; docs/chat.md).
  chat::Template chat_template = chat::Template::kOfficial;
  // The most bytes one token covers (Tokenizer::max_token_bytes; 0: unknown). A parser may
  // refuse a prompt whose text alone proves it longer than the context before copying it.
  size_t max_token_bytes = 0;
  // ds4-server --special-tokens-in-client-text: special-token strings inside client text
  // (system, user, tool-result content, tool schemas) become control tokens, as in the reference
  // servers. Off: they are text (chat::RenderedPrompt), so a document cannot forge a turn.
  bool special_tokens_in_client_text = false;
  // The server loaded a directional steering file (--dir-steering-file): requests may set their
  // own scales (the "dir_steering" extension field); without one, only zero scales.
  bool steering_file = false;
};

// With config.max_token_bytes known: 400 context_length_exceeded ("at least N tokens") when
// `text_bytes` of prompt text cannot fit in the context whatever they say.
std::optional<ApiError> check_prompt_bytes(size_t text_bytes, const ApiConfig& config,
                                           std::string param);

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
  // The "dir_steering" extension field: {"ffn": F, "attn": A} (each -100..100, absent: 0).
  std::optional<Steering> steering;
};

// True for the model ids the server answers to (the loaded model's aliases).
bool known_model(std::string_view id);

// Renders (in config.chat_template) and tokenizes. With `replay`, an assistant message whose call
// ids all map to one remembered block renders that block byte for byte (exact replay); otherwise,
// and without `replay`, its calls render canonically. Errors: rendering rejects the messages (400),
// the prompt does not fit in the context (400 context_length_exceeded).
ApiResult<serve::Request> build_request(const ApiRequest& r, const Tokenizer& tok,
                                        const ApiConfig& config,
                                        serve::ReplayMap* replay = nullptr);

// What the parsers share from here on.

// Reads optional typed fields of one JSON object; the first wrong type becomes the error.
class Fields {
 public:
  explicit Fields(const nlohmann::json& obj) : obj_(obj) {}
  const std::optional<ApiError>& error() const { return error_; }

  // The member, or nullptr when it is absent or null.
  const nlohmann::json* find(const char* key) const;
  void number(const char* key, float* out);       // finite
  void integer(const char* key, long long* out);  // whole floats accepted, clamped to long long
  // The same within [lo, hi] / at least lo: a value outside is the error (400), never clamped.
  void number(const char* key, float* out, double lo, double hi);
  void integer(const char* key, long long* out, long long lo);
  void boolean(const char* key, bool* out);
  void string(const char* key, std::string* out);
  void fail(const std::string& key, const std::string& what);

 private:
  const nlohmann::json& obj_;
  std::optional<ApiError> error_;
};

// The ranges of the sampling fields every protocol takes: OpenAI's (temperature 0..2, top_p 0..1;
// Anthropic documents 0..1 for temperature, the wider range is accepted there too), min_p a
// fraction, top_k and the token limits not negative.
inline constexpr double kMaxTemperature = 2.0;

// Tool schemas render in the client's key order, as the reference encoder's json.dumps of the
// client's object and ds4-server do; nlohmann::json sorts keys, so the tools are read a second
// time, in order, from the body. The body's "tools" member in the client's order (null when the
// body has none or does not parse).
nlohmann::ordered_json ordered_tools(std::string_view body, const nlohmann::json& parsed);

// Attaches OpenAI tool objects ({"type":"function","function":{...}} or a bare function object)
// to the first system message, adding one at the front if there is none. `ordered`: the same
// array in the client's key order (what is rendered; `tools` itself when it is not that array).
std::optional<ApiError> attach_tools(const nlohmann::json& tools,
                                     const nlohmann::ordered_json& ordered,
                                     std::vector<chat::Message>* msgs);

// After a protocol's controls are read: explicit ones win; without any, the deepseek-chat alias
// turns thinking off and deepseek-reasoner on; then the Think-Max context rule.
chat::ThinkMode resolve_think_mode(std::optional<bool> enabled,
                                   std::optional<chat::ThinkMode> effort, const std::string& model,
                                   const ApiConfig& config);

// The "dir_steering" extension field of every protocol's body, {"ffn": F, "attn": A} (a beyond-
// the-reference control of directional steering, features.md §8): 400 for a member that is not
// an object, a scale outside -100..100, or a non-zero scale on a server without a direction file.
std::optional<ApiError> parse_steering(const nlohmann::json& body, const ApiConfig& config,
                                       std::optional<Steering>* out);

// 404 model_not_found for ids the server does not answer to.
std::optional<ApiError> check_model(const std::string& model);

// Anthropic ids carry the same 32 hex digits as the call ids the scheduler remembers: toolu_X
// <-> call_X; any other id is passed through.
std::string call_id_from_anthropic(const std::string& id);
std::string anthropic_id_from_call(const std::string& id);

}  // namespace ds4::api
