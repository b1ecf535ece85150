// Protects: character classification and UTF-8 decoding used by the pre-tokenizer.
// The class table was generated from node's Unicode data (the reference tokenizer's regex engine);
// these checks pin well-known code points and the ASCII fast path against the table.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <string>

#include "tokenizer/byte_level.h"

namespace ds4::tokenizer {
namespace {

TEST(Unicode, KnownCodePointsHaveTheirCategories) {
  EXPECT_EQ(char_class('a'), CharClass::kLetter);
  EXPECT_EQ(char_class(0xE9), CharClass::kLetter);     // é
  EXPECT_EQ(char_class(0x4E2D), CharClass::kLetter);   // 中
  EXPECT_EQ(char_class(0x0301), CharClass::kMark);     // combining acute
  EXPECT_EQ(char_class(0x0663), CharClass::kNumber);   // Arabic-Indic three
  EXPECT_EQ(char_class(0x00BD), CharClass::kNumber);   // ½ (No)
  EXPECT_EQ(char_class(0x3002), CharClass::kPunct);    // 。
  EXPECT_EQ(char_class(0x20AC), CharClass::kSymbol);   // €
  EXPECT_EQ(char_class(0x1F600), CharClass::kSymbol);  // 😀
  EXPECT_EQ(char_class(0xFF5C), CharClass::kSymbol);   // ｜ fullwidth vertical line (Sm)
  EXPECT_EQ(char_class(0x2581), CharClass::kSymbol);   // ▁
  EXPECT_EQ(char_class(0x0007), CharClass::kOther);
  EXPECT_EQ(char_class(0xE000), CharClass::kOther);  // private use
  EXPECT_EQ(char_class(0x10FFFF), CharClass::kOther);
}

TEST(Unicode, WhitespaceFollowsJavaScriptRegexSemantics) {
  for (uint32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0xA0u, 0x2028u, 0x3000u, 0xFEFFu})
    EXPECT_TRUE(is_space(c)) << std::hex << c;
  for (uint32_t c : {0x85u, 0x200Bu, 0x1Cu, 0x41u}) EXPECT_FALSE(is_space(c)) << std::hex << c;
}

TEST(Unicode, AsciiFastPathAgreesWithPunctuationAndSymbolSplit) {
  const std::string symbols = "$+<=>^`|~";
  const std::string punct = "!\"#%&'()*,-./:;?@[\\]_{}";
  for (char c : symbols) EXPECT_EQ(char_class(static_cast<uint8_t>(c)), CharClass::kSymbol) << c;
  for (char c : punct) EXPECT_EQ(char_class(static_cast<uint8_t>(c)), CharClass::kPunct) << c;
}

TEST(Unicode, DecoderMarksEveryIllFormedByte) {
  struct Case {
    std::string bytes;
    uint32_t cp;
    size_t len;
  };
  const Case cases[] = {
      {"A", 'A', 1},
      {"\xc3\xa9", 0xE9, 2},
      {"\xe2\x82\xac", 0x20AC, 3},
      {"\xf0\x9f\x98\x80", 0x1F600, 4},
      {"\xc0\xaf", kInvalidBase + 0xC0, 1},          // overlong
      {"\xed\xa0\x80", kInvalidBase + 0xED, 1},      // surrogate
      {"\xf4\x90\x80\x80", kInvalidBase + 0xF4, 1},  // above U+10FFFF
      {"\xe2\x82", kInvalidBase + 0xE2, 1},          // truncated
      {"\x80", kInvalidBase + 0x80, 1},              // lone continuation
      {"\xff", kInvalidBase + 0xFF, 1},
  };
  for (const Case& c : cases) {
    uint32_t cp = 0;
    EXPECT_EQ(decode_utf8(c.bytes, 0, &cp), c.len);
    EXPECT_EQ(cp, c.cp);
  }
}

TEST(ByteLevel, MapsLikeGpt2AndRoundTrips) {
  ByteLevel bl;
  EXPECT_EQ(bl.to_cp(' '), 0x120u);   // Ġ
  EXPECT_EQ(bl.to_cp('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(bl.to_cp('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(bl.to_cp(0xAD), 0x143u);  // the last of the 68 remapped bytes
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(bl.decode(bl.encode(all)), all);
  EXPECT_EQ(bl.encode(" hi\n"), "\xc4\xa0hi\xc4\x8a");
}

}  // namespace
}  // namespace ds4::tokenizer
