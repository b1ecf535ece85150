// src/tui/keys.cpp: terminal input decoding (see keys.h).
#include "tui/keys.h"

#include <cstdint>
#include <iterator>

#include "base/utf8.h"

namespace ds4::tui {
namespace {

constexpr std::string_view kPasteEnd = "\x1b[201~";
constexpr size_t kMaxSequence = 256;  // a CSI longer than this without its final byte is junk

void push(std::vector<Key>* out, KeyType type) { out->push_back(Key{type, {}}); }

void push_text(std::vector<Key>* out, std::string_view text) {
  if (!out->empty() && out->back().type == KeyType::kText) {
    out->back().text += text;
  } else {
    out->push_back(Key{KeyType::kText, std::string(text)});
  }
}

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// The length a UTF-8 lead byte announces, 0 for a byte that cannot start a character.
size_t lead_length(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// True when s[i..] (shorter than the lead byte announces) can still become a well-formed
// character: every byte present is a continuation byte allowed in its place.
bool utf8_prefix_ok(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  for (size_t k = i + 1; k < s.size(); ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    unsigned char lo = 0x80, hi = 0xBF;
    if (k == i + 1) {
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    }
    if (c < lo || c > hi) return false;
  }
  return true;
}

KeyType control_key(unsigned char c) {
  switch (c) {
    case 0x01: return KeyType::kCtrlA;
    case 0x03: return KeyType::kCtrlC;
    case 0x04: return KeyType::kCtrlD;
    case 0x05: return KeyType::kCtrlE;
    case 0x08: return KeyType::kBackspace;
    case 0x09: return KeyType::kTab;
    case 0x0B: return KeyType::kCtrlK;
    case 0x0C: return KeyType::kCtrlL;
    case 0x15: return KeyType::kCtrlU;
    case 0x17: return KeyType::kCtrlW;
    case 0x18: return KeyType::kCtrlX;
    case 0x7F: return KeyType::kBackspace;
    default: return KeyType::kUnknown;
  }
}

KeyType letter_key(char final) {
  switch (final) {
    case 'A': return KeyType::kUp;
    case 'B': return KeyType::kDown;
    case 'C': return KeyType::kRight;
    case 'D': return KeyType::kLeft;
    case 'H': return KeyType::kHome;
    case 'F': return KeyType::kEnd;
    default: return KeyType::kUnknown;
  }
}

// The key of a complete CSI sequence whose parameter/intermediate bytes are `params`; the paste
// start marker gives kPaste with no text (the decoder turns it into paste mode).
KeyType csi_key(std::string_view params, char final) {
  if (!params.empty() && (params[0] < '0' || params[0] > ';')) return KeyType::kUnknown;  // <=>?
  for (char c : params) {
    if (c < '0' || c > ';') return KeyType::kUnknown;  // intermediates: no key of ours
  }
  const std::string_view first = params.substr(0, params.find(';'));
  if (final != '~') return letter_key(final);
  if (first == "1" || first == "7") return KeyType::kHome;
  if (first == "4" || first == "8") return KeyType::kEnd;
  if (first == "3") return KeyType::kDelete;
  if (first == "200") return KeyType::kPaste;
  return KeyType::kUnknown;
}

const char* type_name(KeyType t) {
  static constexpr const char* kNames[] = {
      "Text",  "Enter", "Backspace", "Delete", "Left",  "Right", "Up",     "Down",
      "Home",  "End",   "Tab",       "CtrlA",  "CtrlC", "CtrlD", "CtrlE",  "CtrlK",
      "CtrlL", "CtrlU", "CtrlW",     "CtrlX",  "Esc",   "Paste", "Unknown"};
  static_assert(std::size(kNames) == static_cast<size_t>(KeyType::kUnknown) + 1);
  return kNames[static_cast<int>(t)];
}

}  // namespace

std::string describe(const Key& key) {
  std::string s = type_name(key.type);
  if (key.type == KeyType::kText || key.type == KeyType::kPaste) s += "(\"" + key.text + "\")";
  return s;
}

std::vector<Key> KeyDecoder::feed(std::string_view bytes) {
  std::vector<Key> out;
  pending_.append(bytes);
  size_t i = 0;
  while (i < pending_.size()) {
    const std::string_view s = pending_;
    if (in_paste_) {
      const size_t end = s.find(kPasteEnd, i);
      if (end != std::string_view::npos) {
        paste_bytes(s.substr(i, end - i));
        i = end + kPasteEnd.size();
        end_paste(&out);
        continue;
      }
      // Keep a tail that may be the start of the end marker; the rest is paste text.
      size_t keep = 0;
      for (size_t k = std::min(kPasteEnd.size() - 1, s.size() - i); k > 0; --k) {
        if (kPasteEnd.substr(0, k) == s.substr(s.size() - k)) {
          keep = k;
          break;
        }
      }
      paste_bytes(s.substr(i, s.size() - keep - i));
      i = s.size() - keep;
      break;
    }
    const size_t used = step(s.substr(i), false, &out);
    if (used == 0) break;
    i += used;
  }
  pending_.erase(0, i);
  return out;
}

std::vector<Key> KeyDecoder::flush() {
  std::vector<Key> out;
  if (in_paste_) return out;
  size_t i = 0;
  while (i < pending_.size()) i += step(std::string_view(pending_).substr(i), true, &out);
  pending_.clear();
  return out;
}

size_t KeyDecoder::step(std::string_view s, bool final, std::vector<Key>* out) {
  const auto c = static_cast<unsigned char>(s[0]);
  const bool after_cr = after_cr_;
  after_cr_ = false;
  if (c == '\r') {
    push(out, KeyType::kEnter);
    after_cr_ = true;
    return 1;
  }
  if (c == '\n') {
    if (!after_cr) push(out, KeyType::kEnter);
    return 1;
  }
  if (c == 0x1B) return escape(s, final, out);
  if (c < 0x20 || c == 0x7F) {
    push(out, control_key(c));
    return 1;
  }
  if (c < 0x80) {
    size_t n = 1;
    while (n < s.size() && s[n] >= 0x20 && s[n] < 0x7F) ++n;
    push_text(out, s.substr(0, n));
    return n;
  }
  const size_t len = lead_length(c);
  if (len > s.size() && utf8_prefix_ok(s, 0)) {
    if (!final) return 0;  // wait for the rest of the character
    push_text(out, kReplacement);
    return s.size();
  }
  uint32_t cp = 0;
  const size_t n = len == 0 ? 0 : base::decode_utf8(s, 0, &cp);
  if (n == 0 || cp < 0xA0) {  // invalid, or a C1 control
    push_text(out, kReplacement);
    return n == 0 ? 1 : n;
  }
  push_text(out, s.substr(0, n));
  return n;
}

size_t KeyDecoder::escape(std::string_view s, bool final, std::vector<Key>* out) {
  if (s.size() == 1) {
    if (!final) return 0;
    push(out, KeyType::kEsc);
    return 1;
  }
  const auto c1 = static_cast<unsigned char>(s[1]);
  if (c1 == '[') {
    for (size_t j = 2; j < s.size(); ++j) {
      const auto b = static_cast<unsigned char>(s[j]);
      if (b >= 0x40 && b <= 0x7E) {
        const KeyType type = csi_key(s.substr(2, j - 2), static_cast<char>(b));
        if (type == KeyType::kPaste) {
          in_paste_ = true;
          paste_.clear();
          paste_after_cr_ = false;
        } else {
          push(out, type);
        }
        return j + 1;
      }
      if (b < 0x20 || b > 0x3F || j >= kMaxSequence) {  // malformed: drop what came so far
        push(out, KeyType::kUnknown);
        return j;
      }
    }
    if (!final) return 0;
    push(out, KeyType::kUnknown);
    return s.size();
  }
  if (c1 == 'O') {
    if (s.size() == 2) {
      if (!final) return 0;
      push(out, KeyType::kUnknown);
      return 2;
    }
    const auto c2 = static_cast<unsigned char>(s[2]);
    if (c2 < 0x20 || c2 >= 0x7F) {
      push(out, KeyType::kUnknown);
      return 2;
    }
    push(out, letter_key(static_cast<char>(c2)));
    return 3;
  }
  if (c1 == 0x1B || c1 < 0x20) {  // ESC then ESC or a control key: the first is a plain ESC
    push(out, KeyType::kEsc);
    return 1;
  }
  // ESC + printable ASCII is Alt+key, which we do not bind; ESC before a non-ASCII byte is ESC.
  if (c1 < 0x80) {
    push(out, KeyType::kUnknown);
    return 2;
  }
  push(out, KeyType::kEsc);
  return 1;
}

void KeyDecoder::paste_bytes(std::string_view bytes) {
  for (char ch : bytes) {
    const bool after_cr = paste_after_cr_;
    paste_after_cr_ = ch == '\r';
    if (ch == '\n' && after_cr) continue;
    if (paste_.size() >= kMaxPaste) continue;
    paste_.push_back(ch == '\r' ? '\n' : ch);
  }
}

void KeyDecoder::end_paste(std::vector<Key>* out) {
  in_paste_ = false;
  std::string text;
  text.reserve(paste_.size());
  for (size_t i = 0; i < paste_.size();) {
    uint32_t cp = 0;
    const size_t n = base::decode_utf8(paste_, i, &cp);
    if (n == 0) {
      text += kReplacement;
      ++i;
      continue;
    }
    const bool control = cp < 0x20 || (cp >= 0x7F && cp < 0xA0);
    if (!control || cp == '\n' || cp == '\t') text.append(paste_, i, n);
    i += n;
  }
  paste_.clear();
  if (!text.empty()) out->push_back(Key{KeyType::kPaste, std::move(text)});
}

}  // namespace ds4::tui
