// src/chat/dsml_test.cpp: DSML encoding bytes, the value escapes and the tag grammar.
// Protects: tool-call history rendering exactly as chat-format.md "Tool calls block"; the escape
// that lets any string value round-trip (docs/chat.md); which malformed tag spellings the parser
// will accept (dsml.h grammar) and when it must keep holding bytes back.
#include "chat/dsml.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ds4/chat.h"

namespace ds4::chat {
namespace {

using dsml::Match;
using dsml::tag_bit;
using dsml::TagName;

std::string escape(std::string_view raw) {
  std::string out;
  dsml::append_escaped_string_value(raw, &out);
  return out;
}

TEST(ChatDsml, EncodesOneCallCanonically) {
  const std::vector<ToolCall> calls = {
      {"id1", "write_file",
       R"({"path":"a \"b\".txt","body":"line1\nline2 <tag> & ü","mode":420,"opts":{"x":[true,null,1.5]}})"}};
  EXPECT_EQ(encode_tool_calls(calls),
            "\n\n<｜DSML｜tool_calls>\n"
            "<｜DSML｜invoke name=\"write_file\">\n"
            "<｜DSML｜parameter name=\"path\" string=\"true\">a \"b\".txt</｜DSML｜parameter>\n"
            "<｜DSML｜parameter name=\"body\" string=\"true\">line1\nline2 <tag> & "
            "ü</｜DSML｜parameter>\n"
            "<｜DSML｜parameter name=\"mode\" string=\"false\">420</｜DSML｜parameter>\n"
            "<｜DSML｜parameter name=\"opts\" string=\"false\">{\"x\": [true, null, "
            "1.5]}</｜DSML｜parameter>\n"
            "</｜DSML｜invoke>\n"
            "</｜DSML｜tool_calls>");
  EXPECT_EQ(encode_tool_calls({}), "");
}

TEST(ChatDsml, NonAsciiStaysRawInJsonValues) {
  EXPECT_EQ(encode_tool_calls(std::vector<ToolCall>{{"", "f", R"({"v":["日本","\u00e9"]})"}}),
            "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n"
            "<｜DSML｜parameter name=\"v\" string=\"false\">[\"日本\", \"é\"]</｜DSML｜parameter>\n"
            "</｜DSML｜invoke>\n</｜DSML｜tool_calls>");
}

TEST(ChatDsml, StringEscapeTouchesOnlyCloserLookAlikes) {
  // Ordinary strings, entity-looking text included, are written as is.
  for (const char* s : {"a &lt; b && c &amp; d", "</think>", "</tool_result>", "<｜DSML｜invoke",
                        "</｜DSM", "&lt;/DSMLx", ""}) {
    EXPECT_EQ(escape(s), s) << s;
  }
  EXPECT_EQ(escape("x</｜DSML｜parameter>y"), "x&lt;/｜DSML｜parameter>y");
  EXPECT_EQ(escape("</|DSML|invoke>"), "&lt;/|DSML|invoke>");
  EXPECT_EQ(escape("</DSML｜tool_calls>"), "&lt;/DSML｜tool_calls>");
  EXPECT_EQ(escape("</｜｜DSML｜｜parameter>"), "&lt;/｜｜DSML｜｜parameter>");
  // Text that already looks like the escape gains one "amp;" so the decoder can tell them apart.
  EXPECT_EQ(escape("&lt;/｜DSML｜parameter>"), "&amp;lt;/｜DSML｜parameter>");
  EXPECT_EQ(escape("&amp;amp;lt;/|DSML|"), "&amp;amp;amp;lt;/|DSML|");
}

TEST(ChatDsml, StringEscapeIsInvertible) {
  for (const char* s :
       {"plain", "</｜DSML｜parameter>", "&lt;/｜DSML｜parameter>", "&amp;lt;/｜DSML｜parameter>",
        "&&lt;</｜DSML｜x&lt;/|DSML|", "a</DSML|b", "&amp;&lt;&gt;", "</</｜DSML｜｜invoke>>"}) {
    EXPECT_EQ(dsml::unescape_string_value(escape(s)), s) << s;
  }
  // ds4's form (only "<" of the closing tag replaced) decodes the same way.
  EXPECT_EQ(dsml::unescape_string_value("&lt;/｜DSML｜parameter>"), "</｜DSML｜parameter>");
}

TEST(ChatDsml, JsonValuesEscapeTheCloserAsUnicode) {
  EXPECT_EQ(
      encode_tool_calls(std::vector<ToolCall>{{"", "f", R"({"v":["</｜DSML｜parameter>"]})"}}),
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n"
      "<｜DSML｜parameter name=\"v\" string=\"false\">[\"\\u003c/｜DSML｜parameter>\"]"
      "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>");
}

TEST(ChatDsml, AttributesAreRawUnlessTheyNeedEntities) {
  std::string out;
  dsml::append_attribute("get_weather", &out);
  EXPECT_EQ(out, "get_weather");
  out.clear();
  dsml::append_attribute("a\"b<c>&d", &out);
  EXPECT_EQ(out, "a&quot;b&lt;c&gt;&amp;d");
  EXPECT_EQ(dsml::decode_attribute(out), "a\"b<c>&d");
  EXPECT_EQ(dsml::decode_attribute("it&apos;s &unknown;"), "it's &unknown;");
}

constexpr dsml::TagMask kAll =
    tag_bit(false, TagName::kToolCalls) | tag_bit(false, TagName::kInvoke) |
    tag_bit(false, TagName::kParameter) | tag_bit(true, TagName::kToolCalls) |
    tag_bit(true, TagName::kInvoke) | tag_bit(true, TagName::kParameter);

TEST(ChatDsml, TagGrammarAcceptsKnownVariants) {
  struct Case {
    const char* text;
    bool closing;
    TagName name;
    size_t length;
    bool canonical;
  };
  const Case cases[] = {
      {"<｜DSML｜tool_calls>", false, TagName::kToolCalls, sizeof("<｜DSML｜tool_calls>") - 1,
       true},
      {"</｜DSML｜parameter>", true, TagName::kParameter, sizeof("</｜DSML｜parameter>") - 1, true},
      {"<｜DSML｜invoke name", false, TagName::kInvoke, sizeof("<｜DSML｜invoke") - 1, true},
      {"<｜｜DSML｜｜invoke\n", false, TagName::kInvoke, sizeof("<｜｜DSML｜｜invoke") - 1, false},
      {"<|DSML|parameter ", false, TagName::kParameter, sizeof("<|DSML|parameter") - 1, false},
      {"<DSML｜tool_calls>", false, TagName::kToolCalls, sizeof("<DSML｜tool_calls>") - 1, false},
      {"</|DSML｜invoke>", true, TagName::kInvoke, sizeof("</|DSML｜invoke>") - 1, false},
  };
  for (const Case& c : cases) {
    const dsml::TagMatch m = dsml::match_tag(c.text, kAll);
    EXPECT_EQ(m.match, Match::kFull) << c.text;
    EXPECT_EQ(m.closing, c.closing) << c.text;
    EXPECT_EQ(m.name, c.name) << c.text;
    EXPECT_EQ(m.length, c.length) << c.text;
    EXPECT_EQ(m.canonical, c.canonical) << c.text;
  }
}

TEST(ChatDsml, TagGrammarPartialAndRejected) {
  for (const char* partial :
       {"<", "</", "<｜", "<\xEF\xBD", "<｜DS", "<｜DSML", "<｜DSML｜", "<｜DSML｜inv",
        "<｜DSML｜invoke", "</｜DSML｜parameter", "<||DSML||"}) {
    EXPECT_EQ(dsml::match_tag(partial, kAll).match, Match::kPartial) << partial;
  }
  for (const char* none :
       {"<a", "<think>", "<｜User｜>", "<｜DSML｜invokes", "<｜DSML｜foo>", "</｜DSML｜parameter >",
        "<｜｜｜DSML｜invoke ", "<｜DSMLinvoke ", "<｜DSML｜tool_calls ", "x"}) {
    EXPECT_EQ(dsml::match_tag(none, kAll).match, Match::kNone) << none;
  }
  // Only accepted tags count: an opener is not a match where only closers are expected.
  const dsml::TagMask closers = tag_bit(true, TagName::kParameter);
  EXPECT_EQ(dsml::match_tag("<｜DSML｜parameter ", closers).match, Match::kNone);
  EXPECT_EQ(dsml::match_tag("</｜DSML｜invoke>", closers).match, Match::kNone);
  EXPECT_EQ(dsml::match_tag("</｜DSML｜in", closers).match, Match::kNone);
}

}  // namespace
}  // namespace ds4::chat
