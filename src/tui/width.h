// src/tui/width.h: how many terminal columns text takes (features.md §5.8: the footer, the prompt
// row and the scroll region's column tracking all depend on it).
// Owns: a small wcwidth of our own for the common ranges (combining marks 0, East Asian wide and
// emoji 2, a character followed by U+FE0F 2), display_width and clipping to N columns. ANSI CSI
// sequences (ESC [ ... final) count 0 columns and are kept whole by clip_to_width.
// Does not own: grapheme clusters beyond "base + zero-width marks" or terminal-specific quirks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds4::tui {

// Columns of one code point: 0 (combining marks, zero-width joiners and spaces, variation
// selectors, C0/C1 controls), 2 (CJK, Hangul, fullwidth forms, emoji) or 1.
int char_width(uint32_t cp);

// Columns of UTF-8 text (invalid bytes count 1 each, as the U+FFFD a terminal shows; CSI escape
// sequences count 0; U+FE0F after a 1-column character widens it to 2, emoji presentation).
int display_width(std::string_view text);

// The longest prefix of `text` that fits in `columns` columns, cut at a character boundary (never
// inside a CSI sequence; zero-width marks after the last kept character are kept with it).
std::string clip_to_width(std::string_view text, int columns);

// Decodes one character at text[i] leniently: sets *cp (U+FFFD for an invalid byte) and returns
// the number of bytes used (at least 1; i < text.size()).
size_t next_char(std::string_view text, size_t i, uint32_t* cp);

// Length of the CSI sequence (ESC [ params final) starting at text[i], or 0 when there is none
// (not ESC [, or no final byte before the end).
size_t csi_length(std::string_view text, size_t i);

}  // namespace ds4::tui
