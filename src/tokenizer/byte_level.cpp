// src/tokenizer/byte_level.cpp: builds the byte-level mapping tables.
#include "tokenizer/byte_level.h"

#include "base/utf8.h"
#include "tokenizer/unicode.h"

namespace ds4::tokenizer {

ByteLevel::ByteLevel() {
  cp_to_byte_.fill(-1);
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable =
        (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
    byte_to_cp_[static_cast<size_t>(b)] = cp;
    cp_to_byte_[cp] = static_cast<int16_t>(b);
  }
}

std::string ByteLevel::encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) base::append_utf8(to_cp(static_cast<uint8_t>(c)), &out);
  return out;
}

std::string ByteLevel::decode(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    i += decode_utf8(text, i, &cp);
    const int b = to_byte(cp);
    if (b >= 0) out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace ds4::tokenizer
