// src/tokenizer/detokenize.cpp: StreamDecoder -- turns token bytes into valid UTF-8 chunks.
// A token may end in the middle of a character (byte-level BPE splits characters freely), so the
// bytes of an incomplete character are held until the next token completes it. A byte that cannot
// start or continue a well-formed character becomes U+FFFD at once; nothing is silently dropped.
#include <string>

#include "ds4/tokenizer.h"

namespace ds4 {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// Expected sequence length for a lead byte, 0 when it cannot start a character.
size_t lead_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return 2;
  if (c >= 0xe0 && c <= 0xef) return 3;
  if (c >= 0xf0 && c <= 0xf4) return 4;
  return 0;
}

// Whether byte k (k >= 1) of a sequence starting with `lead` is acceptable (RFC 3629 table).
bool continuation_ok(unsigned char lead, size_t k, unsigned char c) {
  if (k == 1) {
    if (lead == 0xe0) return c >= 0xa0 && c <= 0xbf;
    if (lead == 0xed) return c >= 0x80 && c <= 0x9f;
    if (lead == 0xf0) return c >= 0x90 && c <= 0xbf;
    if (lead == 0xf4) return c >= 0x80 && c <= 0x8f;
  }
  return c >= 0x80 && c <= 0xbf;
}

// Moves every complete or hopeless character from `pending` to the result; keeps a valid but
// incomplete tail when `final` is false.
std::string drain(std::string* pending, bool final) {
  const auto* p = reinterpret_cast<const unsigned char*>(pending->data());
  const size_t n = pending->size();
  std::string out;
  size_t i = 0;
  while (i < n) {
    const size_t len = lead_length(p[i]);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    size_t k = 1;
    while (k < len && i + k < n && continuation_ok(p[i], k, p[i + k])) ++k;
    if (k == len) {
      out.append(pending->data() + i, len);
      i += len;
    } else if (i + k == n && !final) {
      break;  // a valid prefix of a character: wait for more bytes
    } else {
      out += kReplacement;  // maximal ill-formed prefix becomes one replacement character
      i += k;
    }
  }
  pending->erase(0, i);
  return out;
}

}  // namespace

std::string StreamDecoder::push(TokenId id) {
  pending_ += tok_->token_bytes(id);
  return drain(&pending_, false);
}

std::string StreamDecoder::flush() { return drain(&pending_, true); }

}  // namespace ds4
