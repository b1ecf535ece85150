// src/tokenizer/pretokenize.cpp: the three-stage DeepSeek split (see pretokenize.h).
// Text is decoded once into code points with byte offsets; each stage works on index ranges and
// hands its pieces to the next, so no intermediate strings are built.
#include "tokenizer/pretokenize.h"

#include <cstdint>

#include "tokenizer/unicode.h"

namespace ds4::tokenizer {
namespace {

struct Decoded {
  std::vector<uint32_t> cp;
  std::vector<CharClass> cls;
  std::vector<uint32_t> off;  // byte offset of each code point; off[n] = text size
};

bool is_newline(uint32_t c) { return c == '\r' || c == '\n'; }
bool is_ascii_alpha(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_punct(uint32_t c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~');
}
bool is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x309F) ||
         (c >= 0x30A0 && c <= 0x30FF);
}
bool letter_or_mark(CharClass k) { return k == CharClass::kLetter || k == CharClass::kMark; }
bool punct_or_symbol(CharClass k) { return k == CharClass::kPunct || k == CharClass::kSymbol; }

class Splitter {
 public:
  Splitter(std::string_view text, std::vector<std::string_view>* out) : text_(text), out_(out) {
    d_.cp.reserve(text.size());
    d_.cls.reserve(text.size());
    d_.off.reserve(text.size() + 1);
    for (size_t i = 0; i < text.size();) {
      uint32_t c = 0;
      const size_t len = decode_utf8(text, i, &c);
      d_.cp.push_back(c);
      d_.cls.push_back(c >= kInvalidBase ? CharClass::kOther : char_class(c));
      d_.off.push_back(static_cast<uint32_t>(i));
      i += len;
    }
    d_.off.push_back(static_cast<uint32_t>(text.size()));
  }

  void run() { split_numbers(0, d_.cp.size()); }

 private:
  void emit(size_t b, size_t e) { out_->push_back(text_.substr(d_.off[b], d_.off[e] - d_.off[b])); }

  // Stage 1: runs of up to three \p{N} characters are pieces; gaps go to stage 2.
  void split_numbers(size_t b, size_t e) {
    size_t gap = b;
    for (size_t i = b; i < e;) {
      if (d_.cls[i] != CharClass::kNumber) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < e && j - i < 3 && d_.cls[j] == CharClass::kNumber) ++j;
      if (gap < i) split_cjk(gap, i);
      split_cjk(i, j);
      gap = i = j;
    }
    if (gap < e) split_cjk(gap, e);
  }

  // Stage 2: maximal runs of CJK ideographs / kana are pieces; gaps go to stage 3.
  void split_cjk(size_t b, size_t e) {
    size_t gap = b;
    for (size_t i = b; i < e;) {
      if (!is_cjk(d_.cp[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < e && is_cjk(d_.cp[j])) ++j;
      if (gap < i) split_words(gap, i);
      split_words(i, j);
      gap = i = j;
    }
    if (gap < e) split_words(gap, e);
  }

  // Stage 3: the word/punctuation/whitespace alternation. Returns the end of the match at i, or i
  // when no alternative matches there.
  size_t match_at(size_t i, size_t e) const {
    const auto& cp = d_.cp;
    const auto& cls = d_.cls;
    const uint32_t c = cp[i];
    // [!-/:-@[-`{-~][A-Za-z]+
    if (is_ascii_punct(c) && i + 1 < e && is_ascii_alpha(cp[i + 1])) {
      size_t j = i + 1;
      while (j < e && is_ascii_alpha(cp[j])) ++j;
      return j;
    }
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ : the optional prefix is tried first (greedy).
    const bool prefix_ok =
        !is_newline(c) && cls[i] != CharClass::kLetter && !punct_or_symbol(cls[i]);
    if ((prefix_ok && i + 1 < e && letter_or_mark(cls[i + 1])) || letter_or_mark(cls[i])) {
      size_t j = i + 1;
      while (j < e && letter_or_mark(cls[j])) ++j;
      return j;
    }
    // ' '?[\p{P}\p{S}]+[\r\n]*
    size_t k = i;
    if (c == ' ' && i + 1 < e && punct_or_symbol(cls[i + 1])) ++k;
    if (punct_or_symbol(cls[k])) {
      while (k < e && punct_or_symbol(cls[k])) ++k;
      while (k < e && is_newline(cp[k])) ++k;
      return k;
    }
    if (!is_space(c)) return i;
    size_t j = i;  // maximal whitespace run [i, j)
    while (j < e && is_space(cp[j])) ++j;
    // \s*[\r\n]+ : backtracking leaves the match ending just after the run's last newline.
    for (size_t n = j; n > i; --n) {
      if (is_newline(cp[n - 1])) return n;
    }
    // \s+(?!\S) : the whole run at the end of the piece, else all but its last character.
    if (j == e) return j;
    if (j - i >= 2) return j - 1;
    return j;  // \s+
  }

  void split_words(size_t b, size_t e) {
    size_t gap = b;
    for (size_t i = b; i < e;) {
      const size_t j = match_at(i, e);
      if (j == i) {
        ++i;
        continue;
      }
      if (gap < i) emit(gap, i);
      emit(i, j);
      gap = i = j;
    }
    if (gap < e) emit(gap, e);
  }

  std::string_view text_;
  std::vector<std::string_view>* out_;
  Decoded d_;
};

}  // namespace

void pretokenize(std::string_view text, std::vector<std::string_view>* out) {
  if (text.empty()) return;
  Splitter s(text, out);
  s.run();
}

}  // namespace ds4::tokenizer
