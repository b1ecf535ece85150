// src/tui/line_editor.cpp: the prompt row's editor and history (see line_editor.h).
#include "tui/line_editor.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "base/fd.h"
#include "base/utf8.h"
#include "tui/width.h"

namespace ds4::tui {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// True when the character at s[i] is a zero-width mark that belongs to the character before it.
bool is_mark_at(std::string_view s, size_t i) {
  uint32_t cp = 0;
  const size_t n = base::decode_utf8(s, i, &cp);
  return n != 0 && cp >= 0x300 && char_width(cp) == 0;
}

using base::write_all;

// The longest common prefix of the candidates, cut back to a character boundary.
std::string common_prefix(const std::vector<std::string>& c) {
  std::string_view p = c[0];
  for (const std::string& s : c) {
    size_t n = 0;
    while (n < p.size() && n < s.size() && p[n] == s[n]) ++n;
    p = p.substr(0, n);
  }
  size_t n = p.size();
  while (n > 0 && n < c[0].size() && is_continuation(c[0][n])) --n;
  return std::string(p.substr(0, n));
}

}  // namespace

// ---- History ----

History::History(std::string path, size_t max_entries)
    : path_(std::move(path)), max_entries_(std::max<size_t>(1, max_entries)) {}

std::string History::escape(std::string_view entry) {
  std::string out;
  for (char c : entry) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

std::string History::unescape(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\' || i + 1 == line.size()) {
      out += line[i];
      continue;
    }
    const char n = line[++i];
    if (n == 'n') {
      out += '\n';
    } else if (n == 'r') {
      out += '\r';
    } else if (n == '\\') {
      out += '\\';
    } else {
      out += '\\';
      out += n;
    }
  }
  return out;
}

void History::load() {
  entries_.clear();
  if (path_.empty()) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  const size_t skip = lines.size() > max_entries_ ? lines.size() - max_entries_ : 0;
  for (size_t i = skip; i < lines.size(); ++i) entries_.push_back(unescape(lines[i]));
  if (lines.size() <= 2 * max_entries_) return;
  // Compact the file: write the kept entries to a temporary file and rename it over.
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string body;
  for (size_t i = skip; i < lines.size(); ++i) body += lines[i] + "\n";
  const bool ok = write_all(fd, body);
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) ::unlink(tmp.c_str());
}

void History::add(std::string_view line) {
  if (line.empty() || (!entries_.empty() && entries_.back() == line)) return;
  entries_.emplace_back(line);
  if (entries_.size() > max_entries_) entries_.erase(entries_.begin());
  if (path_.empty()) return;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)write_all(fd, escape(line) + "\n");
  ::close(fd);
}

// ---- LineEditor ----

LineEditor::LineEditor(History* history) : history_(history) {}

void LineEditor::set_text(std::string text) {
  text_ = std::move(text);
  cursor_ = text_.size();
  browsing_ = false;
}

size_t LineEditor::prev_boundary(size_t pos) const {
  while (pos > 0) {
    --pos;
    while (pos > 0 && is_continuation(text_[pos])) --pos;
    if (!is_mark_at(text_, pos)) break;
  }
  return pos;
}

size_t LineEditor::next_boundary(size_t pos) const {
  if (pos >= text_.size()) return text_.size();
  uint32_t cp = 0;
  pos += next_char(text_, pos, &cp);
  while (pos < text_.size() && is_mark_at(text_, pos)) pos += next_char(text_, pos, &cp);
  return pos;
}

void LineEditor::insert(std::string_view s) {
  text_.insert(cursor_, s);
  cursor_ += s.size();
}

void LineEditor::erase(size_t from, size_t to) {
  text_.erase(from, to - from);
  cursor_ = from;
}

EditResult LineEditor::apply(const Key& key) {
  EditResult r;
  switch (key.type) {
    case KeyType::kText:
    case KeyType::kPaste: insert(key.text); break;
    case KeyType::kEnter:
      r.kind = EditResult::kSubmit;
      r.text = text_;
      if (history_ != nullptr) history_->add(text_);
      clear();
      break;
    case KeyType::kCtrlC:
      r.kind = EditResult::kInterrupt;
      r.text = text_;
      clear();
      break;
    case KeyType::kCtrlD:
      if (text_.empty()) {
        r.kind = EditResult::kEof;
      } else if (cursor_ < text_.size()) {
        erase(cursor_, next_boundary(cursor_));
      }
      break;
    case KeyType::kBackspace:
      if (cursor_ == 0) {
        r.kind = EditResult::kBell;
      } else {
        erase(prev_boundary(cursor_), cursor_);
      }
      break;
    case KeyType::kDelete:
      if (cursor_ == text_.size()) {
        r.kind = EditResult::kBell;
      } else {
        erase(cursor_, next_boundary(cursor_));
      }
      break;
    case KeyType::kLeft: cursor_ = prev_boundary(cursor_); break;
    case KeyType::kRight: cursor_ = next_boundary(cursor_); break;
    case KeyType::kHome:
    case KeyType::kCtrlA: cursor_ = 0; break;
    case KeyType::kEnd:
    case KeyType::kCtrlE: cursor_ = text_.size(); break;
    case KeyType::kCtrlU: erase(0, cursor_); break;
    case KeyType::kCtrlK: text_.erase(cursor_); break;
    case KeyType::kCtrlW: {
      size_t from = cursor_;
      while (from > 0 && is_space(text_[from - 1])) --from;
      while (from > 0 && !is_space(text_[from - 1])) --from;
      erase(from, cursor_);
      break;
    }
    case KeyType::kUp: return history_move(-1);
    case KeyType::kDown: return history_move(+1);
    case KeyType::kTab: return complete();
    default: break;  // Esc, Ctrl+L, Ctrl+X, unknown keys: the app's
  }
  return r;
}

EditResult LineEditor::history_move(int delta) {
  EditResult r;
  const size_t n = history_ == nullptr ? 0 : history_->entries().size();
  if (!browsing_) {
    history_pos_ = n;
    draft_ = text_;
  }
  if ((delta < 0 && history_pos_ == 0) || (delta > 0 && history_pos_ >= n) || n == 0) {
    r.kind = EditResult::kBell;
    return r;
  }
  history_pos_ = delta < 0 ? history_pos_ - 1 : history_pos_ + 1;
  text_ = history_pos_ == n ? draft_ : history_->entries()[history_pos_];
  cursor_ = text_.size();
  browsing_ = history_pos_ != n;
  return r;
}

EditResult LineEditor::complete() {
  EditResult r;
  std::vector<std::string> c;
  if (completer_) c = completer_(text_, cursor_);
  if (c.empty()) {
    r.kind = EditResult::kBell;
    return r;
  }
  size_t start = cursor_;
  while (start > 0 && !is_space(text_[start - 1])) --start;
  const std::string_view word = std::string_view(text_).substr(start, cursor_ - start);
  if (c.size() == 1) {
    erase(start, cursor_);
    insert(c[0]);
    return r;
  }
  const std::string prefix = common_prefix(c);
  if (prefix.size() > word.size() && prefix.starts_with(word)) {
    erase(start, cursor_);
    insert(prefix);
  }
  r.kind = EditResult::kCandidates;
  r.candidates = std::move(c);
  return r;
}

LineEditor::View LineEditor::view(int width) const {
  View v;
  if (width <= 0) return v;
  struct Glyph {
    std::string text;
    int col, width;
  };
  std::vector<Glyph> glyphs;
  int col = 0, cursor_col = -1;
  for (size_t i = 0; i < text_.size();) {
    if (cursor_col < 0 && i >= cursor_) cursor_col = col;
    const size_t end = next_boundary(i);
    const std::string_view bytes = std::string_view(text_).substr(i, end - i);
    const auto c = static_cast<unsigned char>(bytes[0]);
    Glyph g{std::string(bytes), col, 0};
    if (c == '\n') {
      g.text = "\xe2\x8f\x8e";  // ⏎
    } else if (c < 0x20 || c == 0x7F) {
      g.text = " ";
    }
    g.width = display_width(g.text);
    col += g.width;
    glyphs.push_back(std::move(g));
    i = end;
  }
  if (cursor_col < 0) cursor_col = col;
  int start = 0;
  if (cursor_col > width - 1) {
    const int step = std::max(1, width / 2);
    start = (cursor_col - (width - 1) + step - 1) / step * step;
  }
  for (const Glyph& g : glyphs) {
    if (g.col + g.width <= start) continue;
    if (g.col + g.width > start + width) break;
    v.visible +=
        g.col < start ? std::string(static_cast<size_t>(g.col + g.width - start), ' ') : g.text;
  }
  v.column = cursor_col - start;
  return v;
}

}  // namespace ds4::tui
