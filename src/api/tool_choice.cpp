// src/api/tool_choice.cpp: tool_choice shapes -> serve::ToolChoice.
#include "api/tool_choice.h"

#include <algorithm>
#include <string>

namespace ds4::api {
namespace {

using json = nlohmann::json;
using serve::ToolMode;

constexpr const char* kParam = "tool_choice";

ApiError invalid(const std::string& message) { return bad_request(message, kParam); }

const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

bool parallel_off(const json& body) {
  const json* p = field(body, "parallel_tool_calls");
  return p && p->is_boolean() && !p->get<bool>();
}

std::optional<std::string> string_at(const json& obj, const char* key) {
  const json* v = field(obj, key);
  if (!v || !v->is_string() || v->get<std::string>().empty()) return std::nullopt;
  return v->get<std::string>();
}

// "none" / "auto" / "required": OpenAI's three strings (chat and Responses).
ApiResult<ParsedToolChoice> from_string(const std::string& s) {
  ParsedToolChoice out;
  if (s == "none") {
    out.none = true;
  } else if (s == "required") {
    out.choice.mode = ToolMode::kRequired;
  } else if (s != "auto") {
    return invalid("Invalid value for 'tool_choice': '" + s +
                   "'. Supported values are: 'none', 'auto' and 'required'.");
  }
  return out;
}

// {"type":"allowed_tools", "mode", "tools":[{"type":"function","name"} ...]} (chat nests it
// under "allowed_tools"): the mode, and the subset a required call must come from.
ApiResult<ParsedToolChoice> from_allowed(const json& obj) {
  const json* a = field(obj, "allowed_tools");
  const json& spec = a && a->is_object() ? *a : obj;
  const std::string mode = spec.value("mode", std::string("auto"));
  ParsedToolChoice out;
  if (mode == "required") {
    out.choice.mode = ToolMode::kRequired;
  } else if (mode != "auto") {
    return invalid("Invalid value for 'tool_choice.mode': '" + mode + "'");
  }
  if (const json* tools = field(spec, "tools"); tools && tools->is_array()) {
    for (const auto& t : *tools) {
      const json* fn = t.is_object() && t.contains("function") ? &t["function"] : &t;
      if (auto n = fn->is_object() ? string_at(*fn, "name") : std::nullopt) {
        out.choice.names.push_back(*n);
      }
    }
  }
  return out;
}

ParsedToolChoice named(std::string name) {
  ParsedToolChoice out;
  out.choice.mode = ToolMode::kNamed;
  out.choice.names = {std::move(name)};
  return out;
}

std::vector<std::string> tool_names(const json& tools) {
  std::vector<std::string> names;
  for (const auto& t : tools) {
    const json* fn = t.contains("function") ? &t["function"] : &t;
    if (auto n = string_at(*fn, "name")) names.push_back(*n);
  }
  return names;
}

}  // namespace

ApiResult<ParsedToolChoice> openai_tool_choice(const json& body) {
  const json* tc = field(body, kParam);
  ApiResult<ParsedToolChoice> out = ParsedToolChoice{};
  if (tc && tc->is_string()) {
    out = from_string(tc->get<std::string>());
  } else if (tc && tc->is_object()) {
    const std::string type = tc->value("type", std::string());
    if (type == "function" || type == "custom") {
      const json* inner = field(*tc, type.c_str());
      auto name = inner && inner->is_object() ? string_at(*inner, "name") : std::nullopt;
      if (!name) return invalid("'tool_choice." + type + ".name' is required");
      out = named(*name);
    } else if (type == "allowed_tools") {
      out = from_allowed(*tc);
    } else {
      return invalid("Invalid value for 'tool_choice.type': '" + type + "'");
    }
  } else if (tc) {
    return invalid("'tool_choice' must be a string or an object");
  }
  if (auto* p = std::get_if<ParsedToolChoice>(&out)) p->choice.one_call = parallel_off(body);
  return out;
}

ApiResult<ParsedToolChoice> anthropic_tool_choice(const json& body) {
  const json* tc = field(body, kParam);
  ParsedToolChoice out;
  if (!tc) return out;
  if (!tc->is_object()) return invalid("tool_choice: Input should be an object");
  const std::string type = tc->value("type", std::string());
  if (type == "none") {
    out.none = true;
  } else if (type == "any") {
    out.choice.mode = ToolMode::kRequired;
  } else if (type == "tool") {
    auto name = string_at(*tc, "name");
    if (!name) return invalid("tool_choice.name: Field required");
    out = named(*name);
  } else if (type != "auto") {
    return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
  }
  const json* dp = field(*tc, "disable_parallel_tool_use");
  out.choice.one_call = dp && dp->is_boolean() && dp->get<bool>();
  return out;
}

ApiResult<ParsedToolChoice> responses_tool_choice(const json& body) {
  const json* tc = field(body, kParam);
  ApiResult<ParsedToolChoice> out = ParsedToolChoice{};
  if (tc && tc->is_string()) {
    out = from_string(tc->get<std::string>());
  } else if (tc && tc->is_object()) {
    const std::string type = tc->value("type", std::string());
    if (type == "function" || type == "custom") {
      auto name = string_at(*tc, "name");
      if (!name) return invalid("'tool_choice.name' is required");
      out = named(*name);
    } else if (type == "allowed_tools") {
      out = from_allowed(*tc);
    }
    // A hosted tool type (web_search, file_search, mcp, ...): those tools are skipped, never
    // served, so choosing one is read as auto rather than refused.
  } else if (tc) {
    return invalid("'tool_choice' must be a string or an object");
  }
  if (auto* p = std::get_if<ParsedToolChoice>(&out)) p->choice.one_call = parallel_off(body);
  return out;
}

std::optional<ApiError> bind_tool_choice(const json* tools, serve::ToolChoice* choice) {
  if (choice->mode == ToolMode::kAuto) return std::nullopt;
  const std::vector<std::string> declared =
      tools && tools->is_array() ? tool_names(*tools) : std::vector<std::string>{};
  if (declared.empty()) {
    return invalid(
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
        "are specified.");
  }
  const auto known = [&](const std::string& n) {
    return std::find(declared.begin(), declared.end(), n) != declared.end();
  };
  if (choice->mode == ToolMode::kNamed) {
    if (!known(choice->names.front())) {
      return invalid("Invalid 'tool_choice': no tool named '" + choice->names.front() +
                     "' is among the request's tools.");
    }
    return std::nullopt;
  }
  // Required: every declared tool, or the allowed_tools subset of them.
  std::vector<std::string> allowed;
  for (const auto& n : choice->names) {
    if (known(n)) allowed.push_back(n);
  }
  choice->names = allowed.empty() ? declared : allowed;
  return std::nullopt;
}

}  // namespace ds4::api
