// What serves each endpoint (endpoints.h): the names and response id prefixes, the error shape
// per endpoint, a prepared request's meta (model, prompt tokens, stream and usage switches, the
// named tool choice), the Responses conversation stored by the collector and found again through
// previous_response_id, the exact /health body with and without disk counters, and count_tokens
// (the prompt prepare would submit, counted past the context limit).
#include "api/endpoints.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/test_vocab.h"

namespace ds4::api {
namespace {

using nlohmann::json;
using serve::EventKind;
using serve::FinishReason;

class EndpointsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = tokenizer::testing::vocab_tokenizer();
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  }
  static PreparedRequest ok(Endpoints& e, Endpoint ep, const json& body) {
    auto r = e.prepare(ep, body.dump());
    if (auto* err = std::get_if<ApiError>(&r)) ADD_FAILURE() << err->message;
    return std::holds_alternative<PreparedRequest>(r) ? std::move(std::get<PreparedRequest>(r))
                                                      : PreparedRequest{};
  }
  static const Tokenizer* tok_;
};
const Tokenizer* EndpointsTest::tok_ = nullptr;

const json kUser = {{{"role", "user"}, {"content", "Hi"}}};

TEST(Endpoints, NamesAndErrorShapes) {
  EXPECT_STREQ(endpoint_name(Endpoint::kChat), "chat.completions");
  EXPECT_STREQ(endpoint_name(Endpoint::kCompletions), "completions");
  EXPECT_STREQ(endpoint_name(Endpoint::kMessages), "messages");
  EXPECT_STREQ(endpoint_name(Endpoint::kResponses), "responses");
  const ApiError e = bad_request("nope");
  EXPECT_EQ(endpoint_error_body(Endpoint::kMessages, e), anthropic_error_body(e));
  for (Endpoint ep : {Endpoint::kChat, Endpoint::kCompletions, Endpoint::kResponses}) {
    EXPECT_EQ(endpoint_error_body(ep, e), error_body(e));
  }
}

TEST(Endpoints, HealthBody) {
  const serve::SchedulerStats s{.queued = 1, .running = 2, .sessions = 4, .free = 2};
  EXPECT_EQ(health_body(s, nullptr),
            R"({"free":2,"queued":1,"running":2,"sessions":4,"status":"ok"})");
  const serve::DiskCacheStats d{
      .saved = 3, .failed = 0, .dropped = 1, .hits = 2, .files = 5, .bytes = 1024};
  EXPECT_EQ(health_body(s, &d),
            R"({"free":2,"kv_disk":{"bytes":1024,"dropped":1,"failed":0,"files":5,"hits":2,)"
            R"("saved":3},"queued":1,"running":2,"sessions":4,"status":"ok"})");
}

TEST_F(EndpointsTest, PrepareGivesEachEndpointItsIdsAndMeta) {
  Endpoints e(*tok_, ApiConfig{.n_ctx = 4096});
  const struct {
    Endpoint ep;
    json body;
    const char* prefix;
  } cases[] = {
      {Endpoint::kChat, {{"messages", kUser}}, "chatcmpl-"},
      {Endpoint::kCompletions, {{"prompt", "Hi"}}, "cmpl-"},
      {Endpoint::kMessages, {{"max_tokens", 8}, {"messages", kUser}}, "msg_"},
      {Endpoint::kResponses, {{"input", "Hi"}}, "resp_"},
  };
  for (const auto& c : cases) {
    const PreparedRequest p = ok(e, c.ep, c.body);
    EXPECT_EQ(p.meta.endpoint, c.ep);
    EXPECT_TRUE(p.meta.id.starts_with(c.prefix)) << p.meta.id;
    EXPECT_EQ(p.meta.id.size(), std::string(c.prefix).size() + 32) << p.meta.id;
    EXPECT_EQ(p.meta.model, "deepseek-v4-flash");
    EXPECT_GT(p.meta.created, 0);
    EXPECT_FALSE(p.request.prompt.empty());
    EXPECT_EQ(p.meta.prompt_tokens, static_cast<int>(p.request.prompt.size()));
    EXPECT_FALSE(p.stream);
    EXPECT_EQ(p.context.store != nullptr, c.ep == Endpoint::kResponses);
  }
  const PreparedRequest s =
      ok(e, Endpoint::kChat,
         {{"model", "deepseek-chat"},
          {"messages", kUser},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}},
          {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
          {"tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}}});
  EXPECT_TRUE(s.stream);
  EXPECT_TRUE(s.meta.include_usage);
  EXPECT_TRUE(s.meta.named_tool);
  EXPECT_EQ(s.meta.model, "deepseek-chat");

  auto bad = e.prepare(Endpoint::kMessages, "{");
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).status, 400);
  auto unknown = e.prepare(Endpoint::kChat, R"({"model":"gpt-4o","messages":[]})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(unknown));
  EXPECT_EQ(std::get<ApiError>(unknown).status, 404);
}

TEST_F(EndpointsTest, ResponsesCollectorStoresTheTurnForPreviousResponseId) {
  Endpoints e(*tok_, ApiConfig{.n_ctx = 4096});
  PreparedRequest first = ok(e, Endpoint::kResponses, {{"input", "Hi"}});
  Collector c = make_collector(first.meta, std::move(first.context));
  c.add({.kind = EventKind::kText, .text = "Hello"});
  c.add({.kind = EventKind::kDone, .finish = FinishReason::kStop});
  ASSERT_EQ(c.status(), 200);
  EXPECT_EQ(json::parse(c.body())["id"], first.meta.id);
  const PreparedRequest next =
      ok(e, Endpoint::kResponses, {{"previous_response_id", first.meta.id}, {"input", "More"}});
  ASSERT_EQ(next.context.conversation.size(), 3u);
  EXPECT_EQ(next.context.conversation[1].content, "Hello");
  EXPECT_GT(next.request.prompt.size(), first.request.prompt.size());
}

TEST_F(EndpointsTest, CountTokensIsThePromptAndIgnoresTheContextLimit) {
  Endpoints e(*tok_, ApiConfig{.n_ctx = 4096});
  const json body = {{"max_tokens", 8}, {"system", "Be brief."}, {"messages", kUser}};
  const PreparedRequest p = ok(e, Endpoint::kMessages, body);
  auto counted = e.count_tokens(body.dump());
  ASSERT_TRUE(std::holds_alternative<std::string>(counted));
  EXPECT_EQ(std::get<std::string>(counted),
            json({{"input_tokens", p.request.prompt.size()}}).dump());

  Endpoints small(*tok_, ApiConfig{.n_ctx = 8});
  auto refused = small.prepare(Endpoint::kMessages, body.dump());
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).code, "context_length_exceeded");
  auto still = small.count_tokens(body.dump());
  ASSERT_TRUE(std::holds_alternative<std::string>(still));
  EXPECT_EQ(std::get<std::string>(still), std::get<std::string>(counted));

  auto bad = e.count_tokens(R"({"messages":5})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).status, 400);
}

}  // namespace
}  // namespace ds4::api
