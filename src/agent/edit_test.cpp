// Protects: the edit tool's selection rules (features.md §5.2-§5.3: exact unique match, or a
// unique head, one [upto] line and a tail unique after the head), every error it gives, its
// report (line ranges, shift note, context), the preflight, and the [upto] auto-forcer's test
// (§5.5). Real files in a temporary directory.
#include "agent/edit.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"

namespace ds4::agent {
namespace {

using testing::get_file;
using testing::put_file;
using testing::TempDir;

constexpr std::string_view kCode =
    "#include <stdio.h>\n"               // 1
    "\n"                                 // 2
    "int add(int a, int b) {\n"          // 3
    "  return a + b;\n"                  // 4
    "}\n"                                // 5
    "\n"                                 // 6
    "int sub(int a, int b) {\n"          // 7
    "  return a - b;\n"                  // 8
    "}\n"                                // 9
    "\n"                                 // 10
    "int main() {\n"                     // 11
    "  printf(\"%d\\n\", add(1, 2));\n"  // 12
    "  return 0;\n"                      // 13
    "}\n";                               // 14

class EditTest : public ::testing::Test {
 protected:
  void SetUp() override { put_file(dir / "code.c", kCode); }
  ToolResult edit(std::string old_text, std::string new_text) {
    return edit_file(ws, {.path = "code.c", .old_text = old_text, .new_text = new_text});
  }
  // Edits that fail leave the file alone.
  void expect_error(std::string old_text, const std::string& message) {
    const ToolResult r = edit(old_text, "REPLACED");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.text, "Tool error: " + message);
    EXPECT_EQ(get_file(dir / "code.c"), kCode);
    const Status pre = edit_preflight(ws, "code.c", old_text);
    EXPECT_FALSE(pre.is_ok());
    EXPECT_EQ(pre.message(), message);
  }
  TempDir dir;
  Workspace ws{dir.path()};
};

TEST_F(EditTest, ExactReplacementReportsRangeAndContext) {
  const ToolResult r = edit("  return a + b;\n", "  return b + a;\n");
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text,
            "Edited code.c using old/new replacement\n"
            "Replaced old line 4 (now line 4).\n"
            "Context after the edit:\n"
            "2 \n3 int add(int a, int b) {\n4   return b + a;\n5 }\n6 \n");
  std::string want(kCode);
  want.replace(want.find("a + b"), 5, "b + a");
  EXPECT_EQ(get_file(dir / "code.c"), want);
}

TEST_F(EditTest, LineShiftIsReportedWhenTheLineCountChanges) {
  const ToolResult r = edit("  return a - b;\n", "  int d = a - b;\n  return d;\n");
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text,
            "Edited code.c using old/new replacement\n"
            "Replaced old line 8 (now lines 8-9).\n"
            "Lines after old line 8 moved down by 1; line numbers from earlier reads past that "
            "point are stale.\n"
            "Context after the edit:\n"
            "6 \n7 int sub(int a, int b) {\n8   int d = a - b;\n9   return d;\n10 }\n11 \n");
}

TEST_F(EditTest, DeletionReportsTheRemovedLines) {
  const ToolResult r = edit("#include <stdio.h>\n\n", "");
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text,
            "Edited code.c using old/new replacement\n"
            "Removed old lines 1-2.\n"
            "Lines after old line 2 moved up by 2; line numbers from earlier reads past that "
            "point are stale.\n"
            "Context after the edit:\n"
            "1 int add(int a, int b) {\n2   return a + b;\n3 }\n");
  EXPECT_EQ(get_file(dir / "code.c"), std::string(kCode.substr(20)));
}

TEST_F(EditTest, AnchoredReplacementSpansHeadToTail) {
  const ToolResult r = edit("int sub(int a, int b) {\n[upto]\n  return 0;\n}\n",
                            "int nothing(void) { return 0; }\n");
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text,
            "Edited code.c using anchored old/new replacement\n"
            "Replaced old lines 7-14 (now line 7).\n"
            "Lines after old line 14 moved up by 7; line numbers from earlier reads past that "
            "point are stale.\n"
            "Context after the edit:\n"
            "5 }\n6 \n7 int nothing(void) { return 0; }\n");
  EXPECT_EQ(get_file(dir / "code.c"), std::string(kCode.substr(0, kCode.find("int sub"))) +
                                          "int nothing(void) { return 0; }\n");
}

TEST_F(EditTest, AnchorMarkerMayCarryBlanksAndTailLeadingNewlinesAreDropped) {
  const ToolResult r = edit("int add(int a, int b) {\n  [upto] \t\n\n\n  return a + b;\n}", "X");
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_TRUE(
      r.text.starts_with("Edited code.c using anchored old/new replacement\n"
                         "Replaced old lines 3-5 (now line 3).\n"));
  EXPECT_TRUE(get_file(dir / "code.c").starts_with("#include <stdio.h>\n\nX\n\nint sub"));
}

TEST_F(EditTest, UptoInsideALineIsLiteralText) {
  expect_error("int add [upto] {\n",
               "edit: old was not found in code.c; it must match the file exactly, whitespace "
               "included (read the lines again, or use an [upto] anchor)");
}

TEST_F(EditTest, LongNewRegionsAreElidedInTheContext) {
  std::string lines;
  for (int i = 1; i <= 20; ++i) lines += "  n" + std::to_string(i) + "();\n";
  const ToolResult r = edit("  return 0;\n", lines);
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_TRUE(
      r.text.ends_with("Context after the edit:\n"
                       "11 int main() {\n12   printf(\"%d\\n\", add(1, 2));\n"
                       "13   n1();\n14   n2();\n15   n3();\n16   n4();\n...\n"
                       "29   n17();\n30   n18();\n31   n19();\n32   n20();\n33 }\n"))
      << r.text;
}

TEST_F(EditTest, ErrorsOfTheExactForm) {
  expect_error("", "edit: old must not be empty");
  expect_error("  return a * b;\n",
               "edit: old was not found in code.c; it must match the file exactly, whitespace "
               "included (read the lines again, or use an [upto] anchor)");
  expect_error("  return",
               "edit: old matches 3 times in code.c; include more surrounding lines to make it "
               "unique");
}

TEST(Edit, OverlappingOccurrencesAreAmbiguous) {
  TempDir dir;
  put_file(dir / "a.txt", "xaaay\n");
  Workspace ws(dir.path());
  EXPECT_EQ(edit_file(ws, {.path = "a.txt", .old_text = "aa", .new_text = "b"}).text,
            "Tool error: edit: old matches 2 times in a.txt; include more surrounding lines to "
            "make it unique");
}

TEST_F(EditTest, ErrorsOfTheAnchoredForm) {
  expect_error("[upto]\n}\n",
               "edit: the head anchor before [upto] is empty; start old with the first lines of "
               "the block to replace");
  expect_error("int main() {\n[upto]\n",
               "edit: the tail anchor after [upto] is empty; end old with the last lines of the "
               "block to replace (never end old right after [upto])");
  expect_error("int main() {\n[upto]\n\n  \n",
               "edit: the tail anchor after [upto] is empty; end old with the last lines of the "
               "block to replace (never end old right after [upto])");
  expect_error("int add(int a, int b) {\n[upto]\n}\n[upto]\n}\n",
               "edit: old has 2 [upto] lines; use exactly one, between a unique head and a unique "
               "tail");
  expect_error("int mul(int a, int b) {\n[upto]\n}\n",
               "edit: the head anchor (the lines before [upto]) was not found in code.c; it must "
               "match the file exactly, whitespace included");
  expect_error("}\n[upto]\nint main() {\n",
               "edit: the head anchor (the lines before [upto]) matches 3 times in code.c; add "
               "lines to make it unique");
  expect_error("int add(int a, int b) {\n[upto]\n}\n",
               "edit: the tail anchor (the lines after [upto]) matches 3 times after the head in "
               "code.c; add lines to make it unique (avoid generic tails such as a lone closing "
               "brace)");
  // The tail exists, but only before the head.
  expect_error("int sub(int a, int b) {\n[upto]\nint add(int a, int b) {\n",
               "edit: the tail anchor (the lines after [upto]) was not found after the head in "
               "code.c");
}

TEST_F(EditTest, PreflightAcceptsWhatTheEditWouldApply) {
  EXPECT_TRUE(edit_preflight(ws, "code.c", "int main() {\n").is_ok());
  EXPECT_TRUE(
      edit_preflight(ws, "code.c", "int sub(int a, int b) {\n[upto]\n  return 0;\n").is_ok());
  const Status missing = edit_preflight(ws, "nope.c", "x");
  EXPECT_EQ(missing.message(), "cannot open nope.c: No such file or directory");
  EXPECT_EQ(get_file(dir / "code.c"), kCode);
}

TEST_F(EditTest, MissingFileIsAnError) {
  const ToolResult r = edit_file(ws, {.path = "nope.c", .old_text = "x", .new_text = "y"});
  EXPECT_EQ(r.text, "Tool error: cannot open nope.c: No such file or directory");
}

constexpr std::string_view kLong =
    "void first_function_with_a_long_name(int argument) {\n"
    "  do_something_with(argument);\n"
    "  do_something_else_with(argument);\n"
    "}\n"
    "void second_function_with_a_long_name(int argument) {\n"
    "  do_something_with(argument);\n"
    "  do_something_else_with(argument);\n"
    "}\n";

TEST(UptoForcer, FiresOnceALongMultiLinePrefixIsUniqueAtALineBreak) {
  const std::string unique =
      "void first_function_with_a_long_name(int argument) {\n  do_something_with(argument);\n";
  ASSERT_GE(unique.size(), kUptoMinPrefixBytes);
  EXPECT_TRUE(upto_prefix_ready(kLong, unique));
  // Not at a line break yet.
  EXPECT_FALSE(upto_prefix_ready(kLong, unique.substr(0, unique.size() - 1)));
  // Long and at a line break, but it matches twice.
  const std::string twice = "  do_something_with(argument);\n  do_something_else_with(argument);\n";
  ASSERT_GE(twice.size(), kUptoMinPrefixBytes);
  EXPECT_FALSE(upto_prefix_ready(kLong, twice));
  // Unique, two lines, but short.
  const std::string short_prefix = "}\nvoid second_function_with_a_long_name(int argument) {\n";
  ASSERT_LT(short_prefix.size(), kUptoMinPrefixBytes);
  EXPECT_FALSE(upto_prefix_ready(kLong, short_prefix));
  // Not in the file.
  EXPECT_FALSE(upto_prefix_ready(kLong, unique + "  something_new();\n"));
  // Already anchored.
  EXPECT_FALSE(upto_prefix_ready(std::string(kLong) + "[upto]\n", unique + "[upto]\n"));
}

TEST(UptoForcer, NeedsTwoNonBlankLines) {
  const std::string one_line(70, 'x');
  const std::string content = one_line + "\n\n\nyy\n";
  EXPECT_FALSE(upto_prefix_ready(content, one_line + "\n\n"));
  EXPECT_TRUE(upto_prefix_ready(content, one_line + "\n\n\nyy\n"));
}

TEST(UptoForcer, ReadsTheTargetFile) {
  TempDir dir;
  put_file(dir / "f.c", kLong);
  Workspace ws(dir.path());
  const std::string unique =
      "void first_function_with_a_long_name(int argument) {\n  do_something_with(argument);\n";
  EXPECT_TRUE(upto_prefix_ready(ws, "f.c", unique));
  EXPECT_FALSE(upto_prefix_ready(ws, "missing.c", unique));
}

}  // namespace
}  // namespace ds4::agent
