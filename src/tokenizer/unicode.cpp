// src/tokenizer/unicode.cpp: table lookups and UTF-8 decoding for the tokenizer.
#include "tokenizer/unicode.h"

#include <algorithm>
#include <string>

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
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char c = p[i];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len = 0;
  uint32_t v = 0;
  uint32_t min = 0;
  if ((c & 0xe0) == 0xc0) {
    len = 2, v = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3, v = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4, v = c & 0x07, min = 0x10000;
  }
  bool ok = len != 0 && i + len <= s.size();
  for (size_t k = 1; ok && k < len; ++k) {
    ok = (p[i + k] & 0xc0) == 0x80;
    v = (v << 6) | (p[i + k] & 0x3f);
  }
  if (!ok || v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
    *cp = kInvalidBase + c;
    return 1;
  }
  *cp = v;
  return len;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace ds4::tokenizer
