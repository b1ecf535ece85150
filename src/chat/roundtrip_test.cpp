// src/chat/roundtrip_test.cpp: encode -> parse gives back the same tool calls, for seeded random
// arguments, in random chunkings.
// Protects: the DSML value escape and the parser agreeing on every string (quotes, newlines, "<",
// "&", the closing tag and its variants, the escape itself, unicode, control characters) and on
// every JSON type (nested arrays/objects, big and float numbers, booleans, null).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat/json.h"
#include "chat/parser_test_util.h"
#include "ds4/chat.h"

namespace ds4::chat {
namespace {

using testing::coalesce;
using testing::parse_in_chunks;
using testing::parse_whole;

const char* const kStringPieces[] = {
    "plain",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\"quoted\"",
    "\\",
    "<",
    ">",
    "&",
    "&&",
    "&lt;",
    "&amp;",
    "&amp;lt;",
    "</",
    "</｜DSML｜parameter>",
    "</｜DSML｜invoke>",
    "</｜DSML｜tool_calls>",
    "&lt;/｜DSML｜parameter>",
    "&amp;lt;/｜DSML｜parameter>",
    "</|DSML|parameter>",
    "</｜｜DSML｜｜parameter>",
    "</DSML｜invoke>",
    "<｜DSML｜parameter name=\"x\" string=\"true\">",
    "</think>",
    "<｜end▁of▁sentence｜>",
    "é",
    "日本語",
    "😀",
    "\xE2\x80\xA8",
    "\x01",
    "\x7f",
    "{}",
    "[1]",
    "｜",
    "|",
    "DSML",
};
const char* const kKeys[] = {"path", "content",   "n",      "x_1",
                             "城市", "a\"b",      "k&amp;", "</｜DSML｜parameter>",
                             "",     "with space"};
const char* const kNumbers[] = {"0",     "-7",    "42",    "123456789012345678901234567890",
                                "1.5",   "-0.25", "1e+20", "3.141592653589793",
                                "1e-07", "100.0"};

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  std::string string_value() {
    std::string s;
    const int n = pick(5);
    for (int i = 0; i < n; ++i) s += kStringPieces[pick(std::size(kStringPieces))];
    return s;
  }

  json::Value value(int depth) {
    json::Value v;
    switch (pick(depth >= 3 ? 4 : 6)) {
      case 0:
        v.type = json::Type::kString;
        v.text = string_value();
        break;
      case 1:
        v.type = json::Type::kNumber;
        v.text = kNumbers[pick(std::size(kNumbers))];
        v.is_integer = v.text.find_first_of(".e") == std::string::npos;
        break;
      case 2:
        v.type = json::Type::kBool;
        v.boolean = pick(2) == 1;
        break;
      case 3: break;  // null
      case 4:
        v.type = json::Type::kArray;
        for (int i = pick(4); i > 0; --i) v.items.push_back(value(depth + 1));
        break;
      default: v = object(depth + 1); break;
    }
    return v;
  }

  json::Value object(int depth) {
    json::Value v;
    v.type = json::Type::kObject;
    for (int i = pick(5); i > 0; --i) {
      std::string key = kKeys[pick(std::size(kKeys))];
      bool dup = false;
      for (const auto& m : v.members) dup = dup || m.key == key;
      if (!dup) v.members.push_back({key, pick(3) == 0 ? value(depth) : string_scalar()});
    }
    return v;
  }

  ToolCall call() {
    static const char* const kNames[] = {"get_weather", "write_file", "a&b", "x\"y", "工具"};
    ToolCall c;
    c.name = kNames[pick(std::size(kNames))];
    if (pick(10) == 0) {
      c.arguments_json = pick(2) ? "not json </｜DSML｜parameter>" : "[1, 2]";  // wrapped
    } else {
      c.arguments_json = json::dump(object(0));
    }
    return c;
  }

  int pick(size_t n) { return static_cast<int>(rng_() % n); }
  std::mt19937& rng() { return rng_; }

 private:
  json::Value string_scalar() {
    json::Value v;
    v.type = json::Type::kString;
    v.text = string_value();
    return v;
  }

  std::mt19937 rng_;
};

// What the parser must return for a call's arguments: the object re-written canonically, or the
// {"arguments": <text>} wrapper the encoder applied.
std::string expected_arguments(const ToolCall& c) {
  auto parsed = json::parse(c.arguments_json);
  if (parsed.is_ok() && parsed->is_object()) return json::dump(parsed.value());
  std::string out = "{\"arguments\": ";
  json::append_quoted(c.arguments_json, &out);
  return out + "}";
}

TEST(ChatRoundTrip, EncodeThenParseGivesTheSameCalls) {
  Generator gen(20240731);
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<ToolCall> calls;
    for (int i = 1 + gen.pick(3); i > 0; --i) calls.push_back(gen.call());
    const bool thinking = gen.pick(2) == 1;
    const std::string output = (thinking ? "plan it</think>" : "") + std::string("Working.") +
                               encode_tool_calls(calls) +
                               (gen.pick(2) ? "<｜end▁of▁sentence｜>" : "");
    const OutputParserOptions options{.thinking = thinking, .parse_tool_calls = true};

    const ParsedOutput parsed = parse_output(output, options);
    ASSERT_EQ(parsed.tool_calls.size(), calls.size()) << output;
    EXPECT_EQ(parsed.content, "Working.");
    EXPECT_EQ(parsed.stats.repairs, 0) << output;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(parsed.tool_calls[i].name, calls[i].name);
      EXPECT_EQ(parsed.tool_calls[i].arguments_json, expected_arguments(calls[i])) << output;
      EXPECT_TRUE(json::parse(parsed.tool_calls[i].arguments_json).is_ok());
    }
    // Re-encoding what was parsed reproduces the same DSML (objects are already canonical).
    std::vector<ToolCall> again = parsed.tool_calls;
    std::vector<ToolCall> canonical = calls;
    for (ToolCall& c : canonical) c.arguments_json = expected_arguments(c);
    EXPECT_EQ(encode_tool_calls(again), encode_tool_calls(canonical));

    // Any chunking gives the same events.
    const auto whole = coalesce(parse_whole(output, options));
    for (int trial = 0; trial < 3; ++trial) {
      ASSERT_EQ(coalesce(parse_in_chunks(output, testing::random_chunks(output.size(), &gen.rng()),
                                         options)),
                whole)
          << output;
    }
  }
}

TEST(ChatRoundTrip, RenderedAssistantTurnParsesBack) {
  // The assistant part of a rendered prompt (after the generation prompt) is what the model
  // would have produced; parsing it returns the message.
  Message user;
  user.role = Role::kUser;
  user.content = "q";
  Message a;
  a.role = Role::kAssistant;
  a.reasoning = "step 1\nstep 2";
  a.content = "Here you go.";
  a.tool_calls = {{"c1", "write_file", R"({"path":"x.html","body":"<p>a &amp; b</p>\n"})"}};
  RenderOptions o;
  o.think = ThinkMode::kHigh;
  const std::string prompt = render(std::vector<Message>{user, a}, o).value();
  const std::string head = std::string(kBos) + "<｜User｜>q<｜Assistant｜><think>";
  ASSERT_EQ(prompt.substr(0, head.size()), head);
  const ParsedOutput p = parse_output(prompt.substr(head.size()), {.thinking = true});
  EXPECT_EQ(p.reasoning, a.reasoning);
  EXPECT_EQ(p.content, a.content);
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].arguments_json, R"({"path": "x.html", "body": "<p>a &amp; b</p>\n"})");
  EXPECT_TRUE(p.stats.eos);
}

}  // namespace
}  // namespace ds4::chat
