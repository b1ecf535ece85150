// Protects: the prompt row's editing (features.md §5.7-5.8): every editing key, wide and combined
// characters, history navigation with the draft, the history file with multi-line entries,
// completion, and the scrolled view.
#include "tui/line_editor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace ds4::tui {
namespace {

Key text(std::string s) { return Key{KeyType::kText, std::move(s)}; }
Key key(KeyType t) { return Key{t, {}}; }

// The text with the cursor shown as '|'.
std::string shown(const LineEditor& e) {
  std::string s = e.text();
  s.insert(e.cursor(), "|");
  return s;
}

void keys(LineEditor* e, std::initializer_list<KeyType> ks) {
  for (KeyType k : ks) (void)e->apply(key(k));
}

// A history file under the temporary directory, removed before the test and when it ends
// (passed, or failed by an ASSERT).
struct TempFile {
  explicit TempFile(const std::string& name)
      : path(testing::TempDir() + name + "_" + std::to_string(::getpid())) {
    std::remove(path.c_str());
  }
  ~TempFile() { std::remove(path.c_str()); }
  const std::string path;
};

TEST(LineEditor, InsertsAndMovesByCharacters) {
  LineEditor e;
  e.apply(text("h\xc3\xa9llo"));
  EXPECT_EQ(shown(e), "h\xc3\xa9llo|");
  keys(&e, {KeyType::kLeft, KeyType::kLeft, KeyType::kLeft});
  EXPECT_EQ(shown(e), "h\xc3\xa9|llo");
  e.apply(key(KeyType::kLeft));
  EXPECT_EQ(shown(e), "h|\xc3\xa9llo");
  e.apply(text("\xe4\xb8\xad"));
  EXPECT_EQ(shown(e), "h\xe4\xb8\xad|\xc3\xa9llo");
  keys(&e, {KeyType::kHome});
  EXPECT_EQ(shown(e), "|h\xe4\xb8\xad\xc3\xa9llo");
  keys(&e, {KeyType::kLeft});  // stays at 0
  EXPECT_EQ(e.cursor(), 0u);
  keys(&e, {KeyType::kEnd});
  EXPECT_EQ(e.cursor(), e.text().size());
  keys(&e, {KeyType::kCtrlA, KeyType::kRight});
  EXPECT_EQ(shown(e), "h|\xe4\xb8\xad\xc3\xa9llo");
  keys(&e, {KeyType::kCtrlE, KeyType::kRight});
  EXPECT_EQ(shown(e), "h\xe4\xb8\xad\xc3\xa9llo|");
}

TEST(LineEditor, CombiningMarksMoveWithTheirBase) {
  LineEditor e;
  e.apply(text("ae\xcc\x81z"));  // a, e + combining acute, z
  keys(&e, {KeyType::kLeft, KeyType::kLeft});
  EXPECT_EQ(shown(e), "a|e\xcc\x81z");
  e.apply(key(KeyType::kDelete));
  EXPECT_EQ(shown(e), "a|z");
  e.set_text("xe\xcc\x81");
  e.apply(key(KeyType::kBackspace));
  EXPECT_EQ(shown(e), "x|");
}

TEST(LineEditor, DeletesAndKills) {
  LineEditor e;
  e.apply(text("one two  three"));
  EXPECT_EQ(e.apply(key(KeyType::kBackspace)).kind, EditResult::kNone);
  EXPECT_EQ(shown(e), "one two  thre|");
  e.apply(key(KeyType::kCtrlW));
  EXPECT_EQ(shown(e), "one two  |");
  e.apply(key(KeyType::kCtrlW));
  EXPECT_EQ(shown(e), "one |");
  e.set_text("abcdef");
  keys(&e, {KeyType::kLeft, KeyType::kLeft, KeyType::kLeft});
  e.apply(key(KeyType::kDelete));
  EXPECT_EQ(shown(e), "abc|ef");
  e.apply(key(KeyType::kCtrlD));  // not empty: deletes under the cursor
  EXPECT_EQ(shown(e), "abc|f");
  e.apply(key(KeyType::kCtrlK));
  EXPECT_EQ(shown(e), "abc|");
  EXPECT_EQ(e.apply(key(KeyType::kDelete)).kind, EditResult::kBell);
  e.apply(key(KeyType::kLeft));
  e.apply(key(KeyType::kCtrlU));
  EXPECT_EQ(shown(e), "|c");
  EXPECT_EQ(e.apply(key(KeyType::kBackspace)).kind, EditResult::kBell);
}

TEST(LineEditor, SubmitInterruptAndEof) {
  History h("");
  LineEditor e(&h);
  e.apply(text("hello"));
  EditResult r = e.apply(key(KeyType::kEnter));
  EXPECT_EQ(r.kind, EditResult::kSubmit);
  EXPECT_EQ(r.text, "hello");
  EXPECT_EQ(e.text(), "");
  EXPECT_EQ(h.entries(), std::vector<std::string>{"hello"});
  e.apply(text("draft"));
  r = e.apply(key(KeyType::kCtrlC));
  EXPECT_EQ(r.kind, EditResult::kInterrupt);
  EXPECT_EQ(r.text, "draft");
  EXPECT_EQ(e.text(), "");
  EXPECT_EQ(e.apply(key(KeyType::kCtrlD)).kind, EditResult::kEof);
  EXPECT_EQ(e.apply(key(KeyType::kEnter)).kind, EditResult::kSubmit);  // empty: not in history
  EXPECT_EQ(h.entries().size(), 1u);
  // Keys the app binds do nothing here.
  e.apply(text("x"));
  for (KeyType k : {KeyType::kEsc, KeyType::kCtrlL, KeyType::kCtrlX, KeyType::kUnknown}) {
    EXPECT_EQ(e.apply(key(k)).kind, EditResult::kNone);
  }
  EXPECT_EQ(shown(e), "x|");
}

TEST(LineEditor, PasteKeepsNewlines) {
  LineEditor e;
  e.apply(text("ab"));
  e.apply(key(KeyType::kLeft));
  e.apply(Key{KeyType::kPaste, "1\n2"});
  EXPECT_EQ(shown(e), "a1\n2|b");
  e.apply(key(KeyType::kCtrlW));  // a newline separates words
  EXPECT_EQ(shown(e), "a1\n|b");
}

TEST(LineEditor, HistoryNavigationKeepsTheDraft) {
  History h("");
  h.add("first");
  h.add("second");
  h.add("second");  // a repeat of the newest is skipped
  h.add("");
  EXPECT_EQ(h.entries(), (std::vector<std::string>{"first", "second"}));
  LineEditor e(&h);
  e.apply(text("draft"));
  EXPECT_EQ(e.apply(key(KeyType::kDown)).kind, EditResult::kBell);
  e.apply(key(KeyType::kUp));
  EXPECT_EQ(shown(e), "second|");
  e.apply(key(KeyType::kUp));
  EXPECT_EQ(shown(e), "first|");
  EXPECT_EQ(e.apply(key(KeyType::kUp)).kind, EditResult::kBell);
  EXPECT_EQ(e.text(), "first");
  e.apply(key(KeyType::kDown));
  EXPECT_EQ(e.text(), "second");
  e.apply(key(KeyType::kDown));
  EXPECT_EQ(shown(e), "draft|");
  // Submitting a recalled and edited entry adds it; browsing starts again from the newest.
  keys(&e, {KeyType::kUp, KeyType::kUp});
  e.apply(text("!"));
  EXPECT_EQ(e.apply(key(KeyType::kEnter)).text, "first!");
  e.apply(key(KeyType::kUp));
  EXPECT_EQ(e.text(), "first!");
  LineEditor none;
  EXPECT_EQ(none.apply(key(KeyType::kUp)).kind, EditResult::kBell);
}

TEST(History, FileRoundTripWithMultiLineEntries) {
  const TempFile file("tui_history");
  const std::string& path = file.path;
  {
    History h(path);
    h.load();
    EXPECT_TRUE(h.entries().empty());
    h.add("plain");
    h.add("two\nlines");
    h.add("back\\slash \\n literal\r");
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  {
    std::ifstream in(path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all, "plain\ntwo\\nlines\nback\\\\slash \\\\n literal\\r\n");
  }
  History again(path);
  again.load();
  EXPECT_EQ(again.entries(),
            (std::vector<std::string>{"plain", "two\nlines", "back\\slash \\n literal\r"}));
}

TEST(History, KeepsTheNewestAndCompactsTheFile) {
  const TempFile file("tui_history_max");
  const std::string& path = file.path;
  {
    History h(path, 3);
    for (int i = 0; i < 7; ++i) h.add("e" + std::to_string(i));
    EXPECT_EQ(h.entries(), (std::vector<std::string>{"e4", "e5", "e6"}));
  }
  History h(path, 3);
  h.load();  // 7 lines > 2 * 3: rewritten with the last 3
  EXPECT_EQ(h.entries(), (std::vector<std::string>{"e4", "e5", "e6"}));
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "e4\ne5\ne6\n");
}

TEST(LineEditor, CompletionCases) {
  LineEditor e;
  EXPECT_EQ(e.apply(key(KeyType::kTab)).kind, EditResult::kBell);  // no completer
  std::string seen_line;
  size_t seen_cursor = 99;
  e.set_completer([&](std::string_view line, size_t cursor) {
    seen_line = line;
    seen_cursor = cursor;
    std::vector<std::string> all = {"/save", "/switch", "/strip", "/help"};
    const size_t start = line.rfind(' ', cursor == 0 ? 0 : cursor - 1);
    const std::string_view word =
        line.substr(start == std::string_view::npos ? 0 : start + 1, cursor);
    std::vector<std::string> out;
    for (const std::string& c : all) {
      if (c.starts_with(word)) out.push_back(c);
    }
    return out;
  });
  e.apply(text("/h"));
  EXPECT_EQ(e.apply(key(KeyType::kTab)).kind, EditResult::kNone);  // one: replaces the word
  EXPECT_EQ(shown(e), "/help|");
  EXPECT_EQ(seen_line, "/h");
  EXPECT_EQ(seen_cursor, 2u);
  e.set_text("/s");
  EditResult r = e.apply(key(KeyType::kTab));  // several: common prefix is the word itself
  EXPECT_EQ(r.kind, EditResult::kCandidates);
  EXPECT_EQ(r.candidates, (std::vector<std::string>{"/save", "/switch", "/strip"}));
  EXPECT_EQ(shown(e), "/s|");
  e.set_text("/st");
  e.apply(key(KeyType::kTab));
  EXPECT_EQ(shown(e), "/strip|");
  e.set_text("/sw tail");
  keys(&e, {KeyType::kHome, KeyType::kRight, KeyType::kRight, KeyType::kRight});
  e.apply(key(KeyType::kTab));
  EXPECT_EQ(shown(e), "/switch| tail");
  e.set_text("/x");
  EXPECT_EQ(e.apply(key(KeyType::kTab)).kind, EditResult::kBell);
  EXPECT_EQ(e.text(), "/x");
  // Several candidates sharing a longer prefix: the prefix is inserted (cut at a character).
  e.set_completer([](std::string_view, size_t) {
    return std::vector<std::string>{"ab\xc3\xa9x", "ab\xc3\xa9y", "ab\xc3\xa8"};
  });
  e.set_text("a");
  r = e.apply(key(KeyType::kTab));
  EXPECT_EQ(r.kind, EditResult::kCandidates);
  EXPECT_EQ(shown(e), "ab|");
}

TEST(LineEditor, ViewScrollsByHalfAField) {
  LineEditor e;
  EXPECT_EQ(e.view(10).visible, "");
  EXPECT_EQ(e.view(10).column, 0);
  e.apply(text("0123456789abcdefghij"));
  LineEditor::View v = e.view(10);  // cursor at column 20: window starts at 15
  EXPECT_EQ(v.visible, "fghij");
  EXPECT_EQ(v.column, 5);
  e.apply(key(KeyType::kHome));
  v = e.view(10);
  EXPECT_EQ(v.visible, "0123456789");
  EXPECT_EQ(v.column, 0);
  for (int i = 0; i < 10; ++i) e.apply(key(KeyType::kRight));
  v = e.view(10);  // column 10: window at 5
  EXPECT_EQ(v.visible, "56789abcde");
  EXPECT_EQ(v.column, 5);
  for (int i = 0; i < 4; ++i) e.apply(key(KeyType::kRight));
  v = e.view(10);  // column 14: same window, cursor on its last cell
  EXPECT_EQ(v.visible, "56789abcde");
  EXPECT_EQ(v.column, 9);
  EXPECT_EQ(e.view(0).visible, "");
}

TEST(LineEditor, ViewShowsNewlinesAndWideCharacters) {
  LineEditor e;
  e.apply(Key{KeyType::kPaste, "a\nb\tc"});
  LineEditor::View v = e.view(20);
  EXPECT_EQ(v.visible,
            "a\xe2\x8f\x8e"
            "b c");
  EXPECT_EQ(v.column, 5);
  e.set_text("\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97");  // 中文字: 6 columns
  v = e.view(20);
  EXPECT_EQ(v.column, 6);
  v = e.view(5);  // column 6 > 4: the window starts at 2 (step 2): 文字
  EXPECT_EQ(v.visible, "\xe6\x96\x87\xe5\xad\x97");
  EXPECT_EQ(v.column, 4);
  e.apply(key(KeyType::kLeft));
  v = e.view(5);  // column 4: the window at 0 shows 中文 (字 would not fit)
  EXPECT_EQ(v.visible, "\xe4\xb8\xad\xe6\x96\x87");
  EXPECT_EQ(v.column, 4);
  e.set_text("a\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97xyz");  // a中文字xyz: cursor at column 10
  v = e.view(6);  // window starts at 6 (step 3): the right half of 字 is a space
  EXPECT_EQ(v.visible, " xyz");
  EXPECT_EQ(v.column, 4);
}

}  // namespace
}  // namespace ds4::tui
