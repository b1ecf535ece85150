// Tests of the streamed edit watch: the [upto] auto-forcer and the edit preflight.
#include "agent/edit_watch.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"

namespace ds4::agent {
namespace {

using testing::put_file;
using testing::TempDir;

constexpr std::string_view kOpen = "<｜DSML｜";
constexpr std::string_view kClose = "</｜DSML｜";

std::string tag(std::string_view t) { return std::string(kOpen) + std::string(t); }
std::string end(std::string_view t) { return std::string(kClose) + std::string(t); }
std::string param_open(std::string_view name) {
  return tag("parameter name=\"") + std::string(name) + "\" string=\"true\">";
}

// Feeds `text` in pieces of `piece` bytes (never splitting a UTF-8 character), collecting the
// actions; stops at the first preflight error.
struct Fed {
  std::string forced_after;  // the text fed before the first force
  std::string preflight;
};
Fed feed(EditWatch& w, std::string_view text, size_t piece) {
  Fed out;
  size_t at = 0;
  while (at < text.size()) {
    size_t n = std::min(piece, text.size() - at);
    while (at + n < text.size() && (static_cast<unsigned char>(text[at + n]) & 0xC0) == 0x80) ++n;
    EditWatch::Action a = w.feed(text.substr(at, n));
    at += n;
    if (!a.force.empty() && out.forced_after.empty()) {
      EXPECT_EQ(a.force, "[upto]\n");
      out.forced_after = std::string(text.substr(0, at));
    }
    if (!a.preflight.empty()) {
      out.preflight = a.preflight;
      break;
    }
  }
  return out;
}

class EditWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string body;
    for (int i = 1; i <= 40; ++i) body += "statement number " + std::to_string(i) + " here;\n";
    put_file(dir_ / "code.txt", body);
  }
  std::string edit_head() const {
    return "Editing.\n\n" + tag("tool_calls>\n") + tag("invoke name=\"edit\">\n") +
           param_open("path") + "code.txt" + end("parameter>\n") + param_open("old");
  }
  TempDir dir_;
  Workspace ws_{dir_.path()};
};

TEST_F(EditWatchTest, ForcesUptoOnceTheHeadIsUniqueAndLongEnough) {
  EditWatch w(ws_, false);
  const std::string text = edit_head() +
                           "statement number 10 here;\nstatement number 11 here;\n"
                           "statement number 12 here;\n";
  const Fed f = feed(w, text, 3);
  // The head is unique after line 11 (2 non-blank lines, >= 64 bytes at line 12: 75 bytes).
  ASSERT_FALSE(f.forced_after.empty());
  EXPECT_TRUE(f.forced_after.ends_with("statement number 12 here;\n")) << f.forced_after;
  EXPECT_TRUE(f.preflight.empty());
}

TEST_F(EditWatchTest, NoForceForShortOrAmbiguousHeadsOrOtherTools) {
  {
    EditWatch w(ws_, false);
    // "here;\n" lines repeat: a prefix of common lines is not unique.
    const Fed f = feed(w, edit_head() + "here;\n", 1);
    EXPECT_TRUE(f.forced_after.empty());
  }
  {
    EditWatch w(ws_, false);
    const std::string write = tag("tool_calls>\n") + tag("invoke name=\"write\">\n") +
                              param_open("path") + "code.txt" + end("parameter>\n") +
                              param_open("old") +
                              "statement number 10 here;\nstatement number 11 here;\n"
                              "statement number 12 here;\n";
    EXPECT_TRUE(feed(w, write, 5).forced_after.empty());
  }
}

TEST_F(EditWatchTest, PreflightStopsAnOldTextThatMatchesNothing) {
  EditWatch w(ws_, false);
  const Fed f =
      feed(w, edit_head() + "no such line\n" + end("parameter>\n") + param_open("new"), 4);
  EXPECT_TRUE(f.forced_after.empty());
  EXPECT_NE(f.preflight.find("code.txt"), std::string::npos) << f.preflight;
  const std::string msg = preflight_result(f.preflight);
  EXPECT_TRUE(msg.starts_with("Tool result 1 (edit):\nTool error: ")) << msg;
}

TEST_F(EditWatchTest, AMatchingOldTextPassesThePreflight) {
  EditWatch w(ws_, false);
  const Fed f = feed(
      w, edit_head() + "statement number 7 here;\n" + end("parameter>\n") + param_open("new"), 2);
  EXPECT_TRUE(f.preflight.empty());
  EXPECT_TRUE(f.forced_after.empty());
}

TEST_F(EditWatchTest, AMissingFileFailsThePreflight) {
  EditWatch w(ws_, false);
  const std::string text = tag("tool_calls>\n") + tag("invoke name=\"edit\">\n") +
                           param_open("path") + "nope.txt" + end("parameter>\n") +
                           param_open("old") + "x" + end("parameter>\n");
  EXPECT_FALSE(feed(w, text, 7).preflight.empty());
}

}  // namespace
}  // namespace ds4::agent
