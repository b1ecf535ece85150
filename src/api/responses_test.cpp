// OpenAI Responses (features.md §1.4.3, §1.11, §1.12), golden: input items -> the shared chat
// messages (reasoning attached to the next assistant turn, function_call merged into it,
// function_call_output as a tool message), non-function tools skipped, instructions,
// previous_response_id against the store (a 400 when gone), and events -> the lifecycle events
// with sequence numbers, the terminal status and the conversation stored for the next request.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/responses_request.h"
#include "api/responses_response.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::Event;
using serve::EventKind;
using serve::FinishReason;

const ApiConfig kConfig{.n_ctx = 4096};

TEST(ResponsesRequest, ItemsToolsAndInstructions) {
  const json body = {
      {"model", "deepseek-v4-flash"},
      {"instructions", "Be brief."},
      {"max_output_tokens", 32},
      {"reasoning", {{"effort", "high"}, {"summary", "auto"}}},
      {"tools",
       {{{"type", "web_search"}},
        {{"type", "function"}, {"name", "sh"}, {"parameters", {{"type", "object"}}}}}},
      {"input",
       {{{"type", "message"}, {"role", "developer"}, {"content", "dev"}},
        {{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "hi"}}}}},
        {{"type", "reasoning"}, {"summary", {{{"type", "summary_text"}, {"text", "think"}}}}},
        {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "sh"}, {"arguments", "{}"}},
        {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "ok"}}}}};
  ResponsesStore store;
  auto res = parse_responses_request(body.dump(), kConfig, &store);
  ASSERT_TRUE(std::holds_alternative<ResponsesParsed>(res)) << std::get<ApiError>(res).message;
  const auto& p = std::get<ResponsesParsed>(res);
  const ApiRequest& r = p.request;
  EXPECT_EQ(r.max_tokens, 32);
  EXPECT_TRUE(r.emit_reasoning);
  EXPECT_TRUE(r.tools);
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0].role, chat::Role::kSystem);
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[0].tools.size(), 1u);
  EXPECT_EQ(r.messages[1].role, chat::Role::kDeveloper);
  EXPECT_EQ(r.messages[3].role, chat::Role::kAssistant);
  EXPECT_EQ(r.messages[3].reasoning, "think");
  ASSERT_EQ(r.messages[3].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[3].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[4].role, chat::Role::kTool);
  EXPECT_EQ(r.messages[4].tool_call_id, "call_1");
  EXPECT_EQ(p.conversation.size(), 4u);  // without the instructions
}

TEST(ResponsesRequest, PreviousResponseId) {
  ResponsesStore store(2);
  store.put("resp_a", {{.role = chat::Role::kUser, .content = "one"},
                       {.role = chat::Role::kAssistant, .content = "two"}});
  auto ok = parse_responses_request(R"({"input":"three","previous_response_id":"resp_a"})", kConfig,
                                    &store);
  ASSERT_TRUE(std::holds_alternative<ResponsesParsed>(ok));
  EXPECT_EQ(std::get<ResponsesParsed>(ok).request.messages.size(), 3u);
  auto gone =
      parse_responses_request(R"({"input":"x","previous_response_id":"resp_b"})", kConfig, &store);
  ASSERT_TRUE(std::holds_alternative<ApiError>(gone));
  EXPECT_EQ(std::get<ApiError>(gone).status, 400);
  EXPECT_NE(std::get<ApiError>(gone).message.find("resend the full input"), std::string::npos);
  auto bad = parse_responses_request(R"({"input":7})", kConfig, &store);
  EXPECT_EQ(std::get<ApiError>(bad).param, "input");
}

std::vector<json> frames(const std::string& sse) {
  std::vector<json> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_EQ(sse.substr(pos, 6), "data: ");
    out.push_back(json::parse(sse.substr(pos + 6, end - pos - 6)));
    pos = end + 2;
  }
  return out;
}

TEST(ResponsesStream, LifecycleAndStore) {
  ResponsesStore store;
  ResponseMeta meta{.endpoint = Endpoint::kResponses,
                    .id = "resp_1",
                    .model = "m",
                    .created = 5,
                    .emit_reasoning = false};
  ResponsesStreamWriter w(meta, {&store, {{.role = chat::Role::kUser, .content = "hi"}}});
  std::string sse = w.start();
  sse += w.keepalive();
  sse += w.encode({.kind = EventKind::kReasoning, .text = "r"});  // not asked for: not sent
  sse += w.encode({.kind = EventKind::kText, .text = "Hi"});
  sse += w.encode(
      {.kind = EventKind::kToolCallBegin, .text = "f", .tool_index = 0, .tool_id = "call_x"});
  sse += w.encode({.kind = EventKind::kToolCallArguments, .text = "{\"a\": 1}", .tool_index = 0});
  sse += w.encode({.kind = EventKind::kToolCallEnd, .tool_index = 0});
  sse += w.encode({.kind = EventKind::kDone,
                   .finish = FinishReason::kToolCalls,
                   .usage = {.prompt_tokens = 10, .cached_tokens = 6, .completion_tokens = 4}});
  const auto f = frames(sse);
  std::vector<std::string> types;
  for (size_t i = 0; i < f.size(); ++i) {
    types.push_back(f[i]["type"]);
    EXPECT_EQ(f[i]["sequence_number"], i);
  }
  EXPECT_EQ(types, (std::vector<std::string>{
                       "response.created", "response.in_progress", "response.in_progress",
                       "response.output_item.added", "response.content_part.added",
                       "response.output_text.delta", "response.output_text.done",
                       "response.content_part.done", "response.output_item.done",
                       "response.output_item.added", "response.function_call_arguments.delta",
                       "response.function_call_arguments.done", "response.output_item.done",
                       "response.completed"}));
  EXPECT_EQ(f[9]["output_index"], 1);
  EXPECT_EQ(f[11]["arguments"], "{\"a\":1}");
  const json& done = f.back()["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][1]["call_id"], "call_x");
  EXPECT_EQ(done["usage"]["input_tokens_details"]["cached_tokens"], 6);
  auto stored = store.find("resp_1");
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[1].content, "Hi");
  EXPECT_EQ((*stored)[1].reasoning, "r");
  EXPECT_EQ((*stored)[1].tool_calls[0].arguments_json, "{\"a\": 1}");
}

TEST(ResponsesCollector, IncompleteAndFailed) {
  ResponseMeta meta{.endpoint = Endpoint::kResponses, .id = "resp_2"};
  Collector c = responses_collector(meta, {});
  c.add({.kind = EventKind::kText, .text = "x"});
  c.add({.kind = EventKind::kDone, .finish = FinishReason::kLength});
  const json b = json::parse(c.body());
  EXPECT_EQ(b["status"], "incomplete");
  EXPECT_EQ(b["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(b["output"][0]["status"], "incomplete");
  Collector e = responses_collector(meta, {});
  e.add({.kind = EventKind::kDone, .finish = FinishReason::kError});
  EXPECT_EQ(e.status(), 500);
}

// The collector builds its object with the stream's item logic: for the same events its body is
// the stream's terminal response (item ids aside: each run draws its own) and it stores the same
// conversation, stray text inside a call (malformed DSML reported as text) included.
TEST(ResponsesCollector, SameObjectAsTheStream) {
  const std::vector<Event> events = {
      {.kind = EventKind::kReasoning, .text = "r"},
      {.kind = EventKind::kReasoning, .text = "s"},
      {.kind = EventKind::kText, .text = "a"},
      {.kind = EventKind::kText, .text = ""},
      {.kind = EventKind::kReasoning, .text = "t"},
      {.kind = EventKind::kText, .text = "b"},
      {.kind = EventKind::kToolCallBegin, .text = "f", .tool_index = 0, .tool_id = "call_1"},
      {.kind = EventKind::kToolCallArguments, .text = "{\"a\": ", .tool_index = 0},
      {.kind = EventKind::kToolCallArguments, .text = "1}", .tool_index = 0},
      {.kind = EventKind::kToolCallEnd, .tool_index = 0},
      {.kind = EventKind::kToolCallBegin, .text = "g", .tool_index = 1, .tool_id = "call_2"},
      {.kind = EventKind::kToolCallArguments, .text = "{", .tool_index = 1},
      {.kind = EventKind::kText, .text = "x"},
      {.kind = EventKind::kToolCallArguments, .text = "}", .tool_index = 1},
      {.kind = EventKind::kDone,
       .finish = FinishReason::kLength,
       .usage = {.prompt_tokens = 9, .cached_tokens = 2, .completion_tokens = 7}}};
  const auto without_ids = [](json r) {
    for (auto& item : r["output"]) item.erase("id");
    return r;
  };
  for (const bool emit : {true, false}) {
    const ResponseMeta meta{.endpoint = Endpoint::kResponses,
                            .id = "resp_3",
                            .model = "m",
                            .created = 7,
                            .emit_reasoning = emit};
    ResponsesStore streamed, collected;
    ResponsesStreamWriter w(meta, {&streamed, {{.role = chat::Role::kUser, .content = "q"}}});
    std::string sse;
    for (const auto& e : events) sse += w.encode(e);
    Collector c =
        responses_collector(meta, {&collected, {{.role = chat::Role::kUser, .content = "q"}}});
    for (const auto& e : events) c.add(e);
    ASSERT_EQ(c.status(), 200);
    const json body = json::parse(c.body());
    EXPECT_EQ(without_ids(body), without_ids(frames(sse).back()["response"])) << emit;
    EXPECT_EQ(body["output"].size(), emit ? 7u : 4u);
    EXPECT_EQ(body["output"].back()["status"], "incomplete");
    EXPECT_EQ(body["output"][emit ? 5 : 2]["status"], "completed");
    EXPECT_EQ(body["output"][emit ? 5 : 2]["arguments"], "{");
    const auto a = streamed.find("resp_3"), b = collected.find("resp_3");
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->size(), 2u);
    ASSERT_EQ(b->size(), 2u);
    EXPECT_EQ((*b)[1].content, (*a)[1].content);
    EXPECT_EQ((*b)[1].reasoning, (*a)[1].reasoning);
    ASSERT_EQ((*b)[1].tool_calls.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ((*b)[1].tool_calls[i].arguments_json, (*a)[1].tool_calls[i].arguments_json);
    }
  }
}

// A finished turn that did not fail is stored for previous_response_id, as the stream stores it.
TEST(ResponsesCollector, StoresTheConversation) {
  ResponsesStore store;
  const ResponseMeta meta{.endpoint = Endpoint::kResponses, .id = "resp_4"};
  Collector c = responses_collector(meta, {&store, {{.role = chat::Role::kUser, .content = "q"}}});
  c.add({.kind = EventKind::kReasoning, .text = "r"});
  c.add({.kind = EventKind::kText, .text = "x"});
  c.add({.kind = EventKind::kDone, .finish = FinishReason::kStop});
  auto stored = store.find("resp_4");
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[1].content, "x");
  EXPECT_EQ((*stored)[1].reasoning, "r");
  Collector broken = responses_collector({.endpoint = Endpoint::kResponses, .id = "resp_5"},
                                         {&store, {{.role = chat::Role::kUser, .content = "q"}}});
  broken.add({.kind = EventKind::kDone, .finish = FinishReason::kError});
  EXPECT_FALSE(store.find("resp_5"));
}

}  // namespace
}  // namespace ds4::api
