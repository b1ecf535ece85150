// src/tokenizer/unicode.cpp: table lookups and UTF-8 decoding for the tokenizer.
#include "tokenizer/unicode.h"

#include <algorithm>
#include <string>

#include "base/utf8.h"

namespace ds4::tokenizer {
namespace {
#include "tokenizer/unicode_tables.inc"

// ASCII is by far the most common input; classify it without a search.
constexpr CharClass ascii_class(uint32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kNumber;
  // JS/Unicode: $ + < = > ^ ` | ~ are symbols (Sc, Sm, Sk); the other printable ASCII
  // non-alphanumerics are punctuation.
  switch (c) {
    case '$':
    case '+':
    case '<':
    case '=':
    case '>':
    case '^':
    case '`':
    case '|':
    case '~': return CharClass::kSymbol;
    default: break;
  }
  if ((c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '_') ||
      (c >= '{' && c <= '}'))
    return CharClass::kPunct;
  return CharClass::kOther;
}

}  // namespace

CharClass char_class(uint32_t cp) {
  if (cp < 0x80) return ascii_class(cp);
  const UnicodeRange* end = kUnicodeRanges + kUnicodeRangeCount;
  const UnicodeRange* it = std::upper_bound(
      kUnicodeRanges, end, cp, [](uint32_t c, const UnicodeRange& r) { return c < r.first; });
  if (it == kUnicodeRanges) return CharClass::kOther;
  --it;
  return cp <= it->last ? it->cls : CharClass::kOther;
}

bool is_space(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0d);
  return std::binary_search(kWhitespace, kWhitespace + kWhitespaceCount, cp);
}

size_t decode_utf8(std::string_view s, size_t i, uint32_t* cp) {
  const size_t len = base::decode_utf8(s, i, cp);
  if (len != 0) return len;
  *cp = kInvalidBase + static_cast<uint8_t>(s[i]);
  return 1;
}

}  // namespace ds4::tokenizer
