// Protects: the hand-written pre-tokenizer's piece boundaries for each regex alternative. The
// expected splits follow from the regexes in tokenizer.json (see pretokenize.h); the differential
// test against the npm tokenizer (oracle_test.cpp) covers the same ground on real text.
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ds4::tokenizer {
namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string_view> pieces;
  pretokenize(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

using V = std::vector<std::string>;

TEST(Pretokenize, DigitsGroupInThrees) {
  EXPECT_EQ(split("1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(split(" 123"), (V{" ", "123"}));
  EXPECT_EQ(split("x1y"), (V{"x", "1", "y"}));
}

TEST(Pretokenize, WordsTakeOneLeadingNonLetter) {
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("    int"), (V{"   ", " int"}));
  EXPECT_EQ(split("\tfoo"), (V{"\tfoo"}));
  EXPECT_EQ(split("caf\xc3\xa9 na\xc3\xafve"), (V{"caf\xc3\xa9", " na\xc3\xafve"}));
  EXPECT_EQ(split("e\xcc\x81t\xc3\xa9"), (V{"e\xcc\x81t\xc3\xa9"}));  // combining mark stays in
}

TEST(Pretokenize, PunctuationBeforeAsciiLetters) {
  EXPECT_EQ(split("don't"), (V{"don", "'t"}));
  EXPECT_EQ(split(".method()"), (V{".method", "()"}));
  EXPECT_EQ(split("a->b"), (V{"a", "->", "b"}));
}

TEST(Pretokenize, PunctuationRunsKeepTrailingNewlines) {
  EXPECT_EQ(split(">;\n"), (V{">;\n"}));
  EXPECT_EQ(split("x = 1;\n\ny"), (V{"x", " =", " ", "1", ";\n\n", "y"}));
  EXPECT_EQ(split(" {}\r\n"), (V{" {}\r\n"}));
}

TEST(Pretokenize, WhitespaceRules) {
  EXPECT_EQ(split("a \n b"), (V{"a", " \n", " b"}));
  EXPECT_EQ(split("a  \n\n  "), (V{"a", "  \n\n", "  "}));
  EXPECT_EQ(split("a   "), (V{"a", "   "}));
  EXPECT_EQ(split("a  !"), (V{"a", " ", " !"}));
}

TEST(Pretokenize, CjkRunsAreSeparatePieces) {
  // 你好 (CJK), 、 (ideographic comma, punct), ｶﾀｶﾅ half-width katakana are letters, not CJK range.
  EXPECT_EQ(split("\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x81world"),
            (V{"\xe4\xbd\xa0\xe5\xa5\xbd", "\xe3\x80\x81", "world"}));
  EXPECT_EQ(split("a\xe3\x81\x82"), (V{"a", "\xe3\x81\x82"}));  // hiragana splits from Latin
}

TEST(Pretokenize, PiecesAlwaysConcatenateToTheInput) {
  const std::string inputs[] = {"",
                                "\xff\xfe",
                                "ab\x80 cd",
                                "\xe2\x82",
                                "  \t\r\n\x0b  x",
                                "\x01\x02"
                                "abc"};
  for (const std::string& in : inputs) {
    std::string joined;
    for (const auto& p : split(in)) {
      EXPECT_FALSE(p.empty());
      joined += p;
    }
    EXPECT_EQ(joined, in);
  }
}

}  // namespace
}  // namespace ds4::tokenizer
