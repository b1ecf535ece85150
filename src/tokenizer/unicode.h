// src/tokenizer/unicode.h: UTF-8 decoding and the character classes the pre-tokenizer needs.
// Owns: classification of code points into the regex classes \p{L} \p{M} \p{N} \p{P} \p{S} and
// \s, from generated tables (unicode_tables.inc), and a lenient UTF-8 decoder.
// Does not own: the split rules themselves (pretokenize.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ds4::tokenizer {

enum class CharClass : uint8_t { kOther, kLetter, kMark, kNumber, kPunct, kSymbol };

struct UnicodeRange {
  uint32_t first;
  uint32_t last;
  CharClass cls;
};

// Code points >= kInvalidBase stand for one byte of invalid UTF-8 (kInvalidBase + byte). They
// belong to no class and are not whitespace, so invalid input is split like an unknown symbol and
// then encoded byte-wise.
inline constexpr uint32_t kInvalidBase = 0x110000;

CharClass char_class(uint32_t cp);
// The JavaScript `\s` set (ECMAScript WhiteSpace + LineTerminator), which the reference tokenizer
// uses; it differs from Unicode's White_Space in U+0085 (not included) and U+FEFF (included).
bool is_space(uint32_t cp);

// Decodes one code point at s[i]. Returns its length in bytes (1..4). A byte that does not start a
// well-formed sequence (bad lead, missing continuation, overlong, surrogate, > U+10FFFF) decodes as
// kInvalidBase + byte with length 1.
size_t decode_utf8(std::string_view s, size_t i, uint32_t* cp);

}  // namespace ds4::tokenizer
