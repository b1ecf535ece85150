// Protects: the bytes of a ds4-agent session file (session_file.h): the record's layout (magic
// line, one JSON line, the transcript as opaque bytes, NUL and newlines included) and its limits
// and types, the KVC container's agent flag and reasons, the token counts that must agree, the
// session id's definition (checked against a digest computed independently of session_id) and
// the title rule.
#include "agent/session_file.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/session_test_util.h"

namespace ds4::agent {
namespace {

using testing::fake_payload;

SessionRecord record(uint32_t tokens = 9) {
  return {.title = "fix the parser",
          .created = testing::kNow,
          .model = testing::kFingerprint,
          .transcript_tokens = tokens,
          .transcript = std::string("<bos>line 1\nline 2\0with a NUL\n", 30)};
}

kv::KvcHeader header(uint32_t tokens = 9) {
  return {.reason = kv::SaveReason::kAgentSession,
          .tokens = tokens,
          .n_ctx = 4096,
          .created = testing::kNow,
          .last_used = testing::kNow + 60};
}

std::string error_of(std::string_view text) {
  auto r = decode_session_record(text);
  return r.is_ok() ? "" : r.status().message();
}

TEST(SessionFile, RecordLayoutAndRoundTrip) {
  auto text = encode_session_record(record());
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  const std::string want_head =
      "ds4-agent-session 1\n{\"created\":1764576000,\"model\":\"deepseek-v4-flash q2 "
      "test-fingerprint\",\"title\":\"fix the parser\",\"transcript_tokens\":9}\n";
  EXPECT_EQ(text->substr(0, want_head.size()), want_head);
  EXPECT_EQ(text->substr(want_head.size()), record().transcript);
  auto back = decode_session_record(*text);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, record());
}

TEST(SessionFile, RecordLimitsAndTypes) {
  const std::string head = "ds4-agent-session 1\n";
  const auto with = [&](const std::string& line) { return error_of(head + line + "\nT"); };
  EXPECT_EQ(
      with(R"({"title":"t","created":1,"model":"m","transcript_tokens":2,"extra":[{"a":1}]})"),
      "");  // unknown keys are ignored
  EXPECT_NE(with(R"({"title":5,"created":1,"model":"m","transcript_tokens":2})").find("\"title\""),
            std::string::npos);
  EXPECT_NE(
      with(R"({"title":"t","created":"1","model":"m","transcript_tokens":2})").find("created"),
      std::string::npos);
  EXPECT_NE(with(R"({"title":"t","created":-1,"model":"m","transcript_tokens":2})").find("created"),
            std::string::npos);
  EXPECT_NE(
      with(R"({"title":"t","created":1.5,"model":"m","transcript_tokens":2})").find("created"),
      std::string::npos);
  EXPECT_NE(with(R"({"title":"t","created":1,"model":null,"transcript_tokens":2})").find("model"),
            std::string::npos);
  EXPECT_NE(with(R"({"title":"t","created":1,"model":"m","transcript_tokens":4294967296})")
                .find("transcript_tokens"),
            std::string::npos);
  EXPECT_NE(with(R"({"title":"t","created":1,"model":"m"})").find("no \"transcript_tokens\""),
            std::string::npos);
  EXPECT_NE(with(R"(["title","t"])").find("not a JSON object"), std::string::npos);
  EXPECT_NE(with(R"({"title":"t",)").find("not valid JSON"), std::string::npos);
  EXPECT_NE(with(std::string(100, '[') + std::string(100, ']')).find("deeper"), std::string::npos);
  const std::string long_title = std::string(kMaxTitleBytes + 1, 'x');
  EXPECT_NE(
      with(R"({"title":")" + long_title + R"(","created":1,"model":"m","transcript_tokens":2})")
          .find("title of 1025 bytes"),
      std::string::npos);
  // The JSON line: at most 64 KiB, ended by a newline; the magic line exactly.
  EXPECT_NE(error_of(head + std::string(kMaxRecordLineBytes + 1, ' ')).find("longer than 64 KiB"),
            std::string::npos);
  EXPECT_NE(error_of(head + "{}").find("not ended"), std::string::npos);
  EXPECT_NE(error_of("ds4-agent-session 2\n{}\n").find("does not start with"), std::string::npos);
  EXPECT_NE(error_of("").find("does not start with"), std::string::npos);
  // Encoding refuses what it could not read back identically.
  SessionRecord r = record();
  r.title = long_title;
  EXPECT_EQ(encode_session_record(r).status().code(), StatusCode::kInvalidArgument);
  r.title = "bad \xff byte";
  EXPECT_EQ(encode_session_record(r).status().code(), StatusCode::kInvalidArgument);
  r = record();
  r.model = std::string(kMaxRecordLineBytes, 'm');
  EXPECT_NE(encode_session_record(r).status().message().find("record line"), std::string::npos);
}

TEST(SessionFile, FileRoundTripSetsTheAgentFlag) {
  const std::vector<uint8_t> payload = fake_payload(9);
  kv::KvcHeader h = header();
  h.flags = kv::kKvcToolMapFlag;  // never kept: an agent file has no tool-id map
  auto f = encode_session_file(h, record(), payload);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)[6], kv::kKvcAgentFlag);
  EXPECT_EQ((*f)[5], 5);
  auto v = decode_session_file(*f);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->record, record());
  EXPECT_EQ(v->header.tokens, 9u);
  EXPECT_EQ(v->header.n_ctx, 4096u);
  EXPECT_EQ(v->header.last_used, testing::kNow + 60);
  EXPECT_EQ(std::vector<uint8_t>(v->payload.begin(), v->payload.end()), payload);
  // Stripped: no payload, the rest kept.
  auto s = encode_session_file(header(), record(), {});
  ASSERT_TRUE(s.is_ok());
  auto sv = decode_session_file(*s);
  ASSERT_TRUE(sv.is_ok()) << sv.status().to_string();
  EXPECT_TRUE(sv->payload.empty());
  EXPECT_EQ(sv->record.transcript, record().transcript);
}

TEST(SessionFile, CountsAndKindsMustAgree) {
  const auto error = [](const kv::KvcHeader& h, const SessionRecord& r,
                        const std::vector<uint8_t>& p) {
    auto f = encode_session_file(h, r, p);
    if (!f.is_ok()) return f.status().message();
    auto v = decode_session_file(*f);
    return v.is_ok() ? std::string() : v.status().message();
  };
  EXPECT_EQ(error(header(9), record(9), fake_payload(9)), "");
  EXPECT_NE(error(header(9), record(9), fake_payload(8)).find("payload holds 8 tokens"),
            std::string::npos);
  EXPECT_NE(error(header(9), record(10), fake_payload(9)).find("record counts 10"),
            std::string::npos);
  EXPECT_NE(error(header(9), record(9), {1, 2, 3}).find("truncated"), std::string::npos);
  kv::KvcHeader cold = header();
  cold.reason = kv::SaveReason::kCold;
  EXPECT_NE(error(cold, record(), fake_payload(9)).find("save reason 1"), std::string::npos);
  // A KV cache file (flag 3 clear) with a perfect record is still not an agent file.
  auto text = encode_session_record(record());
  const std::vector<uint8_t> cache = kv::encode_kvc(header(), *text, fake_payload(9), {});
  EXPECT_NE(decode_session_file(cache).status().message().find("flag 3 clear"), std::string::npos);
}

TEST(SessionFile, IdIsSha1OfTitleAndLittleEndianCreation) {
  // Digests from sha1sum: printf 'hello\x00\x4b\x2d\x69\x00\x00\x00\x00' | sha1sum.
  EXPECT_EQ(session_id("hello", 1764576000), "1a619bb505f3a6436cc65be5f2a930c25d51f114");
  EXPECT_EQ(session_id("", 0), "05fe405753166f125559e7c9ac558654f107c7e9");  // SHA-1 of 8 zeros
  EXPECT_NE(session_id("hello", 1764576001), session_id("hello", 1764576000));
  EXPECT_EQ(session_id("hello", 1).size(), 40u);
}

TEST(SessionFile, TitleFromTheFirstPrompt) {
  EXPECT_EQ(make_title("  fix\tthe \n\n parser\r\n"), "fix the parser");
  EXPECT_EQ(make_title(" \t\n "), "untitled");
  EXPECT_EQ(make_title(""), "untitled");
  EXPECT_EQ(make_title("a\x1b[31mred"), "a [31mred");  // control characters are spaces
  EXPECT_EQ(make_title("bad \xff byte"), "bad \xef\xbf\xbd byte");
  EXPECT_EQ(make_title(std::string(300, 'x')), std::string(200, 'x'));
  // Cut at a character boundary: 199 ASCII bytes, then a 2-byte character that would end at 201.
  const std::string accented = std::string(199, 'x') + "\xc3\xa9" + "tail";
  EXPECT_EQ(make_title(accented), std::string(199, 'x'));
  const std::string euro = std::string(197, 'x') + "\xe2\x82\xac" + "tail";  // ends at 200
  EXPECT_EQ(make_title(euro), std::string(197, 'x') + "\xe2\x82\xac");
  // Trailing whitespace before the cut is not kept.
  EXPECT_EQ(make_title(std::string(199, 'x') + "  yy"), std::string(199, 'x'));
}

}  // namespace
}  // namespace ds4::agent
