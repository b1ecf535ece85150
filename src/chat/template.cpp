// src/chat/template.cpp: render() -- a conversation as DeepSeek V4 prompt text.
// Owns: the official rendering pipeline (spec/chat-format.md; DeepSeek's encoding_dsv4.py): merge
// tool messages into user turns, order tool results by call order, drop earlier reasoning, then
// render each turn and the transitions "<｜Assistant｜>" + "<think>" / "</think>".
// Does not own: the DSML block text (dsml.cpp), effort prefixes (effort.cpp), tokenization.
//
// The reference encoder is followed where it is more specific than chat-format.md's summary:
// consecutive user/tool messages share one "<｜User｜>" turn, and a user/developer turn followed by
// a latest_reminder also gets the "<｜Assistant｜>" transition (docs/chat.md lists these).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/json.h"
#include "chat/prompt_text.h"
#include "chat/tools_text.h"
#include "ds4/chat.h"

namespace ds4::chat {
namespace {

// The official tools block: its first sentence, the shared example, its string rule, the shared
// thinking rule (tools_text.h).
constexpr std::string_view kToolsIntro =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user's question. You can invoke tools by "
    "writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n";
constexpr std::string_view kToolsStringRule =
    "String parameters should be specified as is and set `string=\"true\"`. For all other types "
    "(numbers, booleans, arrays, objects), pass the value in JSON format and set "
    "`string=\"false\"`.\n\n";
constexpr std::string_view kToolsTail =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool "
    "calls.\n";
constexpr std::string_view kResponseFormatHead =
    "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";

// A message after preprocessing. User turns carry blocks (merged user/tool messages).
struct Block {
  ContentBlockKind kind = ContentBlockKind::kText;
  std::string_view text;
  std::string_view tool_call_id;
};

struct Turn {
  Role role = Role::kUser;           // never kTool after merging
  const Message* message = nullptr;  // the source (first source message for a merged user turn)
  std::vector<Block> blocks;         // user turns only
};

bool is_user_like(Role r) { return r == Role::kUser || r == Role::kDeveloper; }

Status validate(const Message& m, size_t index) {
  const char* role = to_string(m.role);
  const bool system_like = m.role == Role::kSystem || m.role == Role::kDeveloper;
  if (!m.tools.empty() && !system_like) {
    return Status::invalid_argument("message %zu (%s): tools belong on system/developer", index,
                                    role);
  }
  if (m.response_format && !system_like) {
    return Status::invalid_argument("message %zu (%s): response_format belongs on system/developer",
                                    index, role);
  }
  if (!m.blocks.empty() && m.role != Role::kUser) {
    return Status::invalid_argument("message %zu (%s): content blocks belong on user messages",
                                    index, role);
  }
  if ((!m.reasoning.empty() || !m.tool_calls.empty() || !m.raw_tool_calls.empty()) &&
      m.role != Role::kAssistant) {
    return Status::invalid_argument("message %zu (%s): reasoning/tool_calls belong on assistant",
                                    index, role);
  }
  if (m.role == Role::kDeveloper && m.content.empty()) {
    return Status::invalid_argument("message %zu: developer message with empty content", index);
  }
  return Status::ok();
}

// Tool messages become tool_result blocks; a user or tool message joins the previous turn when that
// is a user turn (the reference merges both kinds).
std::vector<Turn> merge_turns(std::span<const Message> messages) {
  std::vector<Turn> turns;
  for (const Message& m : messages) {
    if (m.role != Role::kUser && m.role != Role::kTool) {
      turns.push_back(Turn{m.role, &m, {}});
      continue;
    }
    if (turns.empty() || turns.back().role != Role::kUser) {
      turns.push_back(Turn{Role::kUser, &m, {}});
    }
    auto& blocks = turns.back().blocks;
    if (m.role == Role::kTool) {
      blocks.push_back(Block{ContentBlockKind::kToolResult, m.content, m.tool_call_id});
    } else if (m.blocks.empty()) {
      blocks.push_back(Block{ContentBlockKind::kText, m.content, {}});
    } else {
      for (const ContentBlock& b : m.blocks) {
        blocks.push_back(Block{b.kind, b.text, b.tool_call_id});
      }
    }
  }
  return turns;
}

// Within each user turn, tool results follow the order of the latest assistant tool_calls (ids not
// found sort as position 0, like the reference); text blocks keep their slots.
void sort_tool_results(std::vector<Turn>* turns) {
  std::unordered_map<std::string_view, size_t> order;
  for (Turn& t : *turns) {
    if (t.role == Role::kAssistant && !t.message->tool_calls.empty()) {
      order.clear();
      const auto& calls = t.message->tool_calls;
      for (size_t i = 0; i < calls.size(); ++i) {
        if (!calls[i].id.empty()) order[calls[i].id] = i;
      }
      continue;
    }
    if (t.role != Role::kUser || order.empty()) continue;
    std::vector<Block> results;
    for (const Block& b : t.blocks) {
      if (b.kind == ContentBlockKind::kToolResult) results.push_back(b);
    }
    if (results.size() < 2) continue;
    auto key = [&](const Block& b) {
      auto it = order.find(b.tool_call_id);
      return it == order.end() ? size_t{0} : it->second;
    };
    std::stable_sort(results.begin(), results.end(),
                     [&](const Block& a, const Block& b) { return key(a) < key(b); });
    size_t next = 0;
    for (Block& b : t.blocks) {
      if (b.kind == ContentBlockKind::kToolResult) b = results[next++];
    }
  }
}

int last_user_index(const std::vector<Turn>& turns) {
  for (size_t i = turns.size(); i-- > 0;) {
    if (is_user_like(turns[i].role)) return static_cast<int>(i);
  }
  return -1;
}

// Drops developer turns before the last user/developer turn. (Earlier assistant reasoning is
// dropped at render time: only assistant turns after the last user turn render a thinking part.)
void drop_earlier_developers(std::vector<Turn>* turns) {
  const int last_user = last_user_index(*turns);
  std::vector<Turn> kept;
  for (size_t i = 0; i < turns->size(); ++i) {
    if ((*turns)[i].role == Role::kDeveloper && static_cast<int>(i) < last_user) continue;
    kept.push_back(std::move((*turns)[i]));
  }
  *turns = std::move(kept);
}

Status append_tools(const std::vector<std::string>& tools, size_t index, PromptText* out) {
  std::string schemas;
  for (size_t i = 0; i < tools.size(); ++i) {
    auto parsed = json::parse(tools[i]);
    if (!parsed.is_ok() || !parsed->is_object()) {
      return Status::invalid_argument("message %zu: tool %zu is not a JSON object%s%s", index, i,
                                      parsed.is_ok() ? "" : ": ",
                                      parsed.is_ok() ? "" : parsed.status().message().c_str());
    }
    // OpenAI {"type": "function", "function": {...}} is unwrapped to the function object.
    const json::Value* function = &parsed.value();
    for (const json::Member& m : parsed->members) {
      if (m.key == "function" && m.value.is_object()) function = &m.value;
    }
    if (i > 0) schemas.push_back('\n');
    json::dump_to(*function, &schemas);
  }
  *out += "\n\n";
  *out += kToolsIntro;
  *out += kToolsExample;
  *out += kToolsStringRule;
  *out += kToolsThinkingRule;
  out->client(schemas);
  *out += kToolsTail;
  return Status::ok();
}

Status append_response_format(const std::optional<std::string>& format, size_t index,
                              PromptText* out) {
  if (!format) return Status::ok();
  auto parsed = json::parse(*format);
  if (!parsed.is_ok()) {
    return Status::invalid_argument("message %zu: response_format: %s", index,
                                    parsed.status().message().c_str());
  }
  if (!json::truthy(parsed.value())) return Status::ok();  // the reference tests truthiness
  *out += kResponseFormatHead;
  std::string schema;
  json::dump_to(parsed.value(), &schema);
  out->client(schema);
  return Status::ok();
}

void append_user_blocks(const std::vector<Block>& blocks, PromptText* out) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i > 0) *out += "\n\n";
    if (blocks[i].kind == ContentBlockKind::kToolResult) {
      *out += "<tool_result>";
      out->client(blocks[i].text);
      *out += "</tool_result>";
    } else {
      out->client(blocks[i].text);
    }
  }
}

}  // namespace

Result<RenderedPrompt> render_official(std::span<const Message> messages,
                                       const RenderOptions& options) {
  for (size_t i = 0; i < messages.size(); ++i) DS4_TRY(validate(messages[i], i));

  const ThinkMode mode = effective_think_mode(options.think, options.context_size);
  const bool thinking = mode != ThinkMode::kNone;
  const bool any_tools = std::any_of(messages.begin(), messages.end(),
                                     [](const Message& m) { return !m.tools.empty(); });
  const bool drop = options.drop_earlier_reasoning && !any_tools;

  std::vector<Turn> turns = merge_turns(messages);
  sort_tool_results(&turns);
  if (thinking && drop) drop_earlier_developers(&turns);
  const int last_user = last_user_index(turns);

  PromptText out(kBos);
  if (thinking && !turns.empty()) out += effort_prefix(options.variant, mode);

  for (size_t i = 0; i < turns.size(); ++i) {
    const Turn& t = turns[i];
    const Message& m = *t.message;
    const size_t src = static_cast<size_t>(t.message - messages.data());
    const int idx = static_cast<int>(i);
    switch (t.role) {
      case Role::kSystem:
      case Role::kDeveloper:
        if (t.role == Role::kDeveloper) out += kUserTag;
        out.client(m.content);
        if (!m.tools.empty()) DS4_TRY(append_tools(m.tools, src, &out));
        DS4_TRY(append_response_format(m.response_format, src, &out));
        break;
      case Role::kUser:
        out += kUserTag;
        append_user_blocks(t.blocks, &out);
        break;
      case Role::kLatestReminder:
        out += kLatestReminderTag;
        out.client(m.content);
        break;
      case Role::kAssistant:
        if (thinking && (!drop || idx > last_user)) {
          out += m.reasoning;
          out += kThinkEnd;
        }
        out += m.content;
        out += m.raw_tool_calls.empty() ? encode_tool_calls(m.tool_calls) : m.raw_tool_calls;
        out += kEos;
        break;
      case Role::kTool: break;  // merged into user turns above
    }

    // Transition into the assistant turn: after a user/developer turn that is followed by an
    // assistant turn, a latest_reminder, or nothing (the generation prompt).
    if (!is_user_like(t.role)) continue;
    const bool last = i + 1 == turns.size();
    if (!last && turns[i + 1].role != Role::kAssistant &&
        turns[i + 1].role != Role::kLatestReminder) {
      continue;
    }
    if (last && !options.add_generation_prompt) continue;
    out += kAssistantTag;
    out += thinking && (!drop || idx >= last_user) ? kThinkStart : kThinkEnd;
  }
  return std::move(out).take();
}

Result<std::string> render(std::span<const Message> messages, const RenderOptions& options) {
  DS4_ASSIGN_OR_RETURN(RenderedPrompt p, render_official(messages, options));
  return std::move(p.text);
}

}  // namespace ds4::chat
