// Protects: the column counts the footer, the prompt row and the output cursor tracking rely on
// (a wrong width makes the footer wrap or the streamed line land in the wrong column).
#include "tui/width.h"

#include <gtest/gtest.h>

namespace ds4::tui {
namespace {

TEST(Width, CountsNarrowWideAndZeroWidthCharacters) {
  EXPECT_EQ(display_width(""), 0);
  EXPECT_EQ(display_width("abc"), 3);
  EXPECT_EQ(display_width("\xc3\xa9"), 1);                  // é
  EXPECT_EQ(display_width("e\xcc\x81"), 1);                 // e + combining acute
  EXPECT_EQ(display_width("\xe4\xb8\xad\xe6\x96\x87"), 4);  // 中文
  EXPECT_EQ(display_width("\xf0\x9f\x90\x8b"), 2);          // 🐋
  EXPECT_EQ(display_width("\xe2\x9a\xa1"), 2);              // ⚡
  EXPECT_EQ(display_width("\xe2\x9d\x84"), 1);              // ❄ alone
  EXPECT_EQ(display_width("\xe2\x9d\x84\xef\xb8\x8f"), 2);  // ❄️ (emoji presentation)
  EXPECT_EQ(display_width("\xe2\x96\xb6\xc2\xb7"), 2);      // ▶·
  EXPECT_EQ(display_width("\xef\xbc\xa1"), 2);              // fullwidth A
  EXPECT_EQ(display_width("\xea\xb0\x80"), 2);              // 가
  EXPECT_EQ(display_width("a\xff"
                          "b"),
            3);                                        // invalid byte: one cell
  EXPECT_EQ(display_width("\x1b[1;35mhi\x1b[0m"), 2);  // CSI: no columns
  EXPECT_EQ(char_width('\n'), 0);
  EXPECT_EQ(char_width(0x200D), 0);  // zero-width joiner
}

TEST(Width, ClipsAtCharacterBoundariesAndKeepsEscapes) {
  EXPECT_EQ(clip_to_width("hello", 3), "hel");
  EXPECT_EQ(clip_to_width("hello", 10), "hello");
  EXPECT_EQ(clip_to_width("hello", 0), "");
  EXPECT_EQ(clip_to_width("\xe4\xb8\xad\xe6\x96\x87", 3), "\xe4\xb8\xad");  // no half of 文
  EXPECT_EQ(clip_to_width("ae\xcc\x81x", 2), "ae\xcc\x81");  // the mark stays with its base
  EXPECT_EQ(clip_to_width("\x1b[35mabc\x1b[0m", 2), "\x1b[35mab");
  EXPECT_EQ(clip_to_width("\x1b[35mab\x1b[0m", 2), "\x1b[35mab\x1b[0m");
}

TEST(Width, CsiLengthNeedsAFinalByte) {
  EXPECT_EQ(csi_length("\x1b[1;5C", 0), 6u);
  EXPECT_EQ(csi_length("\x1b[1;5", 0), 0u);
  EXPECT_EQ(csi_length("x\x1b[m", 1), 3u);
  EXPECT_EQ(csi_length("\x1bO", 0), 0u);
}

}  // namespace
}  // namespace ds4::tui
