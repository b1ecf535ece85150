// src/api/anthropic_request.cpp: Anthropic Messages JSON -> ApiRequest.
#include "api/anthropic_request.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/request_common.h"
#include "api/tool_choice.h"

namespace ds4::api {
namespace {

using nlohmann::json;

// Claude Code's first system block ("x-anthropic-billing-header: ...") changes every request.
constexpr std::string_view kDroppedSystemPrefix = "x-anthropic-";

// A string, or an array of strings and {"type":"text","text":...} blocks; other blocks dropped.
std::optional<std::vector<std::string>> text_parts(const json& c) {
  if (c.is_null()) return std::vector<std::string>{};
  if (c.is_string()) return std::vector<std::string>{c.get<std::string>()};
  if (!c.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& b : c) {
    if (b.is_string()) {
      out.push_back(b.get<std::string>());
    } else if (b.is_object()) {
      auto t = b.find("text");
      if (t != b.end() && t->is_string()) out.push_back(t->get<std::string>());
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// Appends the system parts that are not per-request client metadata.
std::optional<ApiError> add_system(const json& sys, const std::string& where,
                                   std::vector<std::string>* out) {
  auto parts = text_parts(sys);
  if (!parts)
    return bad_request("'" + where + "' must be a string or an array of text blocks", where);
  for (auto& p : *parts) {
    if (!p.starts_with(kDroppedSystemPrefix)) out->push_back(std::move(p));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_assistant(const json& content, const std::string& where,
                                        std::vector<chat::Message>* out) {
  chat::Message m{.role = chat::Role::kAssistant};
  if (content.is_string()) {
    m.content = content.get<std::string>();
  } else if (content.is_array()) {
    for (const auto& b : content) {
      if (!b.is_object())
        return bad_request("each block of '" + where + "' must be an object", where);
      const std::string type = b.value("type", std::string("text"));
      if (type == "text" && b.contains("text") && b["text"].is_string()) {
        m.content += b["text"].get<std::string>();
      } else if (type == "thinking" && b.contains("thinking") && b["thinking"].is_string()) {
        m.reasoning += b["thinking"].get<std::string>();
      } else if (type == "tool_use") {
        if (!b.contains("name") || !b["name"].is_string()) {
          return bad_request("tool_use blocks in '" + where + "' need a name", where);
        }
        chat::ToolCall call{.name = b["name"].get<std::string>()};
        if (b.contains("id") && b["id"].is_string()) {
          call.id = call_id_from_anthropic(b["id"].get<std::string>());
        }
        const json input = b.value("input", json::object());
        call.arguments_json = input.is_string() ? input.get<std::string>() : input.dump();
        m.tool_calls.push_back(std::move(call));
      }
      // redacted_thinking, server tool blocks and others carry nothing we can render.
    }
  } else if (!content.is_null()) {
    return bad_request("'" + where + "' must be a string or an array of blocks", where);
  }
  out->push_back(std::move(m));
  return std::nullopt;
}

// A user turn: its tool_result blocks become tool messages (in order), its text one user message.
std::optional<ApiError> parse_user(const json& content, const std::string& where,
                                   std::vector<chat::Message>* out) {
  if (content.is_string() || content.is_null()) {
    out->push_back({.role = chat::Role::kUser,
                    .content = content.is_string() ? content.get<std::string>() : ""});
    return std::nullopt;
  }
  if (!content.is_array())
    return bad_request("'" + where + "' must be a string or an array of blocks", where);
  std::vector<std::string> texts;
  for (const auto& b : content) {
    if (b.is_string()) {
      texts.push_back(b.get<std::string>());
      continue;
    }
    if (!b.is_object())
      return bad_request("each block of '" + where + "' must be an object", where);
    const std::string type = b.value("type", std::string("text"));
    if (type == "text" && b.contains("text") && b["text"].is_string()) {
      texts.push_back(b["text"].get<std::string>());
    } else if (type == "tool_result") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        return bad_request("tool_result blocks in '" + where + "' need a tool_use_id", where);
      }
      auto parts = text_parts(b.value("content", json(nullptr)));
      if (!parts)
        return bad_request("a tool_result's content must be a string or text blocks", where);
      std::string text = join(*parts, "\n");
      if (b.value("is_error", false)) text = "Error: " + text;
      out->push_back({.role = chat::Role::kTool,
                      .content = std::move(text),
                      .tool_call_id = call_id_from_anthropic(b["tool_use_id"].get<std::string>())});
    }
    // images, documents and other blocks are dropped (text-only model).
  }
  if (!texts.empty() || out->empty() || out->back().role != chat::Role::kTool) {
    out->push_back({.role = chat::Role::kUser, .content = join(texts, "\n")});
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const json& msgs, std::vector<std::string>* system,
                                       std::vector<chat::Message>* out) {
  if (!msgs.is_array()) return bad_request("'messages' must be an array", "messages");
  if (msgs.empty()) return bad_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad_request("'" + where + "' must be an object", where);
    const json role = m.value("role", json("user"));
    if (!role.is_string())
      return bad_request("'" + where + ".role' must be a string", where + ".role");
    const std::string name = role.get<std::string>();
    const json content = m.value("content", json(nullptr));
    std::optional<ApiError> e;
    if (name == "user") {
      e = parse_user(content, where + ".content", out);
    } else if (name == "assistant") {
      e = parse_assistant(content, where + ".content", out);
    } else if (name == "system") {  // Claude Code >= 2.1.154: merged into the leading system text
      e = add_system(content, where + ".content", system);
    } else {
      return bad_request("unknown role '" + name + "' in " + where, where + ".role");
    }
    if (e) return e;
  }
  return std::nullopt;
}

// Anthropic tool objects -> OpenAI function objects; server tools (typed, not "custom") skipped.
// Json: nlohmann::json, or ordered_json for the rendered copy (name, description, parameters,
// the schema in the client's key order). `verbatim`: each kept tool as the client sent it, which
// --chat-template ds4 renders (ds4-server keeps Anthropic schemas verbatim, features.md §2.1).
template <class Json>
Json openai_tools(const Json& tools, bool verbatim = false) {
  Json out = Json::array();
  if (!tools.is_array()) return out;
  for (const auto& t : tools) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
    if (t.contains("type") && t["type"] != "custom") continue;
    if (verbatim) {
      out.push_back(t);
      continue;
    }
    Json fn = Json::object();
    fn["name"] = t["name"];
    if (t.contains("description") && t["description"].is_string())
      fn["description"] = t["description"];
    fn["parameters"] = t.value("input_schema", Json{{"type", "object"}});
    Json tool = Json::object();
    tool["type"] = "function";
    tool["function"] = std::move(fn);
    out.push_back(std::move(tool));
  }
  return out;
}

std::optional<ApiError> resolve_thinking(const json& body, const std::string& model,
                                         const ApiConfig& config, chat::ThinkMode* mode) {
  std::optional<bool> enabled;
  std::optional<chat::ThinkMode> effort;
  if (auto it = body.find("thinking"); it != body.end() && it->is_object()) {
    const std::string type = it->value("type", std::string());
    if (type == "enabled" || type == "adaptive") enabled = true;
    if (type == "disabled") enabled = false;
  }
  for (const char* key : {"output_config", "reasoning_effort"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    const json* e = &*it;
    if (it->is_object()) {
      auto inner = it->find("effort");
      if (inner == it->end() || inner->is_null()) continue;
      e = &*inner;
    }
    if (!e->is_string())
      return bad_request(std::string("'") + key + "' effort must be a string", key);
    effort = chat::think_mode_from_effort(e->get<std::string>());
    if (!effort) return bad_request("unknown effort '" + e->get<std::string>() + "'", key);
  }
  *mode = resolve_think_mode(enabled, effort, model, config);
  return std::nullopt;
}

// thinking {"type":"enabled","budget_tokens":N}: the reasoning ends after N tokens (Claude Code
// sometimes sends 0: no budget). Other types carry none.
std::optional<ApiError> thinking_budget(const json& body, int* budget) {
  auto it = body.find("thinking");
  if (it == body.end() || !it->is_object() || it->value("type", std::string()) != "enabled") {
    return std::nullopt;
  }
  Fields f(*it);
  long long n = 0;
  f.integer("budget_tokens", &n);
  if (f.error()) return bad_request("'thinking.budget_tokens' must be an integer", "thinking");
  *budget = static_cast<int>(std::clamp<long long>(n, 0, std::numeric_limits<int>::max()));
  return std::nullopt;
}

ApiResult<ApiRequest> parse_object(const json& body, const nlohmann::ordered_json& ordered,
                                   const ApiConfig& config) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  ApiRequest r{.endpoint = Endpoint::kMessages, .model = config.model_id};
  Fields f(body);
  f.string("model", &r.model);
  if (f.error()) return *f.error();
  if (auto e = check_model(r.model)) return *e;
  if (auto e = resolve_thinking(body, r.model, config, &r.think)) return *e;
  if (auto e = thinking_budget(body, &r.reasoning_budget)) return *e;
  long long max_tokens = config.n_ctx, top_k = 0;
  f.integer("max_tokens", &max_tokens, 0);
  r.max_tokens = static_cast<int>(std::clamp<long long>(max_tokens, 0, config.n_ctx));
  SamplingParams client;
  f.number("temperature", &client.temperature, 0, kMaxTemperature);
  f.number("top_p", &client.top_p, 0, 1);
  f.integer("top_k", &top_k, 0);
  f.boolean("stream", &r.stream);
  if (f.error()) return *f.error();
  client.top_k = static_cast<int>(std::clamp<long long>(top_k, 0, 1 << 20));
  r.sampling = r.think == chat::ThinkMode::kNone ? client : SamplingParams{};  // §1.6
  if (auto e = parse_steering(body, config, &r.steering)) return *e;
  if (const json* stops = f.find("stop_sequences")) {
    if (!stops->is_array())
      return bad_request("'stop_sequences' must be an array", "stop_sequences");
    for (const auto& s : *stops) {
      if (!s.is_string())
        return bad_request("'stop_sequences' must hold strings", "stop_sequences");
      if (!s.get<std::string>().empty()) r.stop.push_back(s.get<std::string>());
    }
  }
  std::vector<std::string> system;
  if (const json* sys = f.find("system")) {
    if (auto e = add_system(*sys, "system", &system)) return *e;
  }
  const json* msgs = f.find("messages");
  if (!msgs) return bad_request("missing messages", "messages");
  if (auto e = parse_messages(*msgs, &system, &r.messages)) return *e;
  if (!system.empty()) {
    r.messages.insert(r.messages.begin(),
                      {.role = chat::Role::kSystem, .content = join(system, "\n")});
  }
  auto tc = anthropic_tool_choice(body);  // {"type":"none"} hides the schemas
  if (auto* e = std::get_if<ApiError>(&tc)) return *e;
  ParsedToolChoice& choice = std::get<ParsedToolChoice>(tc);
  json converted;
  if (const json* tools = f.find("tools"); tools && !choice.none) {
    if (!tools->is_array()) return bad_request("'tools' must be an array", "tools");
    converted = openai_tools(*tools);
    const bool verbatim = config.chat_template == chat::Template::kDs4;
    if (auto e = attach_tools(converted, openai_tools(ordered, verbatim), &r.messages)) return *e;
    r.tools = std::any_of(r.messages.begin(), r.messages.end(),
                          [](const chat::Message& m) { return !m.tools.empty(); });
  }
  if (auto e = bind_tool_choice(&converted, &choice.choice)) return *e;
  r.tool_choice = std::move(choice.choice);
  return r;
}

}  // namespace

ApiResult<ApiRequest> parse_messages_request(std::string_view body, const ApiConfig& config) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_request("invalid JSON request");
  try {
    return parse_object(j, ordered_tools(body, j), config);
  } catch (const json::exception& e) {  // a type the checks above missed: still the client's
    return bad_request(std::string("invalid JSON request: ") + e.what());
  }
}

}  // namespace ds4::api
