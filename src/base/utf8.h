// src/base/utf8.h: UTF-8 encoding, strict decoding and validation, shared by every module that
// handles text (GGUF keys, tokenizer, chat JSON).
// Owns: the well-formedness rules (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
// Does not own: lenient policies built on top (the tokenizer's byte-wise fallback, stream
// decoders that hold incomplete tails).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds4::base {

// Appends the UTF-8 form of `cp` (any value up to U+10FFFF; a surrogate gets the 3-byte form,
// which callers use deliberately for WTF-8 round trips).
void append_utf8(uint32_t cp, std::string* out);

// Decodes the well-formed character at s[i] into *cp and returns its length (1..4), or returns 0
// when the bytes at i do not start a well-formed character.
size_t decode_utf8(std::string_view s, size_t i, uint32_t* cp);

bool is_valid_utf8(std::string_view s);

}  // namespace ds4::base
