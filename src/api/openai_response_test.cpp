// serve events -> OpenAI bodies and SSE bytes (features.md §1.11-§1.12), golden: the exact
// chunk sequence of a stream (role, reasoning, content, tool-call header then argument deltas,
// finish, usage, [DONE]), the non-streaming objects with usage and cached tokens, error bodies.
#include "api/openai_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/sse.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::Event;
using serve::EventKind;
using serve::FinishReason;

const ResponseMeta kChat{.endpoint = Endpoint::kChat,
                         .id = "chatcmpl-1",
                         .model = "deepseek-v4-flash",
                         .created = 100,
                         .include_usage = true};

Event done(FinishReason f, Status error = Status::ok()) {
  return Event{.kind = EventKind::kDone,
               .finish = f,
               .usage = {.prompt_tokens = 10, .cached_tokens = 6, .completion_tokens = 4},
               .error = std::move(error)};
}

std::vector<json> frames(const std::string& sse) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    const std::string ev = sse.substr(pos, end - pos);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    const std::string data = ev.substr(6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    pos = end + 2;
  }
  return out;
}

TEST(StreamEncoder, ChatChunkSequence) {
  StreamEncoder enc(kChat);
  std::string sse = enc.start();
  sse += enc.encode({.kind = EventKind::kReasoning, .text = "hmm"});
  sse += enc.encode({.kind = EventKind::kText, .text = "Hi"});
  sse += enc.encode({.kind = EventKind::kText, .text = ""});  // nothing to send
  sse += enc.encode(
      {.kind = EventKind::kToolCallBegin, .text = "f", .tool_index = 0, .tool_id = "call_x"});
  sse += enc.encode({.kind = EventKind::kToolCallArguments, .text = "{\"a\":", .tool_index = 0});
  sse += enc.encode({.kind = EventKind::kToolCallArguments, .text = "1}", .tool_index = 0});
  sse += enc.encode({.kind = EventKind::kToolCallEnd, .tool_index = 0});
  sse += enc.encode(done(FinishReason::kToolCalls));
  const auto f = frames(sse);
  ASSERT_EQ(f.size(), 9u) << sse;
  const json head = {{"id", "chatcmpl-1"},
                     {"object", "chat.completion.chunk"},
                     {"created", 100},
                     {"model", "deepseek-v4-flash"}};
  auto expect = [&](const json& delta, const json& finish) {
    json j = head;
    j["choices"] = json::array({{{"index", 0}, {"finish_reason", finish}, {"delta", delta}}});
    return j;
  };
  EXPECT_EQ(f[0], expect({{"role", "assistant"}, {"content", ""}}, nullptr));
  EXPECT_EQ(f[1], expect({{"reasoning_content", "hmm"}}, nullptr));
  EXPECT_EQ(f[2], expect({{"content", "Hi"}}, nullptr));
  EXPECT_EQ(f[3], expect({{"tool_calls",
                           {{{"index", 0},
                             {"id", "call_x"},
                             {"type", "function"},
                             {"function", {{"name", "f"}, {"arguments", ""}}}}}}},
                         nullptr));
  EXPECT_EQ(f[4],
            expect({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "{\"a\":"}}}}}}},
                   nullptr));
  EXPECT_EQ(f[6], expect(json::object(), "tool_calls"));
  json usage = head;
  usage["choices"] = json::array();
  usage["usage"] = {{"prompt_tokens", 10},
                    {"completion_tokens", 4},
                    {"total_tokens", 14},
                    {"prompt_tokens_details", {{"cached_tokens", 6}, {"cache_write_tokens", 4}}}};
  EXPECT_EQ(f[7], usage);
  EXPECT_EQ(f[8], "[DONE]");
}

TEST(StreamEncoder, WithoutIncludeUsageEndsWithFinishThenDone) {
  ResponseMeta m = kChat;
  m.include_usage = false;
  StreamEncoder enc(m);
  const std::string tail = enc.encode(done(FinishReason::kLength));
  EXPECT_EQ(tail.substr(tail.size() - kSseDone.size()), kSseDone);
  const auto f = frames(tail);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0]["choices"][0]["finish_reason"], "length");
}

TEST(StreamEncoder, ErrorBecomesAnErrorEventThenDone) {
  StreamEncoder enc(kChat);
  const auto f = frames(enc.encode(done(FinishReason::kError, Status::unavailable("bye"))));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0]["error"]["message"], "bye");
  EXPECT_EQ(f[0]["error"]["type"], "server_error");
  EXPECT_EQ(f[1], "[DONE]");
}

TEST(StreamEncoder, CompletionsChunksCarryText) {
  ResponseMeta m = kChat;
  m.endpoint = Endpoint::kCompletions;
  m.include_usage = false;
  StreamEncoder enc(m);
  EXPECT_EQ(enc.start(), "");
  const auto f = frames(enc.encode({.kind = EventKind::kText, .text = "a</think>b"}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["object"], "text_completion");
  EXPECT_EQ(f[0]["choices"][0]["text"], "a</think>b");
}

TEST(ResponseCollector, ChatMessageWithReasoningAndUsage) {
  Collector c = openai_collector(kChat);
  c.add({.kind = EventKind::kReasoning, .text = "think"});
  c.add({.kind = EventKind::kText, .text = "Hel"});
  c.add({.kind = EventKind::kText, .text = "lo"});
  EXPECT_FALSE(c.done());
  c.add(done(FinishReason::kStop));
  ASSERT_TRUE(c.done());
  EXPECT_EQ(c.status(), 200);
  const json expected = json::parse(R"({"id":"chatcmpl-1","object":"chat.completion",
      "created":100,"model":"deepseek-v4-flash","choices":[{"index":0,"finish_reason":"stop",
      "message":{"role":"assistant","content":"Hello","reasoning_content":"think"}}],
      "usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,
      "prompt_tokens_details":{"cached_tokens":6,"cache_write_tokens":4}}})");
  EXPECT_EQ(json::parse(c.body()), expected);
}

TEST(ResponseCollector, ToolCallsHaveCompactArgumentsAndNullContent) {
  Collector c = openai_collector(kChat);
  c.add({.kind = EventKind::kToolCallBegin, .text = "f", .tool_index = 0, .tool_id = "call_y"});
  c.add({.kind = EventKind::kToolCallArguments, .text = "{\"a\": ", .tool_index = 0});
  c.add({.kind = EventKind::kToolCallArguments, .text = "[1, 2]}", .tool_index = 0});
  c.add(done(FinishReason::kToolCalls));
  const json msg = json::parse(c.body())["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null());
  EXPECT_EQ(msg["tool_calls"][0]["id"], "call_y");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["arguments"], R"({"a":[1,2]})");
  EXPECT_EQ(json::parse(c.body())["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ResponseCollector, ErrorsMapToTheirStatus) {
  Collector c = openai_collector(kChat);
  c.add(done(FinishReason::kError, Status::unavailable("server shutting down")));
  EXPECT_EQ(c.status(), 503);
  EXPECT_EQ(json::parse(c.body())["error"]["message"], "server shutting down");
}

TEST(Errors, ShapeAndStatusMapping) {
  EXPECT_EQ(json::parse(error_body(bad_request("nope", "messages"))),
            json::parse(R"({"error":{"message":"nope","type":"invalid_request_error",
                "param":"messages","code":null}})"));
  EXPECT_EQ(from_status(Status::resource_exhausted("full")).status, 429);
  EXPECT_EQ(from_status(Status::unavailable("down")).status, 503);
  EXPECT_EQ(from_status(Status::out_of_range("long")).status, 400);
  EXPECT_EQ(from_status(Status::internal("bug")).status, 500);
}

TEST(Models, ListAndAliases) {
  const ModelCard card{.name = "DeepSeek V4 Flash", .n_ctx = 4096};
  const json list = json::parse(models_list_json(card));
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(list["data"][0]["id"], "deepseek-v4-flash");
  EXPECT_EQ(list["data"][1]["id"], "deepseek-v4-pro");
  EXPECT_EQ(list["data"][1]["context_length"], 4096);
  EXPECT_EQ(json::parse(model_json("deepseek-v4-pro", card))["object"], "model");
  EXPECT_EQ(model_json("gpt-4o", card), "");
}

}  // namespace
}  // namespace ds4::api
