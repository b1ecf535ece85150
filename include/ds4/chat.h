// include/ds4/chat.h: DeepSeek V4 conversation text -- prompt rendering and model-output parsing.
// Owns: the chat data model (Message, ToolCall, ...), render() of the official V4 prompt format
// (spec/chat-format.md), DSML tool-call encoding, and the incremental OutputParser that turns
// generated text back into reasoning / content / tool-call events.
// Does not own: tokenization (the tokenizer module recognises the special strings in the rendered
// text), sampling, request JSON (api/ maps OpenAI/Anthropic JSON to these types) or tool ids.
//
// Everything here works on UTF-8 text. JSON (tool schemas, response formats, tool-call arguments)
// crosses this header as JSON *text*; the module parses it internally and never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ds4/status.h"
#include "ds4/tokenizer.h"

namespace ds4::chat {

// ---- Special strings (data, byte-exact; the tokenizer maps them to special tokens) ----
inline constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view kUserTag = "<｜User｜>";
inline constexpr std::string_view kAssistantTag = "<｜Assistant｜>";
inline constexpr std::string_view kLatestReminderTag = "<｜latest_reminder｜>";
inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";
inline constexpr std::string_view kDsml = "｜DSML｜";

// Think Max is used only with at least this much context (model.md §6.6); below it MAX -> HIGH.
inline constexpr int64_t kThinkMaxMinContext = 393216;

// ---- Data model ----
enum class Role { kSystem, kDeveloper, kUser, kAssistant, kTool, kLatestReminder };
const char* to_string(Role role);
// "system", "developer", "user", "assistant", "tool", "latest_reminder"; nullopt otherwise.
std::optional<Role> role_from_string(std::string_view name);

enum class ContentBlockKind { kText, kToolResult };
const char* to_string(ContentBlockKind kind);

// One block of a user message. Tool results render as "<tool_result>TEXT</tool_result>".
struct ContentBlock {
  ContentBlockKind kind = ContentBlockKind::kText;
  std::string text;          // the text, or the tool result's content
  std::string tool_call_id;  // tool results only: the id of the call it answers (for ordering)
};

struct ToolCall {
  std::string id;              // OpenAI call id (orders tool results); not rendered
  std::string name;            // function name
  std::string arguments_json;  // OpenAI "arguments": JSON object text (anything else is wrapped)
};

struct Message {
  Role role = Role::kUser;
  std::string content;
  // User messages only: when non-empty, rendered instead of `content`, joined by "\n\n".
  std::vector<ContentBlock> blocks;
  // Assistant messages only.
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
  // Assistant messages only: when non-empty, rendered verbatim instead of
  // encode_tool_calls(tool_calls) -- the DSML block exactly as it was sampled, so a server's next
  // prompt repeats the bytes its session already holds (features.md §2.2, exact replay).
  std::string raw_tool_calls;
  // Tool messages only: which call this result answers.
  std::string tool_call_id;
  // System/developer messages only: OpenAI tool objects, one JSON text each
  // ({"type": "function", "function": {...}}; a bare function object is accepted too).
  std::vector<std::string> tools;
  // System/developer messages only: a JSON schema text the reply must follow.
  std::optional<std::string> response_format;
};

// kLow exists for V4-Flash-0731, whose default effort tier ("low") differs from "high"; for the
// original V4 checkpoint kLow and kHigh render identically.
enum class ThinkMode { kNone, kLow, kHigh, kMax };
const char* to_string(ThinkMode mode);

enum class ModelVariant { kV4, kV4Flash0731 };
const char* to_string(ModelVariant variant);

// Maps an API reasoning-effort string to a think mode; nullopt for an unknown string.
// kV4 (ds4 server rule): "max" -> kMax; "xhigh", "high", "medium", "low", "minimal" -> kHigh;
// "none" -> kNone. kV4Flash0731: "max" -> kMax; "xhigh", "high", "medium" -> kHigh;
// "low", "minimal" -> kLow; "none" -> kNone (a policy choice; see docs/chat.md).
std::optional<ThinkMode> think_mode_from_effort(std::string_view effort,
                                                ModelVariant variant = ModelVariant::kV4);
// The Think-Max rule: kMax with context_size < kThinkMaxMinContext falls back to kHigh.
ThinkMode effective_think_mode(ThinkMode requested, int64_t context_size);
// The text inserted right after BOS for a (variant, mode); empty when there is none.
std::string_view effort_prefix(ModelVariant variant, ThinkMode mode);

struct RenderOptions {
  ThinkMode think = ThinkMode::kNone;
  int64_t context_size = 0;  // tokens of context of the session (Think-Max rule)
  ModelVariant variant = ModelVariant::kV4;
  bool add_generation_prompt = true;  // "<｜Assistant｜><think>" after a final user turn
  // The official default: in thinking mode, drop the reasoning of assistant turns (and developer
  // messages) before the last user message, unless any message carries tools.
  bool drop_earlier_reasoning = true;
};

// Renders a conversation as prompt text (BOS included). Fails with kInvalidArgument on malformed
// input: unparsable tools/response_format JSON, fields attached to a role that cannot carry them,
// an empty developer message.
Result<std::string> render(std::span<const Message> messages, const RenderOptions& options);

// A rendered prompt and where client text lies in it: system, developer, user and tool-result
// content, tool schemas and response formats (not the template's own text, nor the assistant's
// replayed reasoning, content and tool calls). Tokenizer::encode_rendered keeps special-token
// strings inside those ranges as text, so a document a client sends cannot forge a turn.
struct RenderedPrompt {
  std::string text;
  std::vector<TextRange> plain;  // ascending, disjoint
};

// The prompt text the ds4 engine's own server renders for the same conversation (model.md §6.6
// "Server rendering"): the tools block in its wording first, every system/developer text in one
// system region, text parts joined directly, the tool-result sentinel escaped, earlier reasoning
// kept in tool context. ds4-server renders it with `--chat-template ds4` (docs/chat.md, "Server
// templates"); bench/compat.md measures it against ds4. Fails like render() on a malformed tool.
Result<std::string> render_ds4_server(std::span<const Message> messages,
                                      const RenderOptions& options);

// ---- Server templates ----
// The prompt format a server renders every request in: kOfficial is render() (DeepSeek's
// reference encoder, the default), kDs4 is render_ds4_server() (the ds4 engine's server, byte for
// byte). docs/chat.md says when to use which.
enum class Template { kOfficial, kDs4 };
inline constexpr std::string_view kTemplateNames = "official, ds4";  // the accepted names
const char* to_string(Template t);                                   // "official", "ds4"
// "official" -> kOfficial, "ds4" -> kDs4; anything else fails with kInvalidArgument, naming the
// accepted values.
Result<Template> template_from_string(std::string_view name);
// render() or render_ds4_server(), as `t` says.
Result<std::string> render(std::span<const Message> messages, const RenderOptions& options,
                           Template t);
// The same text, with the client-text ranges.
Result<RenderedPrompt> render_prompt(std::span<const Message> messages,
                                     const RenderOptions& options, Template t);
// Whether template `t` keeps the reasoning of assistant turns before the last user turn in
// thinking mode (the client's history then repeats the "<think>" the prompt ended with): official,
// when a message carries tools (render() rule 8); ds4, in tool context (tools declared, or a tool
// call or tool result in the history).
bool keeps_earlier_reasoning(std::span<const Message> messages, Template t);

// ---- DSML tool calls ----
// The assistant-side block "\n\n<｜DSML｜tool_calls>\n...\n</｜DSML｜tool_calls>" ("" for no
// calls). String arguments are written raw (string="true"), others as JSON (string="false");
// arguments that are not a JSON object become {"arguments": <the text>}. See docs/chat.md for the
// escape of closing-tag look-alikes inside values.
std::string encode_tool_calls(std::span<const ToolCall> calls);

// ---- Output parsing ----
enum class OutputEventKind {
  kReasoning,          // text: reasoning bytes (thinking mode, before </think>)
  kText,               // text: content bytes (also unrepairable markup, reported verbatim)
  kToolCallBegin,      // text: the tool name; tool_index: 0, 1, ...
  kToolCallArguments,  // text: a fragment of the call's OpenAI arguments JSON object
  kToolCallEnd,        // tool_index
  kDone,               // always the last event, emitted by finish()
};
const char* to_string(OutputEventKind kind);

struct OutputEvent {
  OutputEventKind kind = OutputEventKind::kText;
  std::string text;
  int tool_index = -1;
  bool operator==(const OutputEvent&) const = default;
};

struct OutputParserOptions {
  bool thinking = false;         // output starts with reasoning, closed by </think>
  bool parse_tool_calls = true;  // recognise DSML blocks in content (else they are plain text)
};

struct OutputStats {
  bool reasoning_closed = false;  // saw </think>
  bool eos = false;               // saw the EOS marker
  int tool_calls = 0;             // kToolCallBegin events emitted
  int repairs = 0;                // malformed variants accepted (see docs/chat.md)
  bool truncated = false;         // finish() closed a tool call that was still open
  // Every input byte lands in exactly one of these counters.
  size_t text_bytes = 0;       // emitted as kText
  size_t reasoning_bytes = 0;  // emitted as kReasoning
  size_t markup_bytes = 0;     // consumed as recognised markup (tags, whitespace between tags)
  size_t value_bytes = 0;      // consumed as tool-call parameter values
};

// Incremental parser: feed() any chunking of the output bytes, then finish() once. Events are a
// pure function of the byte sequence (after merging adjacent fragments of the same kind), text is
// never split inside a UTF-8 character, and only bytes that could still start a marker (or an
// incomplete UTF-8 character) are held back between calls.
class OutputParser {
 public:
  explicit OutputParser(OutputParserOptions options = {});
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;
  OutputParser(const OutputParser&) = delete;
  OutputParser& operator=(const OutputParser&) = delete;

  void feed(std::string_view bytes, std::vector<OutputEvent>* events);
  void finish(std::vector<OutputEvent>* events);  // flushes, closes truncated calls, emits kDone

  const OutputStats& stats() const;
  size_t held_bytes() const;  // bytes received but not yet reflected in events

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Whole-text convenience over OutputParser. Text events inside a tool block are appended to
// content.
struct ParsedOutput {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;  // ids are left empty (the caller assigns them)
  OutputStats stats;
};
ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options = {});

}  // namespace ds4::chat
