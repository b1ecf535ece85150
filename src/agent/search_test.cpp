// Protects: the search tool (features.md §5.3): literal and POSIX extended regex matching in
// either case, globs on base names and relative paths, context lines, max_results, the skipped
// .git directories and binary files, the depth limit, sorted output and the error messages.
// Real files in a temporary directory.
#include "agent/search.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "agent/test_util.h"

namespace ds4::agent {
namespace {

using testing::put_file;
using testing::TempDir;

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    put_file(dir / "src/a.cpp", "int foo() {\n  return 1;\n}\nint bar() { return foo(); }\n");
    put_file(dir / "src/b.h", "// FOO header\nint foo();\n");
    put_file(dir / "src/deep/c.txt", "nothing\nfoo here\n");
    put_file(dir / ".git/config", "foo in git\n");
    put_file(dir / "src/.git", "gitdir: foo\n");  // a worktree's .git file is skipped too
    put_file(dir / "bin.dat", std::string("foo\0binary\n", 11));
    put_file(dir / "README.md", "Foo is documented\n");
  }
  ToolResult search(SearchRequest req) { return search_files(ws, req); }
  TempDir dir;
  Workspace ws{dir.path()};
};

TEST_F(SearchTest, LiteralSearchListsFilesInSortedOrder) {
  const ToolResult r = search({.query = "foo"});
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text,
            "4 matches shown\n"
            "src/a.cpp\n  1 int foo() {\n  4 int bar() { return foo(); }\n\n"
            "src/b.h\n  2 int foo();\n\n"
            "src/deep/c.txt\n  2 foo here\n");
}

TEST_F(SearchTest, CaseInsensitiveLiteral) {
  const ToolResult r = search({.query = "FOO", .case_sensitive = false});
  EXPECT_EQ(r.text,
            "6 matches shown\n"
            "README.md\n  1 Foo is documented\n\n"
            "src/a.cpp\n  1 int foo() {\n  4 int bar() { return foo(); }\n\n"
            "src/b.h\n  1 // FOO header\n  2 int foo();\n\n"
            "src/deep/c.txt\n  2 foo here\n");
}

TEST_F(SearchTest, RegexIsPosixExtended) {
  EXPECT_EQ(search({.query = "^int (foo|bar)\\(", .mode = "regex"}).text,
            "3 matches shown\n"
            "src/a.cpp\n  1 int foo() {\n  4 int bar() { return foo(); }\n\n"
            "src/b.h\n  2 int foo();\n");
  EXPECT_EQ(search({.query = "^foo", .mode = "regex", .case_sensitive = false}).text,
            "2 matches shown\nREADME.md\n  1 Foo is documented\n\nsrc/deep/c.txt\n  2 foo here\n");
  const ToolResult bad = search({.query = "(unclosed", .mode = "regex"});
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(bad.text.starts_with("Tool error: search: invalid regex '(unclosed': ")) << bad.text;
}

TEST_F(SearchTest, GlobMatchesBaseNameOrRelativePath) {
  EXPECT_EQ(search({.query = "foo", .glob = "*.h"}).text,
            "1 matches shown\nsrc/b.h\n  2 int foo();\n");
  EXPECT_EQ(search({.query = "foo", .glob = "src/deep/*"}).text,
            "1 matches shown\nsrc/deep/c.txt\n  2 foo here\n");
  // Below a sub-path, both the path under it and the path as shown are tried.
  EXPECT_EQ(search({.query = "foo", .path = "src", .glob = "deep/*.txt"}).text,
            "1 matches shown\nsrc/deep/c.txt\n  2 foo here\n");
  EXPECT_EQ(search({.query = "foo", .path = "src/", .glob = "src/*.cpp"}).text,
            "2 matches shown\nsrc/a.cpp\n  1 int foo() {\n  4 int bar() { return foo(); }\n");
  EXPECT_EQ(search({.query = "foo", .glob = "*.py"}).text, "No matches\n");
}

TEST_F(SearchTest, ContextLinesMergeAndSeparateGroups) {
  put_file(dir / "ctx.txt", "l1\nl2\nhit3\nl4\nhit5\nl6\nl7\nl8\nhit9\nl10\n");
  EXPECT_EQ(search({.query = "hit", .path = "ctx.txt", .context = 1}).text,
            "3 matches shown\nctx.txt\n"
            "  2- l2\n  3 hit3\n  4- l4\n  5 hit5\n  6- l6\n  --\n  8- l8\n  9 hit9\n  10- l10\n");
  // Context is clamped to 5 lines and to the file.
  EXPECT_EQ(search({.query = "hit9", .path = "ctx.txt", .context = 99}).text,
            "1 matches shown\nctx.txt\n"
            "  4- l4\n  5- hit5\n  6- l6\n  7- l7\n  8- l8\n  9 hit9\n  10- l10\n");
}

TEST_F(SearchTest, MaxResultsStopsTheSearchAndSaysSo) {
  put_file(dir / "many.txt", testing::numbered_lines(10, "match "));
  EXPECT_EQ(search({.query = "match", .path = "many.txt", .max_results = 3}).text,
            "3 matches shown (max_results reached; more matches exist: narrow the search)\n"
            "many.txt\n  1 match 1\n  2 match 2\n  3 match 3\n");
  EXPECT_EQ(search({.query = "match", .path = "many.txt", .max_results = 10}).text.substr(0, 16),
            "10 matches shown");
}

TEST_F(SearchTest, SkipsGitAndBinaryFilesButSearchesAFileNamedDirectly) {
  const std::string all = search({.query = "foo"}).text;
  EXPECT_EQ(all.find("git"), std::string::npos);
  EXPECT_EQ(all.find("bin.dat"), std::string::npos);
  EXPECT_EQ(search({.query = "foo", .path = "bin.dat"}).text, "No matches\n");
  EXPECT_EQ(search({.query = "return", .path = "src/a.cpp"}).text,
            "2 matches shown\nsrc/a.cpp\n  2   return 1;\n  4 int bar() { return foo(); }\n");
}

TEST_F(SearchTest, LongLinesAreCut) {
  put_file(dir / "wide.txt", "needle" + std::string(1000, 'z') + "\n");
  const std::string text = search({.query = "needle", .path = "wide.txt"}).text;
  EXPECT_EQ(text, "1 matches shown\nwide.txt\n  1 needle" +
                      std::string(kMaxShownLineBytes - 6, 'z') + " [...]\n");
}

TEST_F(SearchTest, DepthIsLimited) {
  std::string path = "nest";
  for (int depth = 2; depth < kMaxSearchDepth; ++depth) path += "/d";
  put_file(dir / (path + "/found.txt"), "deep needle\n");     // 24 components below the root
  put_file(dir / (path + "/d/lost.txt"), "deeper needle\n");  // 25
  const std::string text = search({.query = "needle"}).text;
  EXPECT_NE(text.find("found.txt"), std::string::npos) << text;
  EXPECT_EQ(text.find("lost.txt"), std::string::npos) << text;
}

TEST_F(SearchTest, Errors) {
  EXPECT_EQ(search({.query = "x", .mode = "fuzzy"}).text,
            "Tool error: search: unknown mode 'fuzzy' (use literal or regex)");
  EXPECT_EQ(search({.query = "x", .path = "nope"}).text,
            "Tool error: search: cannot access nope: No such file or directory");
  EXPECT_EQ(search({.query = ""}).text, "Tool error: search: query is empty");
}

}  // namespace
}  // namespace ds4::agent
