// src/api/responses_request.cpp: OpenAI Responses JSON -> ApiRequest.
#include "api/responses_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "api/request_common.h"
#include "api/tool_choice.h"

namespace ds4::api {
namespace {

using nlohmann::json;

// A string, null, or an array of typed text blocks (input_text, output_text, text, summary_text,
// reasoning_text: anything with a string `text`); images and files are dropped.
std::optional<std::string> block_text(const json& c) {
  if (c.is_null()) return std::string();
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return std::nullopt;
  std::string out;
  for (const auto& b : c) {
    if (b.is_string()) {
      out += b.get<std::string>();
    } else if (b.is_object()) {
      auto t = b.find("text");
      if (t != b.end() && t->is_string()) out += t->get<std::string>();
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// Turns the input items into chat messages; reasoning items attach to the next assistant turn.
class InputReader {
 public:
  explicit InputReader(std::vector<chat::Message>* out) : out_(out) {}

  std::optional<ApiError> item(const json& it, const std::string& where) {
    if (!it.is_object()) return bad_request("'" + where + "' must be an object", where);
    const std::string type = it.value("type", std::string("message"));
    if (type == "message") return message(it, where);
    if (type == "reasoning") {
      // Our own reasoning comes back as its summary (or content) text.
      for (const char* key : {"content", "summary"}) {
        auto t = block_text(it.value(key, json(nullptr)));
        if (t && !t->empty()) {
          pending_reasoning_ += *t;
          break;
        }
      }
      return std::nullopt;
    }
    if (type == "function_call" || type == "custom_tool_call") {
      if (!it.contains("name") || !it["name"].is_string()) {
        return bad_request("'" + where + "' needs a name", where);
      }
      chat::ToolCall call{.name = it["name"].get<std::string>()};
      for (const char* key : {"call_id", "id"}) {
        if (it.contains(key) && it[key].is_string()) {
          call.id = it[key].get<std::string>();
          break;
        }
      }
      const json args = it.contains("arguments") ? it["arguments"] : it.value("input", json("{}"));
      call.arguments_json = args.is_string() ? args.get<std::string>() : args.dump();
      assistant().tool_calls.push_back(std::move(call));
      return std::nullopt;
    }
    if (type == "function_call_output" || type == "custom_tool_call_output") {
      auto text = block_text(it.value("output", json(nullptr)));
      if (!text)
        return bad_request("'" + where + ".output' must be a string or text blocks", where);
      chat::Message m{.role = chat::Role::kTool, .content = std::move(*text)};
      if (it.contains("call_id") && it["call_id"].is_string())
        m.tool_call_id = it["call_id"].get<std::string>();
      push(std::move(m));
      return std::nullopt;
    }
    return std::nullopt;  // compaction and hosted-tool items: nothing we can render
  }

  void finish() {
    if (!pending_reasoning_.empty()) push({.role = chat::Role::kAssistant});
  }

 private:
  std::optional<ApiError> message(const json& it, const std::string& where) {
    const json role = it.value("role", json("user"));
    if (!role.is_string()) return bad_request("'" + where + ".role' must be a string", where);
    auto r = chat::role_from_string(role.get<std::string>());
    if (!r || *r == chat::Role::kTool || *r == chat::Role::kLatestReminder) {
      return bad_request("unknown role '" + role.get<std::string>() + "' in " + where, where);
    }
    auto text = block_text(it.value("content", json(nullptr)));
    if (!text) return bad_request("'" + where + ".content' must be a string or text blocks", where);
    if (*r == chat::Role::kAssistant) {
      assistant().content += *text;
      return std::nullopt;
    }
    push({.role = *r, .content = std::move(*text)});
    return std::nullopt;
  }

  // The assistant message the next output item belongs to: the last one when nothing came after
  // it, else a new one carrying the reasoning read since.
  chat::Message& assistant() {
    if (out_->empty() || out_->back().role != chat::Role::kAssistant ||
        !pending_reasoning_.empty()) {
      push({.role = chat::Role::kAssistant});
    }
    return out_->back();
  }

  void push(chat::Message m) {
    if (m.role == chat::Role::kAssistant) m.reasoning = std::exchange(pending_reasoning_, {});
    out_->push_back(std::move(m));
  }

  std::vector<chat::Message>* out_;
  std::string pending_reasoning_;
};

// Function tools in the OpenAI chat shape; every other type is skipped. Json: nlohmann::json, or
// ordered_json for the rendered copy (name, description, parameters, the schema in the client's
// key order). `verbatim`: each kept tool as the client sent it, which --chat-template ds4 renders
// (ds4-server unwraps only a "function" member and keeps other schemas verbatim, features.md §2.1).
template <class Json>
Json function_tools(const Json& tools, bool verbatim = false) {
  Json out = Json::array();
  if (!tools.is_array()) return out;
  for (const auto& t : tools) {
    if (!t.is_object()) continue;
    const std::string type = t.value("type", std::string("function"));
    if (type != "function") continue;
    const Json* fn = t.contains("function") && t["function"].is_object() ? &t["function"] : &t;
    if (!fn->contains("name") || !(*fn)["name"].is_string()) continue;
    if (verbatim) {
      out.push_back(t);
      continue;
    }
    Json f = Json::object();
    f["name"] = (*fn)["name"];
    if (fn->contains("description") && (*fn)["description"].is_string()) {
      f["description"] = (*fn)["description"];
    }
    f["parameters"] = fn->value("parameters", Json{{"type", "object"}});
    Json tool = Json::object();
    tool["type"] = "function";
    tool["function"] = std::move(f);
    out.push_back(std::move(tool));
  }
  return out;
}

ApiResult<ResponsesParsed> parse_object(const json& body, const nlohmann::ordered_json& ordered,
                                        const ApiConfig& config, ResponsesStore* store) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  ResponsesParsed p;
  ApiRequest& r = p.request;
  r.endpoint = Endpoint::kResponses;
  r.model = config.model_id;
  Fields f(body);
  f.string("model", &r.model);
  f.string("previous_response_id", &r.previous_response_id);
  if (f.error()) return *f.error();
  if (auto e = check_model(r.model)) return *e;

  std::optional<bool> enabled;
  std::optional<chat::ThinkMode> effort;
  r.emit_reasoning = false;
  if (const json* reasoning = f.find("reasoning")) {
    if (!reasoning->is_object()) return bad_request("'reasoning' must be an object", "reasoning");
    Fields rf(*reasoning);
    if (const json* e = rf.find("effort")) {
      if (!e->is_string()) return bad_request("'reasoning.effort' must be a string", "reasoning");
      effort = chat::think_mode_from_effort(e->get<std::string>());
      if (!effort) {
        return bad_request("unknown reasoning.effort '" + e->get<std::string>() + "'", "reasoning");
      }
    }
    r.emit_reasoning = rf.find("summary") != nullptr;
  }
  r.think = resolve_think_mode(enabled, effort, r.model, config);

  long long max_tokens = config.n_ctx;
  f.integer("max_tokens", &max_tokens, 0);
  f.integer("max_output_tokens", &max_tokens, 0);
  r.max_tokens = static_cast<int>(std::clamp<long long>(max_tokens, 0, config.n_ctx));
  SamplingParams client;
  f.number("temperature", &client.temperature, 0, kMaxTemperature);
  f.number("top_p", &client.top_p, 0, 1);
  f.boolean("stream", &r.stream);
  if (f.error()) return *f.error();
  r.sampling = r.think == chat::ThinkMode::kNone ? client : SamplingParams{};  // §1.6
  if (auto e = parse_steering(body, config, &r.steering)) return *e;

  if (!r.previous_response_id.empty()) {
    auto prior = store ? store->find(r.previous_response_id) : std::nullopt;
    if (!prior) {
      return bad_request("previous_response_id '" + r.previous_response_id +
                             "' is not available on this server (it keeps the last " +
                             std::to_string(store ? store->capacity() : 0) +
                             " responses in memory); resend the full input without it",
                         "previous_response_id");
    }
    p.conversation = std::move(*prior);
  }
  const json* input = f.find("input");
  if (!input) return bad_request("missing input", "input");
  if (input->is_string()) {
    p.conversation.push_back({.role = chat::Role::kUser, .content = input->get<std::string>()});
  } else if (input->is_array()) {
    InputReader reader(&p.conversation);
    for (size_t i = 0; i < input->size(); ++i) {
      if (auto e = reader.item((*input)[i], "input[" + std::to_string(i) + "]")) return *e;
    }
    reader.finish();
  } else {
    return bad_request("'input' must be a string or an array of items", "input");
  }
  if (p.conversation.empty()) return bad_request("'input' must not be empty", "input");
  // Before the conversation is copied into the request: a prompt of tens of megabytes is refused
  // here rather than held twice.
  size_t text_bytes = 0;
  for (const chat::Message& m : p.conversation) text_bytes += m.content.size();
  if (auto e = check_prompt_bytes(text_bytes, config, "input")) return *e;

  r.messages = p.conversation;
  std::string instructions;
  f.string("instructions", &instructions);
  if (f.error()) return *f.error();
  if (!instructions.empty()) {
    r.messages.insert(r.messages.begin(), {.role = chat::Role::kSystem, .content = instructions});
  }
  auto tc = responses_tool_choice(body);  // "none" hides the schemas
  if (auto* e = std::get_if<ApiError>(&tc)) return *e;
  ParsedToolChoice& choice = std::get<ParsedToolChoice>(tc);
  json converted;
  if (const json* tools = f.find("tools"); tools && !choice.none) {
    if (!tools->is_array()) return bad_request("'tools' must be an array", "tools");
    converted = function_tools(*tools);
    const bool verbatim = config.chat_template == chat::Template::kDs4;
    if (auto e = attach_tools(converted, function_tools(ordered, verbatim), &r.messages)) return *e;
    r.tools = std::any_of(r.messages.begin(), r.messages.end(),
                          [](const chat::Message& m) { return !m.tools.empty(); });
  }
  if (auto e = bind_tool_choice(&converted, &choice.choice)) return *e;
  r.tool_choice = std::move(choice.choice);
  return p;
}

}  // namespace

ApiResult<ResponsesParsed> parse_responses_request(std::string_view body, const ApiConfig& config,
                                                   ResponsesStore* store) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_request("invalid JSON request");
  try {
    return parse_object(j, ordered_tools(body, j), config, store);
  } catch (const json::exception& e) {  // a type the checks above missed: still the client's
    return bad_request(std::string("invalid JSON request: ") + e.what());
  }
}

}  // namespace ds4::api
