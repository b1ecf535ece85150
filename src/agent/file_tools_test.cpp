// Protects: the read/more reading protocol (features.md §5.2: 500-line chunks, continue_offset,
// the same mode on `more`), raw reads, the 16 MiB cap, crash-safe writes, list, and the
// outside-the-workspace test the agent asks approval on. Real files in a temporary directory.
#include "agent/file_tools.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "agent/file_io.h"
#include "agent/test_util.h"

namespace ds4::agent {
namespace {

using testing::get_file;
using testing::numbered_lines;
using testing::put_file;
using testing::TempDir;

class FileToolsTest : public ::testing::Test {
 protected:
  TempDir dir;
  Workspace ws{dir.path()};
  ReadCursor cursor;

  ToolResult read(ReadRequest req) { return read_file(ws, req, &cursor); }
};

TEST_F(FileToolsTest, ReadNumbersEveryLine) {
  put_file(dir / "f.txt", "alpha\nbeta\n\ngamma\n");
  const ToolResult r = read({.path = "f.txt"});
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text, "f.txt: lines 1-4 of 4\n1 alpha\n2 beta\n3 \n4 gamma\n");
}

TEST_F(FileToolsTest, ReadCountsALastLineWithoutNewline) {
  put_file(dir / "f.txt", "one\ntwo");
  EXPECT_EQ(read({.path = "f.txt"}).text, "f.txt: lines 1-2 of 2\n1 one\n2 two\n");
  put_file(dir / "e.txt", "");
  EXPECT_EQ(read({.path = "e.txt"}).text, "e.txt: empty file (0 lines)\n");
}

TEST_F(FileToolsTest, ReadAndMorePageThroughTheDefaultChunks) {
  put_file(dir / "big.txt", numbered_lines(1200));
  ToolResult r = read({.path = "big.txt"});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.text.substr(0, r.text.find('\n')),
            "big.txt: lines 1-500 of 1200; continue_offset=501; call more with count=500 to read "
            "the next chunk");
  EXPECT_NE(r.text.find("\n1 line 1\n"), std::string::npos);
  EXPECT_TRUE(r.text.ends_with("\n500 line 500\n"));
  EXPECT_EQ(r.text.find("501 line 501"), std::string::npos);

  r = read_more(ws, kDefaultReadLines, &cursor);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.text.starts_with(
      "big.txt: lines 501-1000 of 1200; continue_offset=1001; call more with count=200 to read "
      "the next chunk\n501 line 501\n"));
  EXPECT_TRUE(r.text.ends_with("\n1000 line 1000\n"));

  r = read_more(ws, kDefaultReadLines, &cursor);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.text.starts_with("big.txt: lines 1001-1200 of 1200\n1001 line 1001\n"));
  EXPECT_TRUE(r.text.ends_with("\n1200 line 1200\n"));

  r = read_more(ws, kDefaultReadLines, &cursor);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text,
            "Tool error: more: nothing left to read; big.txt has 1200 lines and the last read "
            "ended at line 1200");
}

TEST_F(FileToolsTest, ReadHonoursStartMaxAndWhole) {
  put_file(dir / "big.txt", numbered_lines(1200));
  ToolResult r = read({.path = "big.txt", .start_line = 10, .max_lines = 3});
  EXPECT_EQ(r.text,
            "big.txt: lines 10-12 of 1200; continue_offset=13; call more with count=3 to read the "
            "next chunk\n10 line 10\n11 line 11\n12 line 12\n");
  r = read_more(ws, 2, &cursor);
  EXPECT_TRUE(r.text.starts_with("big.txt: lines 13-14 of 1200; continue_offset=15;")) << r.text;

  r = read({.path = "big.txt", .start_line = 700, .whole = true});
  EXPECT_TRUE(r.text.starts_with("big.txt: lines 1-1200 of 1200\n1 line 1\n"));

  r = read({.path = "big.txt", .start_line = 1201});
  EXPECT_EQ(r.text, "Tool error: read: start_line 1201 is past the end of big.txt (1200 lines)");
}

TEST_F(FileToolsTest, RawReadsAreVerbatimAndMoreKeepsTheMode) {
  put_file(dir / "r.txt", "a  \tb\r\n  c\nd");
  ToolResult r = read({.path = "r.txt", .raw = true});
  EXPECT_EQ(r.text, "a  \tb\r\n  c\nd");

  r = read({.path = "r.txt", .max_lines = 2, .raw = true});
  EXPECT_EQ(r.text,
            "a  \tb\r\n  c\n[lines 1-2 of 3 shown; continue_offset=3; call more with count=1 to "
            "read the next chunk]\n");
  r = read_more(ws, 10, &cursor);
  EXPECT_EQ(r.text, "d");
}

TEST_F(FileToolsTest, MoreWithoutAReadIsAnError) {
  const ToolResult r = read_more(ws, 10, &cursor);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text, "Tool error: more: there is no previous read to continue (use read)");
}

TEST_F(FileToolsTest, ReadErrorsNameThePath) {
  EXPECT_EQ(read({.path = "missing.txt"}).text,
            "Tool error: cannot open missing.txt: No such file or directory");
  std::filesystem::create_directory(dir / "sub");
  EXPECT_EQ(read({.path = "sub"}).text, "Tool error: sub is a directory (use list)");
  EXPECT_EQ(read({.path = ""}).text, "Tool error: read: path is empty");
  EXPECT_FALSE(cursor.valid);  // failed reads leave no cursor
}

TEST_F(FileToolsTest, ReadsStopAtSixteenMebibytes) {
  // Sparse files: no disk blocks behind the holes, so this costs nothing but the read of the one
  // at the limit (16 MiB of zeros, one line).
  for (const auto& [name, size] :
       {std::pair{"at_cap.bin", kMaxReadBytes}, std::pair{"over_cap.bin", kMaxReadBytes + 1}}) {
    const int fd = ::open((dir / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    ::close(fd);
  }
  const ToolResult over = read({.path = "over_cap.bin"});
  EXPECT_FALSE(over.ok);
  EXPECT_EQ(over.text,
            "Tool error: over_cap.bin is 16777217 bytes, over the 16 MiB limit of what the file "
            "tools load (use bash with head, tail, grep or sed for files this large)");
  const ToolResult at = read({.path = "at_cap.bin", .raw = true});
  ASSERT_TRUE(at.ok) << at.text.substr(0, 200);
  EXPECT_EQ(at.text.size(), kMaxReadBytes);
}

TEST_F(FileToolsTest, WriteCreatesParentsAndReportsBytes) {
  const ToolResult r = write_file(ws, "new/deep/file.txt", "hello");
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text, "Wrote 5 bytes to new/deep/file.txt");
  EXPECT_EQ(get_file(dir / "new/deep/file.txt"), "hello");
  EXPECT_EQ(write_file(ws, "new/deep/file.txt", "").text, "Wrote 0 bytes to new/deep/file.txt");
  EXPECT_EQ(get_file(dir / "new/deep/file.txt"), "");
}

TEST_F(FileToolsTest, WriteReplacesAtomicallyKeepingModeAndSymlinks) {
  put_file(dir / "script.sh", "old");
  ASSERT_EQ(::chmod((dir / "script.sh").c_str(), 0750), 0);
  ASSERT_TRUE(write_file(ws, "script.sh", "#!/bin/sh\n").ok);
  struct stat st;
  ASSERT_EQ(::stat((dir / "script.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(get_file(dir / "script.sh"), "#!/bin/sh\n");

  std::filesystem::create_symlink("script.sh", dir / "link.sh");
  ASSERT_TRUE(write_file(ws, "link.sh", "via link").ok);
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.sh"));
  EXPECT_EQ(get_file(dir / "script.sh"), "via link");

  // No temporary file is left beside the targets.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2);

  std::filesystem::create_directory(dir / "adir");
  EXPECT_EQ(write_file(ws, "adir", "x").text, "Tool error: adir is a directory");
  EXPECT_EQ(write_file(ws, "", "x").text, "Tool error: write: path is empty");
}

TEST_F(FileToolsTest, ListShowsTypeSizeAndNameSorted) {
  put_file(dir / "b.txt", "123");
  std::filesystem::create_directory(dir / "a_dir");
  std::filesystem::create_symlink("b.txt", dir / "c_link");
  ASSERT_EQ(::mkfifo((dir / "d_fifo").c_str(), 0600), 0);
  struct stat d;
  ASSERT_EQ(::lstat((dir / "a_dir").c_str(), &d), 0);
  EXPECT_EQ(list_dir(ws, ".").text,
            ".:\nd " + std::to_string(d.st_size) + " a_dir/\n- 3 b.txt\nl 5 c_link\n? 0 d_fifo\n");
  std::filesystem::create_directory(dir / "empty");
  EXPECT_EQ(list_dir(ws, "empty").text, "empty:\n(empty)\n");
  EXPECT_EQ(list_dir(ws, "nope").text, "Tool error: cannot list nope: No such file or directory");
}

TEST_F(FileToolsTest, ListStopsAtThreeHundredEntries) {
  for (int i = 0; i < 305; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "f%03d", i);
    put_file(dir / name, "");
  }
  const std::string text = list_dir(ws, ".").text;
  EXPECT_TRUE(text.starts_with(".:\n- 0 f000\n- 0 f001\n"));
  EXPECT_NE(text.find("- 0 f299\n"), std::string::npos);
  EXPECT_EQ(text.find("f300"), std::string::npos);
  EXPECT_TRUE(text.ends_with("- 0 f299\n... more entries omitted ...\n"));
}

TEST(Workspace, RelativePathsResolveAgainstTheWorkdirNotTheProcess) {
  TempDir dir;
  put_file(dir / "only_here.txt", "x\n");
  Workspace ws(dir.path());
  EXPECT_EQ(ws.workdir(), dir.path());
  EXPECT_EQ(ws.resolve("only_here.txt"), dir / "only_here.txt");
  EXPECT_EQ(ws.resolve("/abs/path"), "/abs/path");
  ReadCursor cursor;
  EXPECT_TRUE(read_file(ws, {.path = "only_here.txt"}, &cursor).ok);
}

TEST(Workspace, OutsideWorkdirResolvesDotDotAndSymlinks) {
  TempDir dir, other;
  std::filesystem::create_directory(dir / "sub");
  std::filesystem::create_directory_symlink(other.path(), dir / "escape");
  std::filesystem::create_directory_symlink(dir / "sub", dir / "inner");
  Workspace ws(dir.path());
  EXPECT_FALSE(ws.outside_workdir("a.txt"));
  EXPECT_FALSE(ws.outside_workdir("new/dir/a.txt"));
  EXPECT_FALSE(ws.outside_workdir("sub/../a.txt"));
  EXPECT_FALSE(ws.outside_workdir("."));
  EXPECT_FALSE(ws.outside_workdir(dir / "sub/x.txt"));
  EXPECT_FALSE(ws.outside_workdir("inner/x.txt"));
  EXPECT_TRUE(ws.outside_workdir("../x.txt"));
  EXPECT_TRUE(ws.outside_workdir("sub/../../x.txt"));
  EXPECT_TRUE(ws.outside_workdir("/etc/passwd"));
  EXPECT_TRUE(ws.outside_workdir("escape/x.txt"));
  EXPECT_TRUE(ws.outside_workdir("escape/new/x.txt"));
  // "inner/.." is the directory above sub/ once the link is followed: still inside.
  EXPECT_FALSE(ws.outside_workdir("inner/../x.txt"));
  // Lexically "escape/.." is the workdir, but the link leads elsewhere first.
  EXPECT_TRUE(ws.outside_workdir("escape/../x.txt"));
  // A sibling whose name extends the workdir's is not below it.
  EXPECT_TRUE(ws.outside_workdir(dir.path() + "-other/x.txt"));

  // A workdir reached through a symlink is compared by its real path.
  std::filesystem::create_directory_symlink(dir.path(), other / "alias");
  Workspace via_link(other / "alias");
  EXPECT_EQ(via_link.workdir(), dir.path());
  EXPECT_FALSE(via_link.outside_workdir(other / "alias/a.txt"));
  EXPECT_TRUE(via_link.outside_workdir(other / "a.txt"));
}

}  // namespace
}  // namespace ds4::agent
