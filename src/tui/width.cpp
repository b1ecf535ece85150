// src/tui/width.cpp: terminal column widths (see width.h).
#include "tui/width.h"

#include "base/utf8.h"

namespace ds4::tui {
namespace {

struct Range {
  uint32_t lo, hi;
};

// Zero-width code points: combining marks of the common scripts, zero-width space/joiners and
// directional marks, variation selectors, the combining half marks.
constexpr Range kZero[] = {
    {0x0300, 0x036F},   {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF}, {0x05C1, 0x05C2},
    {0x05C4, 0x05C5},   {0x05C7, 0x05C7}, {0x0610, 0x061A}, {0x064B, 0x065F}, {0x0670, 0x0670},
    {0x06D6, 0x06DC},   {0x06DF, 0x06E4}, {0x06E7, 0x06E8}, {0x06EA, 0x06ED}, {0x0900, 0x0902},
    {0x093A, 0x093A},   {0x093C, 0x093C}, {0x0941, 0x0948}, {0x094D, 0x094D}, {0x0951, 0x0957},
    {0x0E31, 0x0E31},   {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
    {0x200B, 0x200F},   {0x202A, 0x202E}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0x302A, 0x302D},
    {0x3099, 0x309A},   {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0x1F3FB, 0x1F3FF},
    {0xE0000, 0xE0FFF},
};

// Two-column code points: East Asian Wide and Fullwidth blocks and the emoji that terminals draw
// wide (Unicode's Emoji_Presentation, in the ranges that matter in practice).
constexpr Range kWide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
    {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},
    {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F251}, {0x1F300, 0x1F320},
    {0x1F32D, 0x1F335}, {0x1F337, 0x1F37C}, {0x1F37E, 0x1F393}, {0x1F3A0, 0x1F3CA},
    {0x1F3CF, 0x1F3D3}, {0x1F3E0, 0x1F3F0}, {0x1F3F4, 0x1F3F4}, {0x1F3F8, 0x1F43E},
    {0x1F440, 0x1F440}, {0x1F442, 0x1F4FC}, {0x1F4FF, 0x1F53D}, {0x1F54B, 0x1F54E},
    {0x1F550, 0x1F567}, {0x1F57A, 0x1F57A}, {0x1F595, 0x1F596}, {0x1F5A4, 0x1F5A4},
    {0x1F5FB, 0x1F64F}, {0x1F680, 0x1F6C5}, {0x1F6CC, 0x1F6CC}, {0x1F6D0, 0x1F6D2},
    {0x1F6D5, 0x1F6D7}, {0x1F6DC, 0x1F6DF}, {0x1F6EB, 0x1F6EC}, {0x1F6F4, 0x1F6FC},
    {0x1F7E0, 0x1F7EB}, {0x1F7F0, 0x1F7F0}, {0x1F90C, 0x1F93A}, {0x1F93C, 0x1F945},
    {0x1F947, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

template <size_t N>
bool in(const Range (&table)[N], uint32_t cp) {
  size_t lo = 0, hi = N;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (cp > table[mid].hi) {
      lo = mid + 1;
    } else if (cp < table[mid].lo) {
      hi = mid;
    } else {
      return true;
    }
  }
  return false;
}

}  // namespace

int char_width(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) return 0;
  if (cp < 0x300) return 1;
  if (in(kZero, cp)) return 0;
  if (in(kWide, cp)) return 2;
  return 1;
}

size_t next_char(std::string_view text, size_t i, uint32_t* cp) {
  const size_t n = base::decode_utf8(text, i, cp);
  if (n != 0) return n;
  *cp = 0xFFFD;
  return 1;
}

size_t csi_length(std::string_view text, size_t i) {
  if (i + 1 >= text.size() || text[i] != '\x1b' || text[i + 1] != '[') return 0;
  for (size_t j = i + 2; j < text.size(); ++j) {
    const auto c = static_cast<unsigned char>(text[j]);
    if (c >= 0x40 && c <= 0x7E) return j + 1 - i;
    if (c < 0x20 || c > 0x3F) return 0;  // not a parameter or intermediate byte: malformed
  }
  return 0;
}

namespace {

// Walks `text` character by character, calling f(begin, end, columns) for each unit: a CSI
// sequence (0 columns) or a character with the zero-width marks that follow it.
template <typename F>
void for_each_unit(std::string_view text, F&& f) {
  size_t i = 0;
  while (i < text.size()) {
    if (const size_t csi = csi_length(text, i); csi > 0) {
      if (!f(i, i + csi, 0)) return;
      i += csi;
      continue;
    }
    uint32_t cp = 0;
    size_t end = i + next_char(text, i, &cp);
    int w = char_width(cp);
    while (end < text.size()) {
      uint32_t next = 0;
      const size_t n = base::decode_utf8(text, end, &next);
      if (n == 0 || next < 0x300 || char_width(next) != 0) break;
      if (next == 0xFE0F && w == 1) w = 2;  // emoji presentation
      end += n;
    }
    if (!f(i, end, w)) return;
    i = end;
  }
}

}  // namespace

int display_width(std::string_view text) {
  int total = 0;
  for_each_unit(text, [&](size_t, size_t, int w) {
    total += w;
    return true;
  });
  return total;
}

std::string clip_to_width(std::string_view text, int columns) {
  size_t keep = 0;
  int used = 0;
  for_each_unit(text, [&](size_t, size_t end, int w) {
    if (used + w > columns) return false;
    used += w;
    keep = end;
    return true;
  });
  return std::string(text.substr(0, keep));
}

}  // namespace ds4::tui
