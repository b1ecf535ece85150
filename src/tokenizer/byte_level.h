// src/tokenizer/byte_level.h: the GPT-2 byte <-> code point mapping of byte-level BPE.
// Bytes 33..126, 161..172 and 174..255 map to themselves; the other 68 bytes map, in increasing
// order, to U+0100, U+0101, ... (space -> U+0120 'Ġ', '\n' -> U+010A 'Ċ'). model.md §6.2.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds4::tokenizer {

class ByteLevel {
 public:
  ByteLevel();
  uint32_t to_cp(uint8_t b) const { return byte_to_cp_[b]; }
  // The byte a code point stands for, or -1 when it is not one of the 256 mapped code points.
  int to_byte(uint32_t cp) const { return cp < cp_to_byte_.size() ? cp_to_byte_[cp] : -1; }
  // Byte-level string (UTF-8 of the mapped code points) of raw bytes.
  std::string encode(std::string_view bytes) const;
  // Raw bytes of a byte-level string; code points outside the mapping are dropped.
  std::string decode(std::string_view text) const;

 private:
  std::array<uint32_t, 256> byte_to_cp_{};
  std::array<int16_t, 324> cp_to_byte_{};  // the mapped code points are all below 324
};

}  // namespace ds4::tokenizer
