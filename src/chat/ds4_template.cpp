// src/chat/ds4_template.cpp: render_ds4_server() -- the prompt text the ds4 engine's server builds
// for a conversation (model.md §6.6 "Server rendering", features.md §1.5). It differs from the
// official encoder (template.cpp) in the tools block (its own wording, first in the prompt, the
// function schemas as compact JSON), in gathering every system/developer text into one system
// region, in escaping the tool-result sentinel and in its tool-context rule for keeping reasoning.
// ds4-server renders it with `--chat-template ds4`; bench/compat.md measures it against ds4.
// Also here: the Template selection (to_string, template_from_string, render(..., Template)).
#include <algorithm>
#include <string>
#include <string_view>

#include "chat/json.h"
#include "chat/prompt_text.h"
#include "chat/tools_text.h"
#include "ds4/chat.h"

namespace ds4::chat {
namespace {

// ds4_server.c's tools preamble (model.md §6.6, data): its first sentence and string rule around
// the pieces it shares with the official block (tools_text.h).
constexpr std::string_view kDs4ToolsIntro =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user question. You can invoke tools by "
    "writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n";
constexpr std::string_view kDs4ToolsStringRule =
    "String parameters should be specified as raw text and set `string=\"true\"`. Preserve "
    "characters such as `>`, `&`, and `&&` exactly; never replace normal string characters with "
    "XML or HTML entity escapes. Only if a string value itself contains the exact closing "
    "parameter tag `</｜DSML｜parameter>`, write that tag as `&lt;/｜DSML｜parameter>` inside the "
    "value. For all other types (numbers, booleans, arrays, objects), pass the value in JSON "
    "format and set `string=\"false\"`.\n\n";
constexpr std::string_view kDs4ToolsTail =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool "
    "calls. Use the exact parameter names from the schemas.";

constexpr std::string_view kToolResultEnd = "</tool_result>";

// One schema line per tool: the OpenAI {"type": "function", "function": X} unwrapped to X.
Status append_schemas(const Message& m, size_t index, std::string* out) {
  for (const std::string& tool : m.tools) {
    auto parsed = json::parse(tool);
    if (!parsed.is_ok() || !parsed->is_object())
      return Status::invalid_argument("message %zu: a tool is not a JSON object", index);
    const json::Value* function = &parsed.value();
    for (const json::Member& member : parsed->members) {
      if (member.key == "function" && member.value.is_object()) function = &member.value;
    }
    if (!out->empty()) out->push_back('\n');
    json::dump_to(*function, out, json::kCompactSeparators);
  }
  return Status::ok();
}

// Only the exact closing sentinel is neutralised, by writing its '<' as "&lt;" (the escaped
// content is client text).
void append_tool_result(std::string_view content, PromptText* out) {
  *out += "<tool_result>";
  std::string escaped;
  for (size_t pos = 0;;) {
    const size_t hit = content.find(kToolResultEnd, pos);
    if (hit == std::string_view::npos) {
      escaped += content.substr(pos);
      break;
    }
    escaped += content.substr(pos, hit - pos);
    escaped += "&lt;";
    pos = hit + 1;
  }
  out->client(escaped);
  *out += kToolResultEnd;
}

// ds4's tool context: tools declared, or a tool call or tool result anywhere in the history.
bool tool_context(std::span<const Message> messages) {
  return std::any_of(messages.begin(), messages.end(), [](const Message& m) {
    return !m.tools.empty() || m.role == Role::kTool || !m.tool_calls.empty();
  });
}

std::string user_text(const Message& m) {
  if (m.blocks.empty()) return m.content;
  std::string text;
  for (const ContentBlock& b : m.blocks) text += b.text;  // ds4 joins text parts directly
  return text;
}

}  // namespace

Result<RenderedPrompt> render_ds4(std::span<const Message> messages, const RenderOptions& options) {
  const ThinkMode mode = effective_think_mode(options.think, options.context_size);
  const bool thinking = mode != ThinkMode::kNone;

  std::string schemas;
  std::vector<std::string> system_parts;
  const bool keep_reasoning = tool_context(messages);
  int last_user = -1;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    DS4_TRY(append_schemas(m, i, &schemas));
    // (A system message with no text that only carries the tools adds no part of its own.)
    const bool carrier = m.content.empty() && !m.tools.empty();
    if ((m.role == Role::kSystem || m.role == Role::kDeveloper) && !carrier)
      system_parts.push_back(m.content);
    if (m.role == Role::kUser || m.role == Role::kTool) last_user = static_cast<int>(i);
  }
  PromptText out(kBos);
  if (thinking) out += effort_prefix(options.variant, mode);
  // The tools block first (the template's wording around the client's schemas), then the
  // system texts, one region.
  if (!schemas.empty()) {
    out += kDs4ToolsIntro;
    out += kToolsExample;
    out += kDs4ToolsStringRule;
    out += kToolsThinkingRule;
    out.client(schemas);
    out += kDs4ToolsTail;
  }
  for (size_t i = 0; i < system_parts.size(); ++i) {
    if (i > 0 || !schemas.empty()) out += "\n\n";
    out.client(system_parts[i]);
  }
  bool pending = false;  // a user or tool turn waits for the assistant's opening
  Role previous = Role::kSystem;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    switch (m.role) {
      case Role::kSystem:
      case Role::kDeveloper: continue;
      case Role::kUser:
      case Role::kLatestReminder:
        out += kUserTag;
        out.client(user_text(m));
        pending = true;
        break;
      case Role::kTool:
        if (previous != Role::kTool) out += kUserTag;
        append_tool_result(m.content, &out);
        pending = true;
        break;
      case Role::kAssistant:
        if (pending) {
          out += kAssistantTag;
          if (thinking && (keep_reasoning || static_cast<int>(i) > last_user)) {
            out += kThinkStart;
            out += m.reasoning;
          }
          out += kThinkEnd;
          pending = false;
        }
        out += m.content;
        out += m.raw_tool_calls.empty() ? encode_tool_calls(m.tool_calls) : m.raw_tool_calls;
        out += kEos;
        break;
    }
    previous = m.role;
  }
  if (pending) {
    out += kAssistantTag;
    out += thinking ? kThinkStart : kThinkEnd;
  }
  return std::move(out).take();
}

Result<std::string> render_ds4_server(std::span<const Message> messages,
                                      const RenderOptions& options) {
  DS4_ASSIGN_OR_RETURN(RenderedPrompt p, render_ds4(messages, options));
  return std::move(p.text);
}

const char* to_string(Template t) { return t == Template::kDs4 ? "ds4" : "official"; }

Result<Template> template_from_string(std::string_view name) {
  if (name == "official") return Template::kOfficial;
  if (name == "ds4") return Template::kDs4;
  return Status::invalid_argument("unknown chat template '%.*s': use one of %.*s",
                                  static_cast<int>(name.size()), name.data(),
                                  static_cast<int>(kTemplateNames.size()), kTemplateNames.data());
}

Result<std::string> render(std::span<const Message> messages, const RenderOptions& options,
                           Template t) {
  return t == Template::kDs4 ? render_ds4_server(messages, options) : render(messages, options);
}

Result<RenderedPrompt> render_prompt(std::span<const Message> messages,
                                     const RenderOptions& options, Template t) {
  return t == Template::kDs4 ? render_ds4(messages, options) : render_official(messages, options);
}

bool keeps_earlier_reasoning(std::span<const Message> messages, Template t) {
  if (t == Template::kDs4) return tool_context(messages);
  return std::any_of(messages.begin(), messages.end(),
                     [](const Message& m) { return !m.tools.empty(); });
}

}  // namespace ds4::chat
