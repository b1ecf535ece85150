// src/chat/template_test.cpp: golden prompts for render(), one rule per test.
// Protects: the exact prompt bytes of every role, the TOOLS and response-format blocks, tool-result
// merging and ordering, reasoning retention, think modes, Think-Max fallback, latest_reminder and
// the V4-Flash-0731 effort prefixes. Expected strings are written out by hand from
// spec/chat-format.md and model.md §6.6 (special strings spelled here, not taken from the library),
// and were cross-checked against a Python transcription of the reference encoder's rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ds4/chat.h"

namespace ds4::chat {
namespace {

const std::string B = "<｜begin▁of▁sentence｜>";
const std::string E = "<｜end▁of▁sentence｜>";
const std::string U = "<｜User｜>";
const std::string A = "<｜Assistant｜>";
const std::string T0 = "<think>";
const std::string T1 = "</think>";

const std::string kMaxPrefix =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to "
    "resolve "
    "the root cause, rigorously stress-testing your logic against all potential paths, edge cases, "
    "and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, "
    "considered alternative, and rejected hypothesis to ensure absolutely no assumption is left "
    "unchecked.\n\n";

// chat-format.md "TOOLS block", with the schema lines substituted.
const std::string kToolsBlockHead = R"(## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<｜DSML｜tool_calls>" block like the following:

<｜DSML｜tool_calls>
<｜DSML｜invoke name="$TOOL_NAME">
<｜DSML｜parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</｜DSML｜parameter>
...
</｜DSML｜invoke>
<｜DSML｜invoke name="$TOOL_NAME2">
...
</｜DSML｜invoke>
</｜DSML｜tool_calls>

String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string="false"`.

If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.

Otherwise, output directly after </think> with tool calls or final response.

### Available Tool Schemas

)";
const std::string kToolsBlockTail = R"(

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
)";

const char* kWeatherTool =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather for a city",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},)"
    R"("required":["city"]}}})";
const char* kSearchTool =
    R"({"type": "function", "function": {"name": "search", "parameters": {"type": "object", )"
    R"("properties": {"q": {"type": "string", "description": "查询"}}}}})";
const std::string kWeatherSchemaLine =
    R"({"name": "get_weather", "description": "Weather for a city", "parameters": {"type": )"
    R"("object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, )"
    R"("required": ["city"]}})";
const std::string kSearchSchemaLine =
    R"({"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": )"
    R"("string", "description": "查询"}}}})";

Message msg(Role role, std::string content) {
  Message m;
  m.role = role;
  m.content = std::move(content);
  return m;
}
Message assistant(std::string content, std::string reasoning = "",
                  std::vector<ToolCall> calls = {}) {
  Message m = msg(Role::kAssistant, std::move(content));
  m.reasoning = std::move(reasoning);
  m.tool_calls = std::move(calls);
  return m;
}
Message tool(std::string id, std::string content) {
  Message m = msg(Role::kTool, std::move(content));
  m.tool_call_id = std::move(id);
  return m;
}

std::string render_ok(const std::vector<Message>& messages, RenderOptions options = {}) {
  auto r = render(messages, options);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value() : std::string();
}

RenderOptions thinking(ThinkMode mode = ThinkMode::kHigh, int64_t context = 1 << 20) {
  RenderOptions o;
  o.think = mode;
  o.context_size = context;
  return o;
}

TEST(ChatRender, SpecialStringsAreTheSpecBytes) {
  EXPECT_EQ(kBos, B);
  EXPECT_EQ(kEos, E);
  EXPECT_EQ(kUserTag, U);
  EXPECT_EQ(kAssistantTag, A);
  EXPECT_EQ(kThinkStart, T0);
  EXPECT_EQ(kThinkEnd, T1);
  EXPECT_EQ(kLatestReminderTag, "<｜latest_reminder｜>");
  EXPECT_EQ(kDsml, "｜DSML｜");
}

TEST(ChatRender, UserOnlyChatMode) {
  EXPECT_EQ(render_ok({msg(Role::kUser, "Hi")}), B + U + "Hi" + A + T1);
}

TEST(ChatRender, EmptyConversationIsJustBos) {
  EXPECT_EQ(render_ok({}, thinking(ThinkMode::kMax)), B);
}

TEST(ChatRender, SystemHasNoMarker) {
  EXPECT_EQ(render_ok({msg(Role::kSystem, "Be brief."), msg(Role::kUser, "Hi")}, thinking()),
            B + "Be brief." + U + "Hi" + A + T0);
}

TEST(ChatRender, DeveloperIsAUserTurn) {
  EXPECT_EQ(render_ok({msg(Role::kDeveloper, "Rules."), msg(Role::kUser, "Hi")}),
            B + U + "Rules." + U + "Hi" + A + T1);
  // A final developer message gets the generation prompt like a user message.
  EXPECT_EQ(render_ok({msg(Role::kDeveloper, "Rules.")}, thinking()), B + U + "Rules." + A + T0);
}

TEST(ChatRender, MultiTurnChatMode) {
  const std::vector<Message> c = {msg(Role::kUser, "a"), assistant("b", "ignored"),
                                  msg(Role::kUser, "c")};
  EXPECT_EQ(render_ok(c), B + U + "a" + A + T1 + "b" + E + U + "c" + A + T1);
}

TEST(ChatRender, ThinkingDropsEarlierReasoning) {
  const std::vector<Message> c = {msg(Role::kUser, "a"), assistant("b", "r1"),
                                  msg(Role::kUser, "c")};
  EXPECT_EQ(render_ok(c, thinking()), B + U + "a" + A + T1 + "b" + E + U + "c" + A + T0);
}

TEST(ChatRender, ThinkingKeepsReasoningAfterLastUser) {
  const std::vector<Message> c = {msg(Role::kUser, "a"), assistant("b", "r1")};
  EXPECT_EQ(render_ok(c, thinking()), B + U + "a" + A + T0 + "r1" + T1 + "b" + E);
  // An assistant with empty reasoning still closes the thinking part.
  EXPECT_EQ(render_ok({msg(Role::kUser, "a"), assistant("b")}, thinking()),
            B + U + "a" + A + T0 + T1 + "b" + E);
}

TEST(ChatRender, ThinkingDropsEarlierDeveloperMessages) {
  const std::vector<Message> c = {msg(Role::kSystem, "S"),     msg(Role::kDeveloper, "D1"),
                                  msg(Role::kUser, "a"),       assistant("b", "r"),
                                  msg(Role::kDeveloper, "D2"), msg(Role::kUser, "c")};
  EXPECT_EQ(render_ok(c, thinking()), B + "S" + U + "a" + A + T1 + "b" + E + U + "c" + A + T0);
  // Chat mode drops nothing.
  EXPECT_EQ(render_ok(c),
            B + "S" + U + "D1" + U + "a" + A + T1 + "b" + E + U + "D2" + U + "c" + A + T1);
}

TEST(ChatRender, KeepAllReasoningWhenAsked) {
  const std::vector<Message> c = {msg(Role::kUser, "a"), assistant("b", "r1"),
                                  msg(Role::kUser, "c")};
  RenderOptions o = thinking();
  o.drop_earlier_reasoning = false;
  EXPECT_EQ(render_ok(c, o), B + U + "a" + A + T0 + "r1" + T1 + "b" + E + U + "c" + A + T0);
}

TEST(ChatRender, ToolsBlockIsByteExact) {
  Message sys = msg(Role::kSystem, "You are helpful.");
  sys.tools = {kWeatherTool, kSearchTool};
  EXPECT_EQ(render_ok({sys, msg(Role::kUser, "Hi")}),
            B + "You are helpful.\n\n" + kToolsBlockHead + kWeatherSchemaLine + "\n" +
                kSearchSchemaLine + kToolsBlockTail + U + "Hi" + A + T1);
  // A bare function object is accepted as the schema itself.
  Message bare = msg(Role::kSystem, "");
  bare.tools = {R"({"name":"f","parameters":{}})"};
  EXPECT_EQ(render_ok({bare}),
            B + "\n\n" + kToolsBlockHead + R"({"name": "f", "parameters": {}})" + kToolsBlockTail);
}

TEST(ChatRender, DeveloperCarriesToolsAndResponseFormat) {
  Message dev = msg(Role::kDeveloper, "Use tools.");
  dev.tools = {kSearchTool};
  dev.response_format = R"({"type":"object","properties":{"answer":{"type":"string"}}})";
  EXPECT_EQ(render_ok({dev}),
            B + U + "Use tools.\n\n" + kToolsBlockHead + kSearchSchemaLine + kToolsBlockTail +
                "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to "
                "reply:\n" +
                R"({"type": "object", "properties": {"answer": {"type": "string"}}})" + A + T1);
}

TEST(ChatRender, ResponseFormatOnSystem) {
  Message sys = msg(Role::kSystem, "S");
  sys.response_format = R"({"type":"json_object"})";
  EXPECT_EQ(render_ok({sys, msg(Role::kUser, "q")}),
            B +
                "S\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to "
                "reply:\n{\"type\": \"json_object\"}" +
                U + "q" + A + T1);
  sys.response_format = "{}";  // falsy in the reference: not rendered
  EXPECT_EQ(render_ok({sys, msg(Role::kUser, "q")}), B + "S" + U + "q" + A + T1);
}

// user -> assistant (two calls) -> tool results (out of order) -> assistant -> user.
std::vector<Message> tool_conversation() {
  Message sys = msg(Role::kSystem, "You are helpful.");
  sys.tools = {kWeatherTool};
  return {sys,
          msg(Role::kUser, "Weather in Paris and Rome?"),
          assistant("", "Need two calls.",
                    {{"c1", "get_weather", R"({"city": "Paris", "days": 2})"},
                     {"c2", "get_weather",
                      R"({"city":"Rome","opts":{"units":"C","list":[1,true,null]}})"}}),
          tool("c2", "Rome: 20C"),
          tool("c1", "Paris: 18C"),
          assistant("Paris 18C, Rome 20C.", "Both done."),
          msg(Role::kUser, "Thanks")};
}

const std::string kCallsBlock =
    "\n\n<｜DSML｜tool_calls>\n"
    "<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Rome</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"opts\" string=\"false\">{\"units\": \"C\", \"list\": [1, true, "
    "null]}</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>";

TEST(ChatRender, ToolConversationThinkingKeepsAllReasoning) {
  const std::string head =
      B + "You are helpful.\n\n" + kToolsBlockHead + kWeatherSchemaLine + kToolsBlockTail;
  EXPECT_EQ(render_ok(tool_conversation(), thinking()),
            head + U + "Weather in Paris and Rome?" + A + T0 + "Need two calls." + T1 +
                kCallsBlock + E + U + "<tool_result>Paris: 18C</tool_result>\n\n" +
                "<tool_result>Rome: 20C</tool_result>" + A + T0 + "Both done." + T1 +
                "Paris 18C, Rome 20C." + E + U + "Thanks" + A + T0);
  EXPECT_EQ(render_ok(tool_conversation()),
            head + U + "Weather in Paris and Rome?" + A + T1 + kCallsBlock + E + U +
                "<tool_result>Paris: 18C</tool_result>\n\n<tool_result>Rome: 20C</tool_result>" +
                A + T1 + "Paris 18C, Rome 20C." + E + U + "Thanks" + A + T1);
}

TEST(ChatRender, ToolResultsWithoutToolsDropReasoning) {
  // No message carries tools: the tool-result turn is the last user turn, so the calling
  // assistant's reasoning is dropped.
  const std::vector<Message> c = {
      msg(Role::kUser, "q"), assistant("", "think", {{"x", "f", R"({"a":"1"})"}}), tool("x", "ok")};
  EXPECT_EQ(
      render_ok(c, thinking()),
      B + U + "q" + A + T1 +
          "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter "
          "name=\"a\" string=\"true\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_"
          "calls>" +
          E + U + "<tool_result>ok</tool_result>" + A + T0);
}

TEST(ChatRender, ConsecutiveUserAndToolMessagesShareOneTurn) {
  Message blocks = msg(Role::kUser, "ignored when blocks are set");
  blocks.blocks = {{ContentBlockKind::kText, "see:", ""},
                   {ContentBlockKind::kToolResult, "R9", "z"}};
  const std::vector<Message> c = {msg(Role::kUser, "one"), msg(Role::kUser, "two"), tool("t", "r"),
                                  blocks};
  EXPECT_EQ(render_ok(c), B + U + "one\n\ntwo\n\n<tool_result>r</tool_result>\n\nsee:\n\n" +
                              "<tool_result>R9</tool_result>" + A + T1);
}

TEST(ChatRender, ToolResultOrderFollowsLatestCalls) {
  const std::vector<Message> c = {
      msg(Role::kUser, "q"),
      assistant("", "", {{"a", "f", "{}"}, {"b", "f", "{}"}, {"c", "f", "{}"}}),
      tool("c", "C"),
      msg(Role::kUser, "note"),
      tool("unknown", "X"),
      tool("a", "A"),
      tool("b", "B")};
  // Result slots are re-filled in call order; an unknown id sorts as position 0 (stable).
  const std::string call = "<｜DSML｜invoke name=\"f\">\n\n</｜DSML｜invoke>";
  EXPECT_EQ(render_ok(c), B + U + "q" + A + T1 + "\n\n<｜DSML｜tool_calls>\n" + call + "\n" + call +
                              "\n" + call + "\n</｜DSML｜tool_calls>" + E + U +
                              "<tool_result>X</tool_result>\n\nnote\n\n<tool_result>A</tool_result>"
                              "\n\n<tool_result>B</tool_result>\n\n<tool_result>C</tool_result>" +
                              A + T1);
}

TEST(ChatRender, NonObjectArgumentsAreWrapped) {
  const std::vector<Message> c = {msg(Role::kUser, "q"),
                                  assistant("", "", {{"", "f", "not json"}, {"", "g", "[1,2]"}})};
  EXPECT_EQ(
      render_ok(c),
      B + U + "q" + A + T1 + "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n" +
          "<｜DSML｜parameter name=\"arguments\" string=\"true\">not json</｜DSML｜parameter>\n" +
          "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"g\">\n" +
          "<｜DSML｜parameter name=\"arguments\" string=\"true\">[1,2]</｜DSML｜parameter>\n" +
          "</｜DSML｜invoke>\n</｜DSML｜tool_calls>" + E);
}

TEST(ChatRender, LatestReminder) {
  const std::string r = "<｜latest_reminder｜>";
  // The reference emits the assistant transition after a user turn followed by a reminder.
  EXPECT_EQ(
      render_ok({msg(Role::kUser, "q"), msg(Role::kLatestReminder, "today is Monday")}, thinking()),
      B + U + "q" + A + T0 + r + "today is Monday");
  EXPECT_EQ(
      render_ok({msg(Role::kSystem, "S"), msg(Role::kLatestReminder, "R"), msg(Role::kUser, "q")}),
      B + "S" + r + "R" + U + "q" + A + T1);
}

TEST(ChatRender, GenerationPromptCanBeOmitted) {
  RenderOptions o = thinking();
  o.add_generation_prompt = false;
  EXPECT_EQ(render_ok({msg(Role::kUser, "a"), assistant("b", "r"), msg(Role::kUser, "c")}, o),
            B + U + "a" + A + T1 + "b" + E + U + "c");
}

TEST(ChatRender, ThinkModes) {
  const std::vector<Message> c = {msg(Role::kSystem, "S"), msg(Role::kUser, "q")};
  EXPECT_EQ(render_ok(c, thinking(ThinkMode::kNone)), B + "S" + U + "q" + A + T1);
  EXPECT_EQ(render_ok(c, thinking(ThinkMode::kLow)), B + "S" + U + "q" + A + T0);
  EXPECT_EQ(render_ok(c, thinking(ThinkMode::kHigh)), B + "S" + U + "q" + A + T0);
  EXPECT_EQ(render_ok(c, thinking(ThinkMode::kMax, kThinkMaxMinContext)),
            B + kMaxPrefix + "S" + U + "q" + A + T0);
}

TEST(ChatRender, ThinkMaxFallsBackBelowMinimumContext) {
  const std::vector<Message> c = {msg(Role::kUser, "q")};
  EXPECT_EQ(render_ok(c, thinking(ThinkMode::kMax, kThinkMaxMinContext - 1)), B + U + "q" + A + T0);
  EXPECT_EQ(render_ok(c, thinking(ThinkMode::kMax, 0)), B + U + "q" + A + T0);
  EXPECT_EQ(effective_think_mode(ThinkMode::kMax, 393215), ThinkMode::kHigh);
  EXPECT_EQ(effective_think_mode(ThinkMode::kMax, 393216), ThinkMode::kMax);
  EXPECT_EQ(effective_think_mode(ThinkMode::kNone, 0), ThinkMode::kNone);
}

TEST(ChatRender, Flash0731EffortPrefixes) {
  const std::string beyond =
      "Reasoning Effort: Beyond maximum \xE2\x80\x94 exhaustive, relentless, and uncompromising.\n"
      "You MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: "
      "exhaustively decompose the problem into its most fundamental components, trace every "
      "causal chain to its root, and resolve the underlying cause rather than any surface "
      "symptom.\n"
      "Do not stop reasoning until you have independently verified the solution from multiple "
      "angles and are certain that no assumption remains unchecked and no error remains "
      "undiscovered.\n\n";
  const std::vector<Message> c = {msg(Role::kUser, "q")};
  auto opts = [](ThinkMode mode, int64_t ctx) {
    RenderOptions o = thinking(mode, ctx);
    o.variant = ModelVariant::kV4Flash0731;
    return o;
  };
  EXPECT_EQ(render_ok(c, opts(ThinkMode::kNone, 1 << 20)), B + U + "q" + A + T1);
  EXPECT_EQ(render_ok(c, opts(ThinkMode::kLow, 1 << 20)), B + U + "q" + A + T0);
  EXPECT_EQ(render_ok(c, opts(ThinkMode::kHigh, 1 << 20)), B + kMaxPrefix + U + "q" + A + T0);
  EXPECT_EQ(render_ok(c, opts(ThinkMode::kMax, 1 << 20)), B + beyond + U + "q" + A + T0);
  // The Think-Max rule still applies: max -> high (which has a prefix on 0731).
  EXPECT_EQ(render_ok(c, opts(ThinkMode::kMax, 1000)), B + kMaxPrefix + U + "q" + A + T0);
}

TEST(ChatRender, EffortStrings) {
  EXPECT_EQ(think_mode_from_effort("max"), ThinkMode::kMax);
  for (const char* e : {"xhigh", "high", "medium", "low", "minimal"}) {
    EXPECT_EQ(think_mode_from_effort(e), ThinkMode::kHigh) << e;
  }
  EXPECT_EQ(think_mode_from_effort("none"), ThinkMode::kNone);
  EXPECT_EQ(think_mode_from_effort("bogus"), std::nullopt);
  EXPECT_EQ(think_mode_from_effort("low", ModelVariant::kV4Flash0731), ThinkMode::kLow);
  EXPECT_EQ(think_mode_from_effort("minimal", ModelVariant::kV4Flash0731), ThinkMode::kLow);
  EXPECT_EQ(think_mode_from_effort("xhigh", ModelVariant::kV4Flash0731), ThinkMode::kHigh);
  EXPECT_EQ(think_mode_from_effort("max", ModelVariant::kV4Flash0731), ThinkMode::kMax);
}

TEST(ChatRender, RejectsMalformedInput) {
  Message user_tools = msg(Role::kUser, "q");
  user_tools.tools = {kSearchTool};
  Message bad_tool = msg(Role::kSystem, "S");
  bad_tool.tools = {"{not json"};
  Message array_tool = msg(Role::kSystem, "S");
  array_tool.tools = {"[1]"};
  Message bad_format = msg(Role::kSystem, "S");
  bad_format.response_format = "{";
  Message assistant_blocks = assistant("x");
  assistant_blocks.blocks = {{ContentBlockKind::kText, "y", ""}};
  Message user_reasoning = msg(Role::kUser, "q");
  user_reasoning.reasoning = "r";
  for (const Message& m : {user_tools, bad_tool, array_tool, bad_format, assistant_blocks,
                           user_reasoning, msg(Role::kDeveloper, "")}) {
    auto r = render(std::vector<Message>{m}, RenderOptions{});
    EXPECT_FALSE(r.is_ok()) << to_string(m.role);
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(ChatRender, RoleNames) {
  for (Role r : {Role::kSystem, Role::kDeveloper, Role::kUser, Role::kAssistant, Role::kTool,
                 Role::kLatestReminder}) {
    EXPECT_EQ(role_from_string(to_string(r)), r);
  }
  EXPECT_EQ(role_from_string("function"), std::nullopt);
}

// Exact replay: an assistant message's raw_tool_calls are written as given, in place of the
// canonical block, and only assistant messages may carry them.
TEST(ChatRender, RawToolCallsReplaceTheCanonicalBlock) {
  Message a = msg(Role::kAssistant, "Sure.");
  a.tool_calls = {{.id = "call_1", .name = "f", .arguments_json = R"({"n":3})"}};
  const std::string canonical = encode_tool_calls(a.tool_calls);
  a.raw_tool_calls =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n"
      "<｜DSML｜parameter name=\"n\" string=\"false\"> 3</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  ASSERT_NE(a.raw_tool_calls, canonical);
  const std::string out = render_ok({msg(Role::kUser, "Hi"), a});
  EXPECT_NE(out.find("Sure." + a.raw_tool_calls + E), std::string::npos);
  EXPECT_EQ(out.find(canonical), std::string::npos);
  Message u = msg(Role::kUser, "x");
  u.raw_tool_calls = "y";
  EXPECT_FALSE(render(std::vector<Message>{u}, {}).is_ok());
}

}  // namespace
}  // namespace ds4::chat
