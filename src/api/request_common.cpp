// src/api/request_common.cpp: ApiRequest -> serve::Request, and the parsers' shared helpers.
#include "api/request_common.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

namespace ds4::api {
namespace {

using nlohmann::json;

bool is_whole(double d) { return std::isfinite(d) && std::floor(d) == d && d < 9.2e18; }

// Exact replay: the remembered block of an assistant message, when every call id of the message
// maps to the same one.
std::optional<std::string> replayed_block(serve::ReplayMap& replay, const chat::Message& m) {
  if (m.role != chat::Role::kAssistant || m.tool_calls.empty()) return std::nullopt;
  std::optional<std::string> block;
  for (const auto& c : m.tool_calls) {
    auto b = c.id.empty() ? std::nullopt : replay.find(c.id);
    if (!b || (block && *b != *block)) return std::nullopt;
    block = std::move(b);
  }
  return block;
}

}  // namespace

std::optional<ApiError> check_prompt_bytes(size_t text_bytes, const ApiConfig& config,
                                           std::string param) {
  if (config.max_token_bytes == 0) return std::nullopt;
  const size_t at_least = (text_bytes + config.max_token_bytes - 1) / config.max_token_bytes;
  if (at_least < static_cast<size_t>(config.n_ctx)) return std::nullopt;
  return context_exceeded(static_cast<long long>(at_least), config.n_ctx, std::move(param), true);
}

bool known_model(std::string_view id) {
  return id == kFlashId || id == kProId || id == "deepseek-chat" || id == "deepseek-reasoner";
}

ApiResult<serve::Request> build_request(const ApiRequest& r, const Tokenizer& tok,
                                        const ApiConfig& config, serve::ReplayMap* replay) {
  // The messages are copied only when a replayed block changes one (a prompt may be tens of
  // megabytes).
  std::vector<chat::Message> replayed;
  for (size_t i = 0; replay != nullptr && i < r.messages.size(); ++i) {
    if (auto block = replayed_block(*replay, r.messages[i])) {
      if (replayed.empty()) replayed = r.messages;
      replayed[i].raw_tool_calls = std::move(*block);
    }
  }
  const std::vector<chat::Message>& messages = replayed.empty() ? r.messages : replayed;
  chat::RenderOptions ro{.think = r.think, .context_size = config.n_ctx};
  auto rendered = chat::render_prompt(messages, ro, config.chat_template);
  if (!rendered.is_ok()) return bad_request(rendered.status().message(), "messages");
  serve::Request out;
  out.rendered = std::move(rendered->text);
  if (!config.special_tokens_in_client_text) out.plain = std::move(rendered->plain);
  out.keeps_reasoning = chat::keeps_earlier_reasoning(messages, config.chat_template);
  const char* param = r.endpoint == Endpoint::kCompletions ? "prompt"
                      : r.endpoint == Endpoint::kResponses ? "input"
                                                           : "messages";
  // A prompt whose bytes alone prove it too long is refused before it is tokenized: tokenizing a
  // body of tens of megabytes costs seconds and gigabytes for a certain 400.
  ApiConfig bound = config;
  bound.max_token_bytes = tok.max_token_bytes();
  if (auto e = check_prompt_bytes(out.rendered.size(), bound, param)) return *e;
  out.prompt.reserve(out.rendered.size() / 3 + 4);
  tok.encode_rendered(out.rendered, out.plain, &out.prompt);
  if (out.prompt.size() >= static_cast<size_t>(config.n_ctx)) {
    return context_exceeded(static_cast<long long>(out.prompt.size()), config.n_ctx, param);
  }
  out.sampling = r.sampling;
  out.max_tokens = r.max_tokens;
  out.output = gen::OutputSpec{.stop = r.stop,
                               .parse_output = r.endpoint != Endpoint::kCompletions,
                               .thinking = r.think != chat::ThinkMode::kNone,
                               .tools = r.tools,
                               .tool_choice = r.tool_choice,
                               .reasoning_budget = r.reasoning_budget};
  out.steering = r.steering;
  out.protocol = r.endpoint == Endpoint::kResponses     ? serve::Protocol::kResponses
                 : r.endpoint == Endpoint::kCompletions ? serve::Protocol::kCompletions
                                                        : serve::Protocol::kChat;
  return out;
}

std::optional<ApiError> parse_steering(const json& body, const ApiConfig& config,
                                       std::optional<Steering>* out) {
  const auto it = body.find("dir_steering");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) {
    return bad_request("'dir_steering' must be an object {\"ffn\": F, \"attn\": A}",
                       "dir_steering");
  }
  Steering s;
  Fields f(*it);
  f.number("ffn", &s.ffn, -Steering::kMaxScale, Steering::kMaxScale);
  f.number("attn", &s.attn, -Steering::kMaxScale, Steering::kMaxScale);
  if (f.error()) return *f.error();
  if (s.active() && !config.steering_file) {
    return bad_request("'dir_steering' needs a server started with --dir-steering-file",
                       "dir_steering");
  }
  *out = s;
  return std::nullopt;
}

const json* Fields::find(const char* key) const {
  auto it = obj_.find(key);
  return it == obj_.end() || it->is_null() ? nullptr : &*it;
}

void Fields::number(const char* key, float* out) {
  if (const json* v = find(key)) {
    if (!v->is_number()) return fail(key, "a number");
    const double d = v->get<double>();
    if (!std::isfinite(d)) return fail(key, "a finite number");
    *out = static_cast<float>(d);
  }
}

void Fields::integer(const char* key, long long* out) {
  if (const json* v = find(key)) {
    if (!v->is_number_integer() && !(v->is_number_float() && is_whole(v->get<double>()))) {
      return fail(key, "an integer");
    }
    *out = v->is_number_unsigned()  ? static_cast<long long>(std::min<uint64_t>(
                                         v->get<uint64_t>(), std::numeric_limits<long long>::max()))
           : v->is_number_integer() ? v->get<long long>()
                                    : static_cast<long long>(v->get<double>());
  }
}

void Fields::number(const char* key, float* out, double lo, double hi) {
  float v = *out;
  number(key, &v);
  if (error_) return;
  if (v < lo || v > hi) {
    char range[64];
    std::snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
    return fail(key, range);
  }
  *out = v;
}

void Fields::integer(const char* key, long long* out, long long lo) {
  long long v = *out;
  integer(key, &v);
  if (error_) return;
  if (v < lo) return fail(key, "an integer of at least " + std::to_string(lo));
  *out = v;
}

void Fields::boolean(const char* key, bool* out) {
  if (const json* v = find(key)) {
    if (!v->is_boolean()) return fail(key, "a boolean");
    *out = v->get<bool>();
  }
}

void Fields::string(const char* key, std::string* out) {
  if (const json* v = find(key)) {
    if (!v->is_string()) return fail(key, "a string");
    *out = v->get<std::string>();
  }
}

void Fields::fail(const std::string& key, const std::string& what) {
  if (!error_) error_ = bad_request("'" + key + "' must be " + what, key);
}

nlohmann::ordered_json ordered_tools(std::string_view body, const json& parsed) {
  if (!parsed.is_object() || !parsed.contains("tools")) return nullptr;
  const auto ordered = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (ordered.is_discarded() || !ordered.is_object() || !ordered.contains("tools")) return nullptr;
  return ordered["tools"];
}

std::optional<ApiError> attach_tools(const json& tools, const nlohmann::ordered_json& ordered,
                                     std::vector<chat::Message>* msgs) {
  if (!tools.is_array()) return bad_request("'tools' must be an array", "tools");
  const bool in_order = ordered.is_array() && ordered.size() == tools.size();
  std::vector<std::string> texts;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    if (!t.is_object()) return bad_request("each tool must be an object", "tools");
    const json* fn = t.contains("function") ? &t["function"] : &t;
    if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
      return bad_request("each tool needs function.name", "tools");
    }
    // A JSON Schema is an object (a schema of "true"/"false" has no parameters to describe).
    if (const auto p = fn->find("parameters"); p != fn->end() && !p->is_null() && !p->is_object()) {
      return bad_request("tool '" + (*fn)["name"].get<std::string>() +
                             "': 'parameters' must be a JSON Schema object",
                         "tools");
    }
    texts.push_back(in_order ? ordered[i].dump() : t.dump());
  }
  if (texts.empty()) return std::nullopt;
  auto it = std::find_if(msgs->begin(), msgs->end(),
                         [](const chat::Message& m) { return m.role == chat::Role::kSystem; });
  if (it == msgs->end()) it = msgs->insert(msgs->begin(), {.role = chat::Role::kSystem});
  it->tools = std::move(texts);
  return std::nullopt;
}

chat::ThinkMode resolve_think_mode(std::optional<bool> enabled,
                                   std::optional<chat::ThinkMode> effort, const std::string& model,
                                   const ApiConfig& config) {
  if (!enabled && !effort) {
    if (model == "deepseek-chat") enabled = false;
    if (model == "deepseek-reasoner") enabled = true;
  }
  chat::ThinkMode m = effort.value_or(chat::ThinkMode::kHigh);
  if (enabled == false) m = chat::ThinkMode::kNone;
  return chat::effective_think_mode(m, config.n_ctx);
}

std::optional<ApiError> check_model(const std::string& model) {
  if (known_model(model)) return std::nullopt;
  return ApiError{.status = 404,
                  .message = "The model '" + model + "' does not exist",
                  .param = "model",
                  .code = "model_not_found"};
}

std::string call_id_from_anthropic(const std::string& id) {
  return id.starts_with("toolu_") ? "call_" + id.substr(6) : id;
}

std::string anthropic_id_from_call(const std::string& id) {
  return id.starts_with("call_") ? "toolu_" + id.substr(5) : id;
}

}  // namespace ds4::api
