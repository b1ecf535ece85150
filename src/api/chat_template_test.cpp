// ApiConfig::chat_template (ds4-server --chat-template) through the three request parsers and
// build_request: the OpenAI requests tests/data/ds4_render/rN.request.json render, under kDs4,
// exactly the prompts ds4-server traced for them (rN.txt), and by default the official texts
// committed in tests/data/official_render (which tests/server/chat_template_test.mjs compares the
// real server's trace with); tool schemas keep the client's key order in both; under kDs4
// Anthropic and Responses tools render as sent; the request says whether the template kept
// earlier reasoning.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "api/anthropic_request.h"
#include "api/openai_request.h"
#include "api/responses_request.h"
#include "tokenizer/test_vocab.h"

namespace ds4::api {
namespace {

const ApiConfig kOfficial{.n_ctx = 4096};
const ApiConfig kDs4{.n_ctx = 4096, .chat_template = chat::Template::kDs4};

// A schema whose keys are not in sorted order (nlohmann::json would sort them).
constexpr const char* kSchema =
    R"({"type":"object","properties":{"zone":{"type":"string"},"city":{"type":"string"}},"required":["city"]})";

class ChatTemplateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = tokenizer::testing::vocab_tokenizer();  // loaded once per test binary
    ASSERT_NE(tok_, nullptr) << "no vocabulary GGUF at " DS4_TEST_VOCAB_PATH;
  }

  // Parses `body` for `ep` and builds it; the rendered request (empty on an error).
  static serve::Request build(Endpoint ep, const std::string& body, const ApiConfig& c) {
    ApiResult<ApiRequest> parsed = ApiError{};
    if (ep == Endpoint::kMessages) {
      parsed = parse_messages_request(body, c);
    } else if (ep == Endpoint::kResponses) {
      auto p = parse_responses_request(body, c, nullptr);
      if (auto* e = std::get_if<ApiError>(&p)) {
        parsed = *e;
      } else {
        parsed = std::get<ResponsesParsed>(p).request;
      }
    } else {
      parsed = parse_request(ep, body, c);
    }
    if (auto* e = std::get_if<ApiError>(&parsed)) {
      ADD_FAILURE() << body << ": " << e->message;
      return {};
    }
    messages_ = std::get<ApiRequest>(parsed).messages;
    auto b = build_request(std::get<ApiRequest>(parsed), *tok_, c);
    if (auto* e = std::get_if<ApiError>(&b)) ADD_FAILURE() << e->message;
    return std::holds_alternative<serve::Request>(b) ? std::get<serve::Request>(b)
                                                     : serve::Request{};
  }
  static const Tokenizer* tok_;
  static std::vector<chat::Message> messages_;  // the last build's parsed messages
};
const Tokenizer* ChatTemplateTest::tok_ = nullptr;
std::vector<chat::Message> ChatTemplateTest::messages_;

std::string data_file(const std::string& path) {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  std::ifstream f(std::string(src != nullptr ? src : ".") + "/tests/data/" + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_F(ChatTemplateTest, DefaultIsOfficial) {
  EXPECT_EQ(ApiConfig{}.chat_template, chat::Template::kOfficial);
}

// ds4-server's traced requests: ds4's bytes under kDs4, the committed official texts by default.
TEST_F(ChatTemplateTest, TracedRequestsRenderDs4sBytesOrTheOfficialOnes) {
  for (const char* name : {"r1", "r2", "r3", "r4", "r5", "r6"}) {
    const std::string n = name;
    const std::string body = data_file("ds4_render/" + n + ".request.json");
    const std::string ds4 = data_file("ds4_render/" + n + ".txt");
    const std::string official = data_file("official_render/" + n + ".txt");
    ASSERT_FALSE(body.empty() || ds4.empty() || official.empty()) << n;
    EXPECT_EQ(build(Endpoint::kChat, body, kDs4).rendered, ds4) << n;
    EXPECT_EQ(build(Endpoint::kChat, body, kOfficial).rendered, official) << n;
  }
}

TEST_F(ChatTemplateTest, ChatRendersTheConfiguredTemplateInTheClientsKeyOrder) {
  const std::string body =
      std::string(R"({"messages":[{"role":"system","content":"Be brief."},)") +
      R"({"role":"user","content":"Weather?"}],"tools":[{"type":"function","function":)" +
      R"({"name":"get_weather","description":"Weather.","parameters":)" + kSchema + "}}]}";
  const serve::Request official = build(Endpoint::kChat, body, kOfficial);
  auto want = chat::render(messages_, {.think = chat::ThinkMode::kHigh, .context_size = 4096});
  ASSERT_TRUE(want.is_ok());
  EXPECT_EQ(official.rendered, *want);
  EXPECT_TRUE(official.rendered.starts_with(std::string(chat::kBos) + "Be brief.\n\n## Tools"));
  EXPECT_NE(official.rendered.find(R"({"name": "get_weather", "description": "Weather.", )"
                                   R"("parameters": {"type": "object", "properties": {"zone")"),
            std::string::npos)
      << official.rendered;
  EXPECT_EQ(official.prompt, tok_->encode(official.rendered, SpecialTokens::kRecognize));

  const serve::Request ds4 = build(Endpoint::kChat, body, kDs4);
  auto want_ds4 = chat::render_ds4_server(messages_, {.think = chat::ThinkMode::kHigh});
  ASSERT_TRUE(want_ds4.is_ok());
  EXPECT_EQ(ds4.rendered, *want_ds4);
  EXPECT_TRUE(ds4.rendered.starts_with(std::string(chat::kBos) + "## Tools\n\nYou have access"));
  EXPECT_NE(ds4.rendered.find(std::string(R"({"name":"get_weather","description":"Weather.",)") +
                              R"("parameters":)" + kSchema + "}"),
            std::string::npos)
      << ds4.rendered;
  EXPECT_NE(ds4.rendered.find("Be brief.<｜User｜>Weather?"), std::string::npos);
  EXPECT_EQ(ds4.prompt, tok_->encode(ds4.rendered, SpecialTokens::kRecognize));
}

TEST_F(ChatTemplateTest, MessagesAndResponsesToolsRenderAsSentUnderDs4) {
  const std::string anthropic =
      std::string(R"({"max_tokens":8,"messages":[{"role":"user","content":"Weather?"}],)") +
      R"("tools":[{"name":"get_weather","description":"Weather.","input_schema":)" + kSchema +
      R"(},{"type":"web_search_20250305","name":"web_search"}]})";
  const serve::Request a_official = build(Endpoint::kMessages, anthropic, kOfficial);
  EXPECT_NE(a_official.rendered.find(R"({"name": "get_weather", "description": "Weather.", )"
                                     R"("parameters": {"type": "object", "properties": {"zone")"),
            std::string::npos)
      << a_official.rendered;
  const serve::Request a_ds4 = build(Endpoint::kMessages, anthropic, kDs4);
  EXPECT_NE(a_ds4.rendered.find(std::string(R"({"name":"get_weather","description":"Weather.",)") +
                                R"("input_schema":)" + kSchema + "}\n\nYou MUST"),
            std::string::npos)
      << a_ds4.rendered;
  EXPECT_EQ(a_ds4.rendered.find("web_search"), std::string::npos);  // server tools: skipped

  const std::string responses =
      std::string(R"({"input":"Weather?","tools":[{"type":"function","name":"get_weather",)") +
      R"("description":"Weather.","parameters":)" + kSchema + R"(,"strict":false}]})";
  const serve::Request r_official = build(Endpoint::kResponses, responses, kOfficial);
  EXPECT_NE(r_official.rendered.find(R"({"name": "get_weather", "description": "Weather.", )"
                                     R"("parameters": {"type": "object", "properties": {"zone")"),
            std::string::npos)
      << r_official.rendered;
  const serve::Request r_ds4 = build(Endpoint::kResponses, responses, kDs4);
  EXPECT_NE(
      r_ds4.rendered.find(
          std::string(R"({"type":"function","name":"get_weather","description":"Weather.",)") +
          R"("parameters":)" + kSchema + R"(,"strict":false})"),
      std::string::npos)
      << r_ds4.rendered;
}

// A developer message before the last user turn: dropped by the official encoder in thinking
// mode, joined into the system region by ds4.
TEST_F(ChatTemplateTest, DeveloperMessage) {
  const std::string body = R"({"messages":[{"role":"developer","content":"Answer in French."},)"
                           R"({"role":"user","content":"Say hello."}]})";
  EXPECT_EQ(build(Endpoint::kChat, body, kOfficial).rendered,
            std::string(chat::kBos) + "<｜User｜>Say hello.<｜Assistant｜><think>");
  EXPECT_EQ(
      build(Endpoint::kChat, body, kDs4).rendered,
      std::string(chat::kBos) + "Answer in French.<｜User｜>Say hello.<｜Assistant｜><think>");
}

// Request::keeps_reasoning follows the template: a tool call in the history without declared
// tools keeps earlier reasoning under ds4 only; declared tools under both.
TEST_F(ChatTemplateTest, KeepsReasoningFollowsTheTemplate) {
  const std::string history =
      R"({"role":"user","content":"Weather?"},{"role":"assistant","content":"",)"
      R"("reasoning_content":"Look it up.","tool_calls":[{"id":"call_1","type":"function",)"
      R"("function":{"name":"get_weather","arguments":"{}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","content":"sunny"},)"
      R"({"role":"assistant","content":"Sunny.","reasoning_content":"EARLIER"},)"
      R"({"role":"user","content":"Tomorrow?"})";
  const std::string without = "{\"messages\":[" + history + "]}";
  const std::string with = "{\"messages\":[" + history +
                           R"(],"tools":[{"type":"function","function":{"name":"get_weather"}}]})";
  const serve::Request o = build(Endpoint::kChat, without, kOfficial);
  EXPECT_FALSE(o.keeps_reasoning);
  EXPECT_EQ(o.rendered.find("EARLIER"), std::string::npos);
  const serve::Request d = build(Endpoint::kChat, without, kDs4);
  EXPECT_TRUE(d.keeps_reasoning);
  EXPECT_NE(d.rendered.find("<think>EARLIER</think>Sunny."), std::string::npos) << d.rendered;
  EXPECT_TRUE(build(Endpoint::kChat, with, kOfficial).keeps_reasoning);
  EXPECT_TRUE(build(Endpoint::kChat, with, kDs4).keeps_reasoning);
  const std::string plain = R"({"messages":[{"role":"user","content":"Hi"}]})";
  EXPECT_FALSE(build(Endpoint::kChat, plain, kOfficial).keeps_reasoning);
  EXPECT_FALSE(build(Endpoint::kChat, plain, kDs4).keeps_reasoning);
}

}  // namespace
}  // namespace ds4::api
