// src/api/openai_request.cpp: OpenAI chat/completions JSON -> ApiRequest.
#include "api/openai_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/tool_choice.h"

namespace ds4::api {
namespace {

using nlohmann::json;

// OpenAI content: a string, null, or an array of parts (text parts concatenated, others dropped).
std::optional<std::string> content_text(const json& c) {
  if (c.is_null()) return std::string();
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return std::nullopt;
  std::string out;
  for (const auto& part : c) {
    if (part.is_string()) {
      out += part.get<std::string>();
    } else if (part.is_object()) {
      auto t = part.find("text");
      if (t != part.end() && t->is_string()) out += t->get<std::string>();
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<ApiError> parse_tool_calls(const json& calls, size_t index, chat::Message* m) {
  const std::string where = "messages[" + std::to_string(index) + "].tool_calls";
  if (!calls.is_array()) return bad_request("'" + where + "' must be an array", where);
  for (const auto& c : calls) {
    const json* fn = c.is_object() && c.contains("function") ? &c["function"] : nullptr;
    if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
      return bad_request("each of '" + where + "' needs function.name", where);
    }
    chat::ToolCall call;
    call.name = (*fn)["name"].get<std::string>();
    if (c.contains("id") && c["id"].is_string()) call.id = c["id"].get<std::string>();
    const json args = fn->value("arguments", json("{}"));
    call.arguments_json = args.is_string() ? args.get<std::string>() : args.dump();
    m->tool_calls.push_back(std::move(call));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const json& msgs, std::vector<chat::Message>* out) {
  if (!msgs.is_array()) return bad_request("'messages' must be an array", "messages");
  if (msgs.empty()) return bad_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad_request("'" + where + "' must be an object", where);
    std::string role_name = "user";
    if (m.contains("role")) {
      if (!m["role"].is_string()) return bad_request("'" + where + ".role' must be a string");
      role_name = m["role"].get<std::string>();
    }
    if (role_name == "function") role_name = "tool";
    auto role = chat::role_from_string(role_name);
    if (!role || *role == chat::Role::kLatestReminder) {
      return bad_request("unknown role '" + role_name + "' in " + where, where + ".role");
    }
    chat::Message msg{.role = *role};
    auto text = content_text(m.value("content", json(nullptr)));
    if (!text) return bad_request("'" + where + ".content' must be a string or an array of parts");
    msg.content = std::move(*text);
    if (*role == chat::Role::kAssistant) {
      auto r = m.find("reasoning_content");
      if (r != m.end() && r->is_string()) msg.reasoning = r->get<std::string>();
      auto calls = m.find("tool_calls");
      if (calls != m.end() && !calls->is_null()) {
        if (auto e = parse_tool_calls(*calls, i, &msg)) return e;
      }
    }
    if (*role == chat::Role::kTool) {
      auto id = m.find("tool_call_id");
      if (id != m.end() && id->is_string()) msg.tool_call_id = id->get<std::string>();
    }
    if (*role == chat::Role::kDeveloper && msg.content.empty()) msg.role = chat::Role::kSystem;
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

// features.md §1.4: explicit controls win; without one the deepseek-chat alias turns thinking off.
std::optional<ApiError> resolve_thinking(const json& body, const std::string& model,
                                         const ApiConfig& config, chat::ThinkMode* mode) {
  std::optional<bool> enabled;
  std::optional<chat::ThinkMode> effort;
  if (auto it = body.find("thinking"); it != body.end()) {
    if (it->is_boolean()) enabled = it->get<bool>();
    if (it->is_object() && it->contains("type") && (*it)["type"].is_string()) {
      const std::string type = (*it)["type"].get<std::string>();
      if (type == "enabled") enabled = true;
      if (type == "disabled") enabled = false;
    }
  }
  if (auto it = body.find("think"); it != body.end() && it->is_boolean()) enabled = it->get<bool>();
  if (auto it = body.find("reasoning_effort"); it != body.end() && !it->is_null()) {
    if (!it->is_string())
      return bad_request("'reasoning_effort' must be a string", "reasoning_effort");
    effort = chat::think_mode_from_effort(it->get<std::string>());
    if (!effort) {
      return bad_request("unknown reasoning_effort '" + it->get<std::string>() + "'",
                         "reasoning_effort");
    }
  }
  *mode = resolve_think_mode(enabled, effort, model, config);
  return std::nullopt;
}

std::optional<ApiError> parse_stop(const json& body, std::vector<std::string>* out) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    out->push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const auto& s : *it) {
      if (!s.is_string())
        return bad_request("'stop' must be a string or an array of strings", "stop");
      out->push_back(s.get<std::string>());
    }
  } else {
    return bad_request("'stop' must be a string or an array of strings", "stop");
  }
  std::erase(*out, std::string());
  return std::nullopt;
}

ApiResult<ApiRequest> parse_object(Endpoint endpoint, const json& body,
                                   const nlohmann::ordered_json& ordered, const ApiConfig& config) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  ApiRequest r;
  r.endpoint = endpoint;
  r.max_tokens = config.n_ctx;
  Fields f(body);
  r.model = config.model_id;
  f.string("model", &r.model);
  if (f.error()) return *f.error();
  if (auto e = check_model(r.model)) return *e;
  if (auto e = resolve_thinking(body, r.model, config, &r.think)) return *e;
  long long max_tokens = r.max_tokens, seed = 0, top_k = 0;
  f.integer("max_tokens", &max_tokens, 0);
  f.integer("max_completion_tokens", &max_tokens, 0);
  r.max_tokens = static_cast<int>(std::clamp<long long>(max_tokens, 0, config.n_ctx));
  SamplingParams client;  // defaults: temperature 1, top_p 1, min_p 0.05, top_k 0
  f.number("temperature", &client.temperature, 0, kMaxTemperature);
  f.number("top_p", &client.top_p, 0, 1);
  f.number("min_p", &client.min_p, 0, 1);
  f.integer("top_k", &top_k, 0);
  f.integer("seed", &seed);
  f.boolean("stream", &r.stream);
  if (const json* so = f.find("stream_options")) {
    if (!so->is_object())
      return bad_request("'stream_options' must be an object", "stream_options");
    Fields sf(*so);
    sf.boolean("include_usage", &r.include_usage);
    if (sf.error()) return *sf.error();
  }
  if (f.error()) return *f.error();
  client.top_k = static_cast<int>(std::clamp<long long>(top_k, 0, 1 << 20));
  client.seed = seed > 0 ? static_cast<uint64_t>(seed) : 0;
  // §1.6: thinking mode ignores the client's knobs (the official API does the same).
  r.sampling = r.think == chat::ThinkMode::kNone ? client : SamplingParams{.seed = client.seed};
  if (auto e = parse_stop(body, &r.stop)) return *e;
  if (auto e = parse_steering(body, config, &r.steering)) return *e;

  if (endpoint == Endpoint::kCompletions) {
    const json* p = f.find("prompt");
    if (p && p->is_array() && !p->empty()) p = &(*p)[0];
    if (!p) return bad_request("missing prompt", "prompt");
    if (!p->is_string()) return bad_request("'prompt' must be a string", "prompt");
    r.messages = {{.role = chat::Role::kSystem, .content = std::string(kCompletionsSystem)},
                  {.role = chat::Role::kUser, .content = p->get<std::string>()}};
    return r;
  }
  const json* msgs = f.find("messages");
  if (!msgs) return bad_request("missing messages", "messages");
  if (auto e = parse_messages(*msgs, &r.messages)) return *e;
  auto tc = openai_tool_choice(body);  // "none" hides the schemas
  if (auto* e = std::get_if<ApiError>(&tc)) return *e;
  ParsedToolChoice& choice = std::get<ParsedToolChoice>(tc);
  const json* tools = choice.none ? nullptr : f.find("tools");
  if (tools) {
    if (auto e = attach_tools(*tools, ordered, &r.messages)) return *e;
    r.tools = std::any_of(r.messages.begin(), r.messages.end(),
                          [](const chat::Message& m) { return !m.tools.empty(); });
  }
  if (auto e = bind_tool_choice(tools, &choice.choice)) return *e;
  r.tool_choice = std::move(choice.choice);
  return r;
}

}  // namespace

ApiResult<ApiRequest> parse_request(Endpoint endpoint, std::string_view body,
                                    const ApiConfig& config) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_request("invalid JSON request");
  try {
    return parse_object(endpoint, j, ordered_tools(body, j), config);
  } catch (const json::exception& e) {  // a type the checks above missed: still the client's
    return bad_request(std::string("invalid JSON request: ") + e.what());
  }
}

}  // namespace ds4::api
