// Protects: render_ds4_server() writes the bytes ds4's server writes, and the official render()
// differs from them exactly where docs/chat.md says (issue 22, bench/compat.md). The expected texts
// are ds4-server's own: tests/data/ds4_render/rN.txt is the rendered prompt its --trace recorded
// for the OpenAI request rN.request.json (ds4 built from its public source; bench/compat.md says
// how). The messages below are those requests, field for field. Also the server-template
// selection (ds4-server --chat-template): its names, render(..., Template) and the
// reasoning-keeping rule.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ds4/chat.h"

namespace ds4::chat {
namespace {

std::string ds4_text(const std::string& name) {
  const char* src = std::getenv("DS4_SOURCE_DIR");
  std::ifstream f(std::string(src != nullptr ? src : ".") + "/tests/data/ds4_render/" + name +
                  ".txt");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kWeather =
    R"({"type":"function","function":{"name":"get_weather","description":"Get the weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}})";
const char* kWeatherShort =
    R"({"type":"function","function":{"name":"get_weather","description":"Get the weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})";

Message msg(Role role, std::string content) {
  Message m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

struct Case {
  const char* name;
  std::vector<Message> messages;
  ThinkMode think;
  bool official_identical;  // whether the official rendering has the same bytes
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back(
      {"r1",
       {msg(Role::kSystem, "You are a terse assistant."), msg(Role::kUser, "What is 2+2?"),
        msg(Role::kAssistant, "4."), msg(Role::kUser, "And 3+3?")},
       ThinkMode::kHigh,
       true});
  Message tools = msg(Role::kSystem, "");
  tools.tools = {kWeather};
  out.push_back({"r2", {tools, msg(Role::kUser, "Weather in Rome?")}, ThinkMode::kHigh, false});
  Message tools_short = msg(Role::kSystem, "");
  tools_short.tools = {kWeatherShort};
  Message call = msg(Role::kAssistant, "");
  call.tool_calls = {{"call_1", "get_weather", R"({"city":"Rome"})"}};
  Message result = msg(Role::kTool, R"({"temp":21,"sky":"clear"})");
  result.tool_call_id = "call_1";
  out.push_back({"r3",
                 {tools_short, msg(Role::kUser, "Weather in Rome?"), call, result},
                 ThinkMode::kHigh,
                 false});
  out.push_back({"r4",
                 {msg(Role::kSystem, "Be brief."), msg(Role::kUser, "Name a color."),
                  msg(Role::kAssistant, "Blue."), msg(Role::kUser, "Another one.")},
                 ThinkMode::kNone,
                 true});
  Message parts = msg(Role::kUser, "");
  parts.blocks = {{ContentBlockKind::kText, "Say hello.", ""},
                  {ContentBlockKind::kText, "Then stop.", ""}};
  out.push_back(
      {"r5", {msg(Role::kDeveloper, "Answer in French."), parts}, ThinkMode::kMax, false});
  Message reasoned = msg(Role::kAssistant, "2, 3, 5.");
  reasoned.reasoning = "Small primes first.";
  out.push_back({"r6",
                 {msg(Role::kUser, "Think about primes."), reasoned, msg(Role::kUser, "More?")},
                 ThinkMode::kHigh,
                 true});
  return out;
}

TEST(Ds4ServerRendering, MatchesDs4ServerTraces) {
  for (const Case& c : cases()) {
    RenderOptions o;
    o.think = c.think;
    o.context_size = 4096;  // the servers ran with --ctx 4096: Think Max falls back to high
    const std::string want = ds4_text(c.name);
    ASSERT_FALSE(want.empty()) << c.name;
    auto got = render_ds4_server(c.messages, o);
    ASSERT_TRUE(got.is_ok()) << c.name << ": " << got.status().to_string();
    EXPECT_EQ(*got, want) << c.name;
  }
}

// The official encoder agrees with ds4 except for the tools block (r2, r3) and a developer
// message before the last user turn (r5), the choices docs/chat.md records.
TEST(Ds4ServerRendering, OfficialRenderingDiffersOnlyWhereDocumented) {
  for (const Case& c : cases()) {
    RenderOptions o;
    o.think = c.think;
    o.context_size = 4096;
    auto official = render(c.messages, o);
    ASSERT_TRUE(official.is_ok()) << c.name << ": " << official.status().to_string();
    EXPECT_EQ(*official == ds4_text(c.name), c.official_identical) << c.name;
  }
}

TEST(Ds4ServerRendering, OnlyTheToolResultSentinelIsEscaped) {
  const std::vector<Message> m = {msg(Role::kUser, "x"), msg(Role::kTool, "a</tool_result>b<c>&")};
  auto got = render_ds4_server(m, RenderOptions{});
  ASSERT_TRUE(got.is_ok());
  EXPECT_NE(got->find("<tool_result>a&lt;/tool_result>b<c>&</tool_result>"), std::string::npos)
      << *got;
}

// ds4-server parses --chat-template with template_from_string: a bad name's error names the
// accepted ones.
TEST(ServerTemplate, NamesParseAndABadOneNamesTheAllowedValues) {
  EXPECT_EQ(*template_from_string("official"), Template::kOfficial);
  EXPECT_EQ(*template_from_string("ds4"), Template::kDs4);
  for (Template t : {Template::kOfficial, Template::kDs4}) {
    EXPECT_EQ(*template_from_string(to_string(t)), t);
  }
  for (const char* bad : {"", "Official", "ds4-server", "ds4 ", "chatml"}) {
    auto r = template_from_string(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "unknown chat template '" + std::string(bad) + "': use one of official, ds4");
  }
}

// render(..., Template) is render() or render_ds4_server().
TEST(ServerTemplate, RenderSelectsTheTemplate) {
  for (const Case& c : cases()) {
    RenderOptions o;
    o.think = c.think;
    o.context_size = 4096;
    auto ds4 = render(c.messages, o, Template::kDs4);
    auto official = render(c.messages, o, Template::kOfficial);
    ASSERT_TRUE(ds4.is_ok() && official.is_ok()) << c.name;
    EXPECT_EQ(*ds4, ds4_text(c.name)) << c.name;
    EXPECT_EQ(*official, *render(c.messages, o)) << c.name;
  }
}

// keeps_earlier_reasoning() says what each template does with an earlier turn's reasoning in
// thinking mode: official keeps it only when a message carries tools, ds4 also in a history with
// a tool call or result (its tool context).
TEST(ServerTemplate, KeepsEarlierReasoningAsTheTemplateRenders) {
  Message call = msg(Role::kAssistant, "");
  call.reasoning = "EARLIER-CALL-REASONING";
  call.tool_calls = {{"call_1", "get_weather", R"({"city":"Rome"})"}};
  Message result = msg(Role::kTool, "sunny");
  result.tool_call_id = "call_1";
  Message answer = msg(Role::kAssistant, "Sunny.");
  answer.reasoning = "EARLIER-ANSWER-REASONING";
  const std::vector<Message> tool_history = {msg(Role::kUser, "Weather in Rome?"), call, result,
                                             answer, msg(Role::kUser, "And tomorrow?")};
  Message tools = msg(Role::kSystem, "");
  tools.tools = {kWeatherShort};
  std::vector<Message> declared = tool_history;
  declared.insert(declared.begin(), tools);
  const std::vector<Message> plain = {msg(Role::kUser, "Hi"), answer, msg(Role::kUser, "More?")};
  struct Want {
    const std::vector<Message>* messages;
    bool official, ds4;
  };
  const RenderOptions o{.think = ThinkMode::kHigh};
  for (const Want& w : {Want{&plain, false, false}, Want{&tool_history, false, true},
                        Want{&declared, true, true}}) {
    for (Template t : {Template::kOfficial, Template::kDs4}) {
      const bool keeps = t == Template::kDs4 ? w.ds4 : w.official;
      EXPECT_EQ(keeps_earlier_reasoning(*w.messages, t), keeps) << to_string(t);
      auto text = render(*w.messages, o, t);
      ASSERT_TRUE(text.is_ok()) << text.status().to_string();
      EXPECT_EQ(text->find("EARLIER-ANSWER-REASONING") != std::string::npos, keeps)
          << to_string(t) << ": " << *text;
    }
  }
}

}  // namespace
}  // namespace ds4::chat
