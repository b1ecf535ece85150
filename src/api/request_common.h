// src/api/request_common.h: what the three request parsers (OpenAI chat, Anthropic Messages,
// OpenAI Responses) share, so every protocol renders through the same chat::Message shapes.
// Owns: the typed optional-field reader, attaching tool schemas to the system message, the
// thinking resolution after the protocol-specific controls are read, the model check, and the
// mapping between Anthropic tool ids (toolu_HEX) and the call ids the replay map keys (call_HEX).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/openai_request.h"
#include "ds4/chat.h"

namespace ds4::api {

// Reads optional typed fields of one JSON object; the first wrong type becomes the error.
class Fields {
 public:
  explicit Fields(const nlohmann::json& obj) : obj_(obj) {}
  const std::optional<ApiError>& error() const { return error_; }

  const nlohmann::json* find(const char* key) const {
    auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  void number(const char* key, float* out) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_number()) return fail(key, "a number");
      const double d = v->get<double>();
      if (!std::isfinite(d)) return fail(key, "a finite number");
      *out = static_cast<float>(d);
    }
  }
  void integer(const char* key, long long* out) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_number_integer() && !(v->is_number_float() && is_whole(v->get<double>()))) {
        return fail(key, "an integer");
      }
      *out = v->is_number_unsigned()
                 ? static_cast<long long>(std::min<uint64_t>(v->get<uint64_t>(),
                                                             std::numeric_limits<long long>::max()))
             : v->is_number_integer() ? v->get<long long>()
                                      : static_cast<long long>(v->get<double>());
    }
  }
  void boolean(const char* key, bool* out) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_boolean()) return fail(key, "a boolean");
      *out = v->get<bool>();
    }
  }
  void string(const char* key, std::string* out) {
    if (const nlohmann::json* v = find(key)) {
      if (!v->is_string()) return fail(key, "a string");
      *out = v->get<std::string>();
    }
  }
  void fail(const std::string& key, const char* what) {
    if (!error_) error_ = bad_request("'" + key + "' must be " + what, key);
  }

 private:
  static bool is_whole(double d) { return std::isfinite(d) && std::floor(d) == d && d < 9.2e18; }
  const nlohmann::json& obj_;
  std::optional<ApiError> error_;
};

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

// 404 model_not_found for ids the server does not answer to.
std::optional<ApiError> check_model(const std::string& model);

// Anthropic ids carry the same 32 hex digits as the call ids the scheduler remembers.
inline std::string call_id_from_anthropic(const std::string& id) {
  return id.starts_with("toolu_") ? "call_" + id.substr(6) : id;
}
inline std::string anthropic_id_from_call(const std::string& id) {
  return id.starts_with("call_") ? "toolu_" + id.substr(5) : id;
}

}  // namespace ds4::api
