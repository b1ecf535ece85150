// src/tui/line_editor.h: the prompt row's line editor and its history (features.md §5.7-5.8:
// `ds4-agent> `, history in ~/.ds4_agent_history, Tab completion, bracketed paste).
// Owns: the text and the cursor (a byte offset, always on a character boundary), the editing
// keys, history navigation with the draft kept aside, completion of the word at the cursor, the
// history file (one entry per line, backslash, CR and LF escaped; appended, created 0600), and
// the visible window of the text for a field of N columns.
// Does not own: keys the app binds itself (Esc, Ctrl+L, Ctrl+X: apply() ignores them), drawing
// (screen.h), what a submitted line means.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tui/keys.h"

namespace ds4::tui {

struct EditResult {
  enum Kind { kNone, kSubmit, kInterrupt, kEof, kCandidates, kBell } kind = kNone;
  std::string text;                     // kSubmit: the line; kInterrupt: the line that was cleared
  std::vector<std::string> candidates;  // kCandidates: every candidate, in the completer's order
};

class History {
 public:
  // `path` empty: memory only. Keeps the newest `max_entries`.
  explicit History(std::string path, size_t max_entries = 1000);

  // Reads the file (a missing or unreadable file is an empty history). When the file holds more
  // than twice max_entries lines it is rewritten with the kept ones.
  void load();

  // Adds a submitted line: skips an empty one and a repeat of the newest entry; appends it to the
  // file (created 0600). Errors writing the file are ignored: history is a convenience.
  void add(std::string_view line);

  const std::vector<std::string>& entries() const { return entries_; }

  // The one-line file form of an entry and back (exposed for tests).
  static std::string escape(std::string_view entry);
  static std::string unescape(std::string_view line);

 private:
  std::string path_;
  size_t max_entries_;
  std::vector<std::string> entries_;
};

class LineEditor {
 public:
  // Candidates for the word that ends at `cursor` in `line` (the word starts after the last
  // space before the cursor); each candidate is the whole replacement word.
  using Completer = std::function<std::vector<std::string>(std::string_view line, size_t cursor)>;

  explicit LineEditor(History* history = nullptr);

  void set_completer(Completer completer) { completer_ = std::move(completer); }

  EditResult apply(const Key& key);

  const std::string& text() const { return text_; }
  size_t cursor() const { return cursor_; }  // byte offset into text()
  void set_text(std::string text);           // cursor at the end; leaves history browsing
  void clear() { set_text({}); }

  // The part of the text shown in a field of `width` columns: newlines drawn as "⏎", tabs and
  // other control characters as one space; scrolled so the cursor's cell is visible (by half a
  // field at a time, so the window does not move at every keystroke). `column` is the cursor's
  // display column in `visible` (0..width-1).
  struct View {
    std::string visible;
    int column = 0;
  };
  View view(int width) const;

 private:
  size_t prev_boundary(size_t pos) const;  // start of the character cluster before pos
  size_t next_boundary(size_t pos) const;  // end of the character cluster at pos
  void insert(std::string_view s);
  void erase(size_t from, size_t to);
  EditResult history_move(int delta);
  EditResult complete();

  History* history_;
  Completer completer_;
  std::string text_;
  size_t cursor_ = 0;
  size_t history_pos_ = 0;  // index into entries(); == size() means the draft
  bool browsing_ = false;   // Up was pressed since the last submit, interrupt or set_text
  std::string draft_;
};

}  // namespace ds4::tui
