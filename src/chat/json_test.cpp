// src/chat/json_test.cpp: the Python-compatible JSON reader/writer that prompt bytes depend on.
// Protects: tool schemas, response formats and DSML argument values rendering exactly as DeepSeek's
// Python encoder writes them (json.dumps(ensure_ascii=False)). Expected strings were checked
// against CPython's json module.
#include "chat/json.h"

#include <gtest/gtest.h>

#include <string>

namespace ds4::chat::json {
namespace {

std::string redump(std::string_view text) {
  auto v = parse(text);
  EXPECT_TRUE(v.is_ok()) << text << ": " << v.status().to_string();
  return v.is_ok() ? dump(v.value()) : std::string();
}

TEST(ChatJson, DumpUsesPythonSeparatorsAndKeepsOrder) {
  EXPECT_EQ(redump(R"({"z":1,"a":[1,2.5,"x"],"n":null,"t":true,"f":false,"o":{}})"),
            R"({"z": 1, "a": [1, 2.5, "x"], "n": null, "t": true, "f": false, "o": {}})");
  EXPECT_EQ(redump(" [ ] "), "[]");
}

TEST(ChatJson, FloatsFollowPythonRepr) {
  const std::pair<const char*, const char*> cases[] = {
      {"1.0", "1.0"},
      {"1e15", "1000000000000000.0"},
      {"1e16", "1e+16"},
      {"0.0001", "0.0001"},
      {"0.00001", "1e-05"},
      {"1.5e-7", "1.5e-07"},
      {"123.456", "123.456"},
      {"1E400", "Infinity"},
      {"-0.0", "-0.0"},
      {"2.5e-300", "2.5e-300"},
      {"0.1", "0.1"},
      {"1e22", "1e+22"},
      {"12345678.9", "12345678.9"},
      {"-1.25e+17", "-1.25e+17"},
      {"1e-400", "0.0"},
      {"5e-324", "5e-324"},
      {"1.7976931348623157e308", "1.7976931348623157e+308"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(redump(in), want) << in;
}

TEST(ChatJson, IntegersAreExact) {
  EXPECT_EQ(redump("123456789012345678901234567890"), "123456789012345678901234567890");
  EXPECT_EQ(redump("-0"), "0");
  EXPECT_EQ(redump("-17"), "-17");
}

TEST(ChatJson, DuplicateKeysKeepFirstPositionAndLastValue) {
  EXPECT_EQ(redump(R"({"a":1,"b":2,"a":3})"), R"({"a": 3, "b": 2})");
}

TEST(ChatJson, StringsEscapeLikeEnsureAsciiFalse) {
  EXPECT_EQ(redump(R"(["\u001b\n\t\\\"\/\ud83d\ude00é)"
                   "\x7f"
                   R"("])"),
            "[\"\\u001b\\n\\t\\\\\\\"/😀é\x7f\"]");
  // A lone surrogate survives as an escape instead of becoming invalid UTF-8.
  EXPECT_EQ(redump(R"("\ud800x")"), R"("\ud800x")");
  EXPECT_EQ(redump(R"("\udc00\ud800")"), R"("\udc00\ud800")");
}

TEST(ChatJson, AcceptsPythonSpecialNumbers) {
  EXPECT_EQ(redump("[NaN, Infinity, -Infinity]"), "[NaN, Infinity, -Infinity]");
}

TEST(ChatJson, RejectsMalformedInput) {
  for (const char* bad : {"", "[1,]", "{'a':1}", "\"a\nb\"", "[1] x", "01", "1.", "-", "{\"a\"}",
                          "\"\\x\"", "\"\\u12\"", "[", "{\"a\":1,}", "tru"}) {
    EXPECT_FALSE(parse(bad).is_ok()) << bad;
  }
}

TEST(ChatJson, DepthIsBounded) {
  std::string deep(kMaxDepth + 10, '[');
  deep += std::string(kMaxDepth + 10, ']');
  EXPECT_FALSE(parse(deep).is_ok());
  std::string ok(50, '[');
  ok += std::string(50, ']');
  EXPECT_TRUE(parse(ok).is_ok());
}

TEST(ChatJson, TruthinessMatchesPython) {
  for (const char* falsy : {"null", "false", "0", "-0", "0.0", "\"\"", "[]", "{}"}) {
    EXPECT_FALSE(truthy(parse(falsy).value())) << falsy;
  }
  for (const char* t : {"true", "1", "0.5", "\"x\"", "[0]", "{\"a\":0}", "NaN"}) {
    EXPECT_TRUE(truthy(parse(t).value())) << t;
  }
}

}  // namespace
}  // namespace ds4::chat::json
