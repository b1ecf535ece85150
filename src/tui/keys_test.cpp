// Protects: ds4-agent's key input (features.md §5.7): every key the editor and the app bind, in
// whole or split reads, bracketed paste, and that bytes of sequences never leak into text.
#include "tui/keys.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/utf8.h"

namespace ds4::tui {
namespace {

std::string names(const std::vector<Key>& keys) {
  std::string s;
  for (const Key& k : keys) s += (s.empty() ? "" : " ") + describe(k);
  return s;
}

std::string decode(std::string_view bytes) {
  KeyDecoder d;
  std::vector<Key> keys = d.feed(bytes);
  for (Key& k : d.flush()) keys.push_back(std::move(k));
  return names(keys);
}

// Feeds one byte at a time: the result must match a whole read.
std::string decode_bytewise(std::string_view bytes) {
  KeyDecoder d;
  std::vector<Key> keys;
  for (char c : bytes) {
    for (Key& k : d.feed(std::string_view(&c, 1))) {
      if (!keys.empty() && k.type == KeyType::kText && keys.back().type == KeyType::kText) {
        keys.back().text += k.text;
      } else {
        keys.push_back(std::move(k));
      }
    }
  }
  for (Key& k : d.flush()) keys.push_back(std::move(k));
  return names(keys);
}

TEST(Keys, ControlKeysAndText) {
  EXPECT_EQ(decode("ab c"), "Text(\"ab c\")");
  EXPECT_EQ(decode("a\rb\nc\r\n"), "Text(\"a\") Enter Text(\"b\") Enter Text(\"c\") Enter");
  EXPECT_EQ(decode("\r\r"), "Enter Enter");
  EXPECT_EQ(decode("\x7f\x08\t"), "Backspace Backspace Tab");
  EXPECT_EQ(decode("\x01\x03\x04\x05\x0b\x0c\x15\x17\x18"),
            "CtrlA CtrlC CtrlD CtrlE CtrlK CtrlL CtrlU CtrlW CtrlX");
  EXPECT_EQ(decode(std::string("\x02\x00", 2)), "Unknown Unknown");
}

TEST(Keys, CsiAndSs3Sequences) {
  EXPECT_EQ(decode("\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"), "Up Down Right Left Home End");
  EXPECT_EQ(decode("\x1b[1~\x1b[7~\x1b[4~\x1b[8~\x1b[3~"), "Home Home End End Delete");
  EXPECT_EQ(decode("\x1bOH\x1bOF\x1bOA"), "Home End Up");
  EXPECT_EQ(decode("\x1b[1;5C\x1b[1;3D\x1b[3;2~"), "Right Left Delete");  // modifiers ignored
}

TEST(Keys, UnknownSequencesAreConsumedWhole) {
  EXPECT_EQ(decode("\x1b[15~x"), "Unknown Text(\"x\")");       // F5
  EXPECT_EQ(decode("\x1b[<0;10;5Mx"), "Unknown Text(\"x\")");  // SGR mouse
  EXPECT_EQ(decode("\x1b[2$~x"), "Unknown Text(\"x\")");       // intermediate byte
  EXPECT_EQ(decode("\x1bOPx"), "Unknown Text(\"x\")");         // F1
  EXPECT_EQ(decode("\x1b[Z"), "Unknown");                      // shift+tab
  EXPECT_EQ(decode("\x1b"
                   "b"),
            "Unknown");                               // alt+b
  EXPECT_EQ(decode("\x1b[12\x03"), "Unknown CtrlC");  // malformed: the control survives
  EXPECT_EQ(decode("\x1b[" + std::string(40, '1') + "~z"), "Unknown Text(\"z\")");
}

TEST(Keys, SplitReadsGiveTheSameKeys) {
  for (const char* input :
       {"\x1b[1;5C", "\x1b[3~", "\x1bOH", "h\xc3\xa9llo \xe4\xb8\xad \xf0\x9f\x90\x8b", "a\r\nb",
        "\x1b[200~x\r\ny\x1b[201~z", "\x1b[15~q"}) {
    EXPECT_EQ(decode_bytewise(input), decode(input)) << input;
  }
  KeyDecoder d;
  EXPECT_TRUE(d.feed("\x1b[").empty());
  EXPECT_TRUE(d.pending());
  EXPECT_EQ(names(d.feed("D")), "Left");
  EXPECT_FALSE(d.pending());
  EXPECT_TRUE(d.feed("\xe4\xb8").empty());
  EXPECT_EQ(names(d.feed("\xad")), "Text(\"\xe4\xb8\xad\")");
}

TEST(Keys, LoneEscapeWaitsForFlush) {
  KeyDecoder d;
  EXPECT_TRUE(d.feed("\x1b").empty());
  EXPECT_TRUE(d.pending());
  EXPECT_EQ(names(d.flush()), "Esc");
  EXPECT_FALSE(d.pending());
  EXPECT_EQ(decode("\x1b\x1b[A"), "Esc Up");
  EXPECT_EQ(decode("\x1b\r"), "Esc Enter");
  // An incomplete sequence at the timeout is one unknown key, an incomplete character U+FFFD.
  EXPECT_EQ(decode("\x1b[1;"), "Unknown");
  EXPECT_EQ(decode("\x1bO"), "Unknown");
  EXPECT_EQ(decode("a\xe4\xb8"), "Text(\"a\") Text(\"\xef\xbf\xbd\")");
}

TEST(Keys, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(decode("a\xff"
                   "b"),
            "Text(\"a\xef\xbf\xbd"
            "b\")");
  EXPECT_EQ(decode("\xc0\xaf"), "Text(\"\xef\xbf\xbd\xef\xbf\xbd\")");  // overlong
  EXPECT_EQ(decode("\xed\xa0\x80"
                   "x"),  // surrogate
            "Text(\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx\")");
  EXPECT_EQ(decode("\xe4\xb8x"), "Text(\"\xef\xbf\xbd\xef\xbf\xbdx\")");  // cut short
  EXPECT_EQ(decode("\xc2\x85"), "Text(\"\xef\xbf\xbd\")");                // C1 control
}

TEST(Keys, BracketedPasteIsOneKey) {
  EXPECT_EQ(decode("\x1b[200~line 1\r\nline 2\rline 3\n\x1b[201~"),
            "Paste(\"line 1\nline 2\nline 3\n\")");
  // Keys inside a paste are text; escape bytes and other controls are dropped, tabs kept.
  EXPECT_EQ(decode("\x1b[200~a\x1b[Ab\x03\tc\x1b[201~\r"), "Paste(\"a[Ab\tc\") Enter");
  EXPECT_EQ(decode("\x1b[200~\x1b[201~x"), "Text(\"x\")");  // empty paste: no key
  // The end marker split across reads, with a CRLF split too.
  KeyDecoder d;
  EXPECT_TRUE(d.feed("\x1b[200~ab\r").empty());
  EXPECT_TRUE(d.in_paste());
  EXPECT_TRUE(d.feed("\ncd\x1b[20").empty());
  EXPECT_TRUE(d.flush().empty());  // a quiet pause does not end a paste
  EXPECT_EQ(names(d.feed("1~\x1b[D")), "Paste(\"ab\ncd\") Left");
  EXPECT_FALSE(d.in_paste());
}

TEST(Keys, PasteIsBoundedAndSanitised) {
  KeyDecoder d;
  std::vector<Key> keys = d.feed("\x1b[200~");
  const std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 20; ++i) {
    for (Key& k : d.feed(chunk)) keys.push_back(std::move(k));
  }
  for (Key& k : d.feed("\xff\x1b[201~")) keys.push_back(std::move(k));
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].type, KeyType::kPaste);
  EXPECT_EQ(keys[0].text.size(), KeyDecoder::kMaxPaste);
  EXPECT_EQ(decode("\x1b[200~\xe4\xb8\xad\xff\x1b[201~"), "Paste(\"\xe4\xb8\xad\xef\xbf\xbd\")");
}

// Random bytes from the alphabet of sequences, in random chunks: text keys are always well-formed
// UTF-8 without control characters, and the chunking never changes the keys.
TEST(Keys, RandomInputNeverLeaksBytesAndIgnoresChunking) {
  const std::string alphabet =
      std::string("\x1b[O0123;~ABCDHFxy\r\n\x7f\x03\xc3\xa9\xe4\xb8\xad\xff") +
      std::string(1, '\0');
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::string input;
    const int n = static_cast<int>(rng() % 64);
    for (int i = 0; i < n; ++i) input += alphabet[rng() % alphabet.size()];
    if (rng() % 4 == 0) input.insert(rng() % (input.size() + 1), "\x1b[200~");
    KeyDecoder whole_decoder, chunk_decoder;
    std::vector<Key> whole = whole_decoder.feed(input);
    std::vector<Key> chunked;
    for (size_t i = 0; i < input.size();) {
      const size_t len = 1 + rng() % 5;
      for (Key& k : chunk_decoder.feed(std::string_view(input).substr(i, len))) {
        chunked.push_back(std::move(k));
      }
      i += len;
    }
    EXPECT_EQ(whole_decoder.in_paste(), chunk_decoder.in_paste());
    for (Key& k : whole_decoder.flush()) whole.push_back(std::move(k));
    for (Key& k : chunk_decoder.flush()) chunked.push_back(std::move(k));
    // Compare with adjacent text keys merged (chunking may split a run of text).
    auto merged = [](const std::vector<Key>& keys) {
      std::string out;
      for (const Key& k : keys) {
        if (k.type == KeyType::kText) {
          EXPECT_TRUE(base::is_valid_utf8(k.text));
          for (char c : k.text) EXPECT_GE(static_cast<unsigned char>(c), 0x20);
          out += k.text;
        } else {
          out += "<" + describe(k) + ">";
        }
      }
      return out;
    };
    EXPECT_EQ(merged(whole), merged(chunked)) << testing::PrintToString(input);
  }
}

}  // namespace
}  // namespace ds4::tui
