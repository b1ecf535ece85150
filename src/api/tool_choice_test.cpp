// tool_choice in the three request shapes -> serve::ToolChoice: OpenAI chat's strings, named
// function and allowed_tools, parallel_tool_calls; Anthropic's auto / any / tool / none and
// disable_parallel_tool_use; Responses' strings, named function and hosted types (auto); and the
// 400s (param tool_choice): unknown values, a forced choice without tools, an undeclared name.
#include "api/tool_choice.h"

#include <gtest/gtest.h>

#include "api/anthropic_request.h"
#include "api/openai_request.h"
#include "api/responses_request.h"
#include "api/responses_store.h"
#include "tokenizer/test_vocab.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::ToolMode;

const ApiConfig kConfig{.n_ctx = 32768};
const json kChatTools = json::parse(
    R"([{"type":"function","function":{"name":"a","parameters":{}}},
        {"type":"function","function":{"name":"b","parameters":{}}}])");

ApiResult<ApiRequest> chat(json tool_choice, json extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", kChatTools}};
  if (!tool_choice.is_null()) body["tool_choice"] = tool_choice;
  body.update(extra);
  return parse_request(Endpoint::kChat, body.dump(), kConfig);
}

ApiResult<ApiRequest> messages(json tool_choice, json extra = json::object()) {
  json body = {{"max_tokens", 10},
               {"messages", {{{"role", "user"}, {"content", "x"}}}},
               {"tools", json::parse(R"([{"name":"a"},{"name":"b"},
                                         {"type":"web_search_20250305","name":"web_search"}])")},
               {"tool_choice", tool_choice}};
  body.update(extra);
  return parse_messages_request(body.dump(), kConfig);
}

ApiResult<ApiRequest> responses(json tool_choice, json extra = json::object()) {
  json body = {{"input", "x"},
               {"tools", {{{"type", "function"}, {"name", "a"}}, {{"type", "web_search"}}}},
               {"tool_choice", tool_choice}};
  body.update(extra);
  ResponsesStore store;
  auto r = parse_responses_request(body.dump(), kConfig, &store);
  if (auto* e = std::get_if<ApiError>(&r)) return *e;
  return std::get<ResponsesParsed>(r).request;
}

serve::ToolChoice choice(const ApiResult<ApiRequest>& r) {
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << e->message;
  return std::holds_alternative<ApiRequest>(r) ? std::get<ApiRequest>(r).tool_choice
                                               : serve::ToolChoice{};
}

ApiError error(const ApiResult<ApiRequest>& r) {
  if (!std::holds_alternative<ApiError>(r)) ADD_FAILURE() << "accepted";
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{.status = 0};
}

TEST(ToolChoice, OpenAiChat) {
  EXPECT_EQ(choice(chat(nullptr)).mode, ToolMode::kAuto);
  EXPECT_EQ(choice(chat("auto")).mode, ToolMode::kAuto);
  const serve::ToolChoice req = choice(chat("required"));
  EXPECT_EQ(req.mode, ToolMode::kRequired);
  EXPECT_EQ(req.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(req.one_call);
  EXPECT_TRUE(choice(chat("required", {{"parallel_tool_calls", false}})).one_call);
  const serve::ToolChoice named =
      choice(chat({{"type", "function"}, {"function", {{"name", "b"}}}}));
  EXPECT_EQ(named.mode, ToolMode::kNamed);
  EXPECT_EQ(named.names, std::vector<std::string>{"b"});
  const serve::ToolChoice allowed =
      choice(chat({{"type", "allowed_tools"},
                   {"allowed_tools",
                    {{"mode", "required"}, {"tools", {{{"type", "function"}, {"name", "b"}}}}}}}));
  EXPECT_EQ(allowed.mode, ToolMode::kRequired);
  EXPECT_EQ(allowed.names, std::vector<std::string>{"b"});
  auto none = chat("none");
  ASSERT_TRUE(std::holds_alternative<ApiRequest>(none));
  EXPECT_FALSE(std::get<ApiRequest>(none).tools);

  EXPECT_EQ(error(chat("sometimes")).param, "tool_choice");
  EXPECT_EQ(error(chat(7)).param, "tool_choice");
  EXPECT_EQ(error(chat({{"type", "function"}, {"function", {{"name", "zzz"}}}})).param,
            "tool_choice");
  EXPECT_EQ(error(chat({{"type", "function"}})).param, "tool_choice");
  const ApiError no_tools = error(chat("required", {{"tools", json::array()}}));
  EXPECT_EQ(no_tools.status, 400);
  EXPECT_NE(no_tools.message.find("only allowed when 'tools' are specified"), std::string::npos);
}

TEST(ToolChoice, AnthropicMessages) {
  EXPECT_EQ(choice(messages({{"type", "auto"}})).mode, ToolMode::kAuto);
  const serve::ToolChoice any = choice(messages({{"type", "any"}}));
  EXPECT_EQ(any.mode, ToolMode::kRequired);
  EXPECT_EQ(any.names, (std::vector<std::string>{"a", "b"}));  // the server tool is skipped
  EXPECT_TRUE(choice(messages({{"type", "any"}, {"disable_parallel_tool_use", true}})).one_call);
  const serve::ToolChoice tool = choice(messages({{"type", "tool"}, {"name", "a"}}));
  EXPECT_EQ(tool.mode, ToolMode::kNamed);
  EXPECT_EQ(tool.names, std::vector<std::string>{"a"});
  EXPECT_EQ(error(messages({{"type", "tool"}, {"name", "web_search"}})).status, 400);
  EXPECT_EQ(error(messages({{"type", "tool"}})).status, 400);
  EXPECT_EQ(error(messages({{"type", "often"}})).status, 400);
  EXPECT_EQ(error(messages("any")).status, 400);
}

TEST(ToolChoice, Responses) {
  EXPECT_EQ(choice(responses("auto")).mode, ToolMode::kAuto);
  EXPECT_EQ(choice(responses("required")).names, std::vector<std::string>{"a"});
  EXPECT_EQ(choice(responses({{"type", "function"}, {"name", "a"}})).mode, ToolMode::kNamed);
  EXPECT_EQ(choice(responses({{"type", "web_search_preview"}})).mode, ToolMode::kAuto);
  EXPECT_EQ(error(responses({{"type", "function"}, {"name", "b"}})).param, "tool_choice");
  EXPECT_EQ(error(responses("sometimes")).param, "tool_choice");
}

TEST(ToolChoice, BuildCarriesTheChoiceAndTheBudget) {
  const Tokenizer* t = tokenizer::testing::vocab_tokenizer();
  ASSERT_NE(t, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  auto r = messages({{"type", "tool"}, {"name", "b"}},
                    {{"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}});
  ASSERT_TRUE(std::holds_alternative<ApiRequest>(r));
  EXPECT_EQ(std::get<ApiRequest>(r).reasoning_budget, 1024);
  auto built = build_request(std::get<ApiRequest>(r), *t, kConfig);
  ASSERT_TRUE(std::holds_alternative<serve::Request>(built));
  const serve::Request& sr = std::get<serve::Request>(built);
  EXPECT_EQ(sr.output.tool_choice.mode, ToolMode::kNamed);
  EXPECT_EQ(sr.output.tool_choice.names, std::vector<std::string>{"b"});
  EXPECT_EQ(sr.output.reasoning_budget, 1024);
  EXPECT_TRUE(sr.output.thinking);
  auto adaptive =
      messages({{"type", "auto"}}, {{"thinking", {{"type", "adaptive"}, {"budget_tokens", 9}}}});
  EXPECT_EQ(std::get<ApiRequest>(adaptive).reasoning_budget, 0);
}

}  // namespace
}  // namespace ds4::api
