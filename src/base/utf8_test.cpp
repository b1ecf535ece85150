// Protects: the shared UTF-8 rules (RFC 3629) that GGUF key validation, the tokenizer and the chat
// JSON reader rely on.
#include "base/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace ds4::base {
namespace {

TEST(Utf8, AcceptsWellFormedAndRejectsEveryIllFormedClass) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("ascii \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xf8\x88\x80\x80\x80"));
}

TEST(Utf8, EncodeDecodeRoundTripsEveryScalarValue) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x20000 ? 1 : 97)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    append_utf8(cp, &s);
    uint32_t back = 0;
    ASSERT_EQ(decode_utf8(s, 0, &back), s.size()) << cp;
    ASSERT_EQ(back, cp);
  }
}

}  // namespace
}  // namespace ds4::base
