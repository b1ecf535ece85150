// src/tui/keys.h: terminal input bytes (raw mode) to keys, for ds4-agent's UI thread (features.md
// §5.7-5.8).
// Owns: the byte-level decoding: UTF-8 text (invalid bytes become U+FFFD), control keys, CSI and
// SS3 sequences (modifiers ignored: ESC[1;5C is Right), bracketed paste as one key (CR and CRLF
// normalised to LF, other control bytes but tab dropped, at most kMaxPaste bytes kept), sequences
// split across reads, a lone ESC told apart from a sequence by the caller's quiet timeout.
// Does not own: reading the fd, the timeout (the caller calls flush() after ~50 ms without input
// while pending()), what a key does (line_editor.h and the app).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::tui {

enum class KeyType {
  kText,
  kEnter,
  kBackspace,
  kDelete,
  kLeft,
  kRight,
  kUp,
  kDown,
  kHome,
  kEnd,
  kTab,
  kCtrlA,
  kCtrlC,
  kCtrlD,
  kCtrlE,
  kCtrlK,
  kCtrlL,
  kCtrlU,
  kCtrlW,
  kCtrlX,
  kEsc,
  kPaste,
  kUnknown,
};

struct Key {
  KeyType type = KeyType::kUnknown;
  std::string text;  // kText: one or more well-formed UTF-8 characters; kPaste: the pasted text
};

// A short name for logs and test messages ("Left", "Text(\"ab\")").
std::string describe(const Key& key);

class KeyDecoder {
 public:
  static constexpr size_t kMaxPaste = size_t{1} << 20;

  // Decodes what can be decoded; an incomplete tail (ESC, a sequence, part of a UTF-8 character)
  // waits for the next feed() or for flush(). Inside a bracketed paste everything up to the end
  // marker ESC[201~ is paste text, however many reads it takes.
  std::vector<Key> feed(std::string_view bytes);

  // After ~50 ms of quiet with pending(): a lone ESC becomes kEsc, an incomplete sequence
  // kUnknown, an incomplete UTF-8 character U+FFFD. An unfinished paste is not affected (it ends
  // at its end marker).
  std::vector<Key> flush();

  // True when bytes outside a paste wait for more input (the caller then arms the timeout).
  bool pending() const { return !in_paste_ && !pending_.empty(); }
  bool in_paste() const { return in_paste_; }

 private:
  // Decodes the key at the front of `s` (not in a paste) and returns the bytes used; 0 when `s`
  // is an incomplete tail and `final` is false (with `final`, the tail is decoded as it is).
  size_t step(std::string_view s, bool final, std::vector<Key>* out);
  size_t escape(std::string_view s, bool final, std::vector<Key>* out);
  void paste_bytes(std::string_view bytes);
  void end_paste(std::vector<Key>* out);

  std::string pending_;
  bool after_cr_ = false;  // the last key was a CR: an LF right after it is the same Enter
  bool in_paste_ = false;
  std::string paste_;
  bool paste_after_cr_ = false;
};

}  // namespace ds4::tui
