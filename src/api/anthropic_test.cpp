// Anthropic Messages (features.md §1.4.2, §1.11, §1.12), golden: request JSON -> the shared chat
// messages (system blocks with x-anthropic- dropped, system entries merged, tool_use / tool_result
// on the call ids the replay map keys, tools in the OpenAI function shape, tool_choice none,
// thinking controls, stop_sequences, errors), and events -> the exact event sequence of a stream
// and the message object, both with usage and cache reads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/anthropic_request.h"
#include "api/anthropic_response.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::Event;
using serve::EventKind;
using serve::FinishReason;

const ApiConfig kConfig{.n_ctx = 4096};

ApiRequest parse_ok(const json& body) {
  auto r = parse_messages_request(body.dump(), kConfig);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << e->message;
    return {};
  }
  return std::get<ApiRequest>(r);
}

TEST(AnthropicRequest, SystemBlocksToolsAndToolIds) {
  const json body = {
      {"model", "deepseek-chat"},
      {"max_tokens", 64},
      {"temperature", 0.5},
      {"stop_sequences", {"END", ""}},
      {"system",
       {{{"type", "text"}, {"text", "x-anthropic-billing-header: cch=1;"}},
        {{"type", "text"}, {"text", "Be brief."}, {"cache_control", {{"type", "ephemeral"}}}}}},
      {"tools",
       {{{"name", "read"}, {"input_schema", {{"type", "object"}}}},
        {{"type", "web_search_20250305"}, {"name", "web_search"}}}},
      {"messages",
       {{{"role", "user"}, {"content", "hi"}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "thinking"}, {"thinking", "hmm"}, {"signature", "s"}},
           {{"type", "text"}, {"text", "ok"}},
           {{"type", "tool_use"}, {"id", "toolu_ab"}, {"name", "read"}, {"input", {{"p", 1}}}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"}, {"tool_use_id", "toolu_ab"}, {"content", "data"}},
           {{"type", "text"}, {"text", "next"}}}}},
        {{"role", "system"}, {"content", "Late system."}}}}};
  const ApiRequest r = parse_ok(body);
  EXPECT_EQ(r.endpoint, Endpoint::kMessages);
  EXPECT_EQ(r.think, chat::ThinkMode::kNone);  // deepseek-chat without a thinking control
  EXPECT_EQ(r.max_tokens, 64);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0].role, chat::Role::kSystem);
  EXPECT_EQ(r.messages[0].content, "Be brief.\nLate system.");
  ASSERT_EQ(r.messages[0].tools.size(), 1u);  // the server tool is skipped
  EXPECT_EQ(json::parse(r.messages[0].tools[0]),
            json({{"type", "function"},
                  {"function", {{"name", "read"}, {"parameters", {{"type", "object"}}}}}}));
  EXPECT_TRUE(r.tools);
  const chat::Message& a = r.messages[2];
  EXPECT_EQ(a.role, chat::Role::kAssistant);
  EXPECT_EQ(a.reasoning, "hmm");
  EXPECT_EQ(a.content, "ok");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].id, "call_ab");
  EXPECT_EQ(a.tool_calls[0].arguments_json, "{\"p\":1}");
  EXPECT_EQ(r.messages[3].role, chat::Role::kTool);
  EXPECT_EQ(r.messages[3].tool_call_id, "call_ab");
  EXPECT_EQ(r.messages[3].content, "data");
  EXPECT_EQ(r.messages[4].content, "next");
}

TEST(AnthropicRequest, ThinkingToolChoiceAndErrors) {
  json body = {{"model", "deepseek-v4-flash"},
               {"thinking", {{"type", "disabled"}}},
               {"tool_choice", {{"type", "none"}}},
               {"tools", {{{"name", "read"}}}},
               {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  ApiRequest r = parse_ok(body);
  EXPECT_EQ(r.think, chat::ThinkMode::kNone);
  EXPECT_FALSE(r.tools);
  body["thinking"] = {{"type", "adaptive"}};
  EXPECT_NE(parse_ok(body).think, chat::ThinkMode::kNone);

  auto err = [](const std::string& text) {
    auto res = parse_messages_request(text, kConfig);
    return std::holds_alternative<ApiError>(res) ? std::get<ApiError>(res) : ApiError{.status = 0};
  };
  EXPECT_EQ(err("{").status, 400);
  EXPECT_EQ(err(R"({"messages":[]})").status, 400);
  EXPECT_EQ(err(R"({"messages":[{"role":"robot","content":"x"}]})").param, "messages[0].role");
  EXPECT_EQ(err(R"({"model":"claude-3","messages":[{"content":"x"}]})").status, 404);
  // Out of range: refused with the field named (never clamped quietly).
  EXPECT_EQ(err(R"({"max_tokens":-1,"messages":[{"content":"x"}]})").param, "max_tokens");
  EXPECT_EQ(err(R"({"temperature":-1,"messages":[{"content":"x"}]})").param, "temperature");
  EXPECT_EQ(err(R"({"top_p":5,"messages":[{"content":"x"}]})").param, "top_p");
  EXPECT_EQ(err(R"({"top_k":-3,"messages":[{"content":"x"}]})").param, "top_k");
  EXPECT_EQ(err(R"({"tools":[{"name":"t","input_schema":7}],"messages":[{"content":"x"}]})").param,
            "tools");
  EXPECT_EQ(
      json::parse(anthropic_error_body(err("{"))),
      json({{"type", "error"},
            {"error", {{"type", "invalid_request_error"}, {"message", "invalid JSON request"}}}}));
}

const ResponseMeta kMeta{.endpoint = Endpoint::kMessages,
                         .id = "msg_1",
                         .model = "deepseek-v4-flash",
                         .prompt_tokens = 10};

Event done(FinishReason f) {
  return Event{.kind = EventKind::kDone,
               .finish = f,
               .usage = {.prompt_tokens = 10, .cached_tokens = 6, .completion_tokens = 4}};
}

std::vector<std::pair<std::string, json>> events(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    const std::string ev = sse.substr(pos, end - pos);
    const size_t nl = ev.find('\n');
    EXPECT_EQ(ev.rfind("event: ", 0), 0u) << ev;
    EXPECT_EQ(ev.substr(nl + 1, 6), "data: ") << ev;
    const json data = json::parse(ev.substr(nl + 7));
    EXPECT_EQ(data["type"], ev.substr(7, nl - 7));  // the event name is the data's type
    out.emplace_back(ev.substr(7, nl - 7), data);
    pos = end + 2;
  }
  return out;
}

TEST(MessagesStream, EventSequence) {
  MessagesStreamWriter w(kMeta);
  std::string sse = w.start();
  sse += w.keepalive();
  sse += w.encode({.kind = EventKind::kReasoning, .text = "hmm"});
  sse += w.encode({.kind = EventKind::kText, .text = ""});
  sse += w.encode({.kind = EventKind::kText, .text = "Hi"});
  sse += w.encode(
      {.kind = EventKind::kToolCallBegin, .text = "f", .tool_index = 0, .tool_id = "call_x"});
  sse += w.encode({.kind = EventKind::kToolCallArguments, .text = "{\"a\":", .tool_index = 0});
  sse += w.encode({.kind = EventKind::kToolCallArguments, .text = "1}", .tool_index = 0});
  sse += w.encode({.kind = EventKind::kToolCallEnd, .tool_index = 0});
  sse += w.encode(done(FinishReason::kToolCalls));
  const auto ev = events(sse);
  std::vector<std::string> names;
  for (const auto& [n, d] : ev) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "message_start", "ping", "content_block_start", "content_block_delta",
                       "content_block_delta", "content_block_stop", "content_block_start",
                       "content_block_delta", "content_block_stop", "content_block_start",
                       "content_block_delta", "content_block_delta", "content_block_stop",
                       "message_delta", "message_stop"}));
  EXPECT_EQ(ev[0].second["message"]["usage"]["input_tokens"], 10);
  EXPECT_EQ(ev[2].second["content_block"],
            json({{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}));
  EXPECT_EQ(ev[4].second["delta"], json({{"type", "signature_delta"}, {"signature", "msg_1"}}));
  EXPECT_EQ(ev[9].second["index"], 2);
  EXPECT_EQ(
      ev[9].second["content_block"],
      json({{"type", "tool_use"}, {"id", "toolu_x"}, {"name", "f"}, {"input", json::object()}}));
  EXPECT_EQ(ev[10].second["delta"],
            json({{"type", "input_json_delta"}, {"partial_json", "{\"a\":"}}));
  EXPECT_EQ(ev[13].second["delta"],
            json({{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}}));
  EXPECT_EQ(ev[13].second["usage"], json({{"input_tokens", 4},
                                          {"output_tokens", 4},
                                          {"cache_read_input_tokens", 6},
                                          {"cache_creation_input_tokens", 0}}));
}

TEST(MessagesStream, LateErrorIsAnErrorEvent) {
  MessagesStreamWriter w(kMeta);
  const auto ev = events(w.encode(done(FinishReason::kError)));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].first, "error");
  EXPECT_EQ(ev[0].second["error"]["type"], "api_error");
}

TEST(MessagesCollector, MessageObject) {
  Collector c = messages_collector(kMeta);
  c.add({.kind = EventKind::kReasoning, .text = "r"});
  c.add({.kind = EventKind::kText, .text = "Hi"});
  Event d = done(FinishReason::kStop);
  d.stop_sequence = "END";
  c.add(d);
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.status(), 200);
  EXPECT_EQ(json::parse(c.body()),
            json({{"id", "msg_1"},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", "deepseek-v4-flash"},
                  {"content",
                   {{{"type", "thinking"}, {"thinking", "r"}, {"signature", "msg_1"}},
                    {{"type", "text"}, {"text", "Hi"}}}},
                  {"stop_reason", "stop_sequence"},
                  {"stop_sequence", "END"},
                  {"usage",
                   {{"input_tokens", 4},
                    {"output_tokens", 4},
                    {"cache_read_input_tokens", 6},
                    {"cache_creation_input_tokens", 0}}}}));
  Collector len = messages_collector(kMeta);
  len.add(done(FinishReason::kLength));
  const json b = json::parse(len.body());
  EXPECT_EQ(b["stop_reason"], "max_tokens");
  EXPECT_EQ(b["content"], json::parse(R"([{"type":"text","text":""}])"));
}

}  // namespace
}  // namespace ds4::api
