// Protects the approval rule (issue 48 item 2): bash always asks, a write or edit asks only when
// its target lies outside the working directory, reads never ask.
#include "agent/approval.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"

namespace ds4::agent {
namespace {

TEST(Approval, BashAndWritesOutsideTheWorkdirAsk) {
  testing::TempDir dir;
  const Workspace ws(dir.path());
  EXPECT_EQ(approval_reason(ws, {.name = "bash", .params = {{"command", "ls"}}}),
            "run a shell command: ls");
  EXPECT_EQ(approval_reason(ws, {.name = "write", .params = {{"path", "a.txt"}, {"content", ""}}}),
            "");
  EXPECT_EQ(approval_reason(ws, {.name = "edit", .params = {{"path", "../x.txt"}}}),
            "write outside the working directory: ../x.txt");
  EXPECT_EQ(approval_reason(ws, {.name = "read", .params = {{"path", "/etc/passwd"}}}), "");
  EXPECT_EQ(approval_reason(ws, {.name = "bash_stop", .params = {{"job", "1"}}}), "");
  const ToolResult denied = denied_result("run a shell command: ls");
  EXPECT_FALSE(denied.ok);
  EXPECT_EQ(denied.text.rfind("Tool error: the user did not allow this", 0), 0u) << denied.text;
}

}  // namespace
}  // namespace ds4::agent
