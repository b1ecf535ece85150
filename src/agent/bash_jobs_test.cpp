// Protects: the agent's shell jobs (features.md §5.4): the observation format (status line, whole
// output of a small finished job, output_path with head on the first look and tail on later
// ones), exit statuses (signals as 128+N), timeouts, bash_stop's SIGTERM-then-SIGKILL of the whole
// process group, the cancel callback, reaping (no zombies) and the destructor's cleanup. Real
// processes under /bin/sh; nothing is mocked.
#include "agent/bash_jobs.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <regex>
#include <thread>

#include "agent/dispatch.h"
#include "agent/test_util.h"

namespace ds4::agent {
namespace {

using testing::get_file;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

const CancelFn kNoCancel;
const CancelFn kDontWait = [] { return true; };  // report at once; the job keeps running

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
std::string after_first_line(const std::string& text) { return text.substr(text.find('\n') + 1); }

pid_t pid_of(const std::string& report) {
  std::smatch m;
  const std::string line = first_line(report);
  return std::regex_search(line, m, std::regex(" pid=([0-9]+) ")) ? std::stoi(m[1]) : -1;
}

std::string output_path_of(const std::string& report) {
  std::smatch m;
  return std::regex_search(report, m, std::regex("output_path=(\\S+) ")) ? m[1].str() : "";
}

// Processes of group `pgid` that have not exited (zombies, which only wait for their parent to
// reap them, are not counted), read from /proc.
// A /proc file's text, "" once the process is gone (reading a dying process's stat fails with
// ESRCH, which an ifstream turns into an exception).
std::string proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int live_group_members(pid_t pgid) {
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return -1;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string stat = proc_file(std::string("/proc/") + e->d_name + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
        pgrp == pgid && state != 'Z' && state != 'X')
      ++n;
  }
  ::closedir(d);
  return n;
}

// Killed processes take a moment to finish exiting; give them up to a second.
bool group_gone(pid_t pgid) {
  for (int i = 0; i < 100; ++i) {
    if (live_group_members(pgid) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// True once the agent has reaped `pid`: it is no longer our child at all.
bool reaped(pid_t pid) {
  int st = 0;
  return ::waitpid(pid, &st, WNOHANG) < 0 && errno == ECHILD;
}

class BashJobsTest : public ::testing::Test {
 protected:
  // Polls bash_status until the job's report says done (each look is an observation).
  std::string status_until_done(int64_t job) {
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
    std::string text;
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      text = jobs.status(job).text;
    } while (text.find("status=running") != std::string::npos && Clock::now() < give_up);
    return text;
  }
  TempDir dir;
  BashJobs jobs{{.output_dir = dir.path()}};
};

TEST_F(BashJobsTest, FastJobShowsItsWholeOutputAndIsReaped) {
  const ToolResult r = jobs.run("echo hello; echo oops >&2", 60, 5, kNoCancel);
  ASSERT_TRUE(r.ok) << r.text;
  EXPECT_TRUE(std::regex_match(first_line(r.text),
                               std::regex("bash job=1 pid=[0-9]+ status=done "
                                          "elapsed_sec=[0-9]+\\.[0-9] timed_out=0 exit_status=0")))
      << r.text;
  EXPECT_EQ(after_first_line(r.text), "<output>\nhello\noops\n</output>\n");
  EXPECT_TRUE(jobs.job_ids().empty());  // reported done, so forgotten
  EXPECT_TRUE(reaped(pid_of(r.text)));

  // Ids keep counting; empty output and a missing final newline.
  const ToolResult empty = jobs.run("true", 60, 5, kNoCancel);
  EXPECT_TRUE(first_line(empty.text).starts_with("bash job=2 ")) << empty.text;
  EXPECT_EQ(after_first_line(empty.text), "<output>\n</output>\n");
  EXPECT_EQ(after_first_line(jobs.run("printf abc", 60, 5, kNoCancel).text),
            "<output>\nabc\n</output>\n");
}

TEST_F(BashJobsTest, OutputGoesToAFileInTheOutputDirectory) {
  const ToolResult r = jobs.run("seq 1 101", 60, 5, kNoCancel);
  const std::string path = output_path_of(r.text);
  ASSERT_TRUE(path.starts_with(dir / "ds4_agent_output_")) << r.text;
  std::string all;
  for (int i = 1; i <= 101; ++i) all += std::to_string(i) + "\n";
  EXPECT_EQ(get_file(path), all);
  // 101 lines: too many to show whole, so the first look is the head.
  std::string head;
  for (int i = 1; i <= 100; ++i) head += std::to_string(i) + "\n";
  EXPECT_EQ(after_first_line(r.text), "output_path=" + path + " (" + std::to_string(all.size()) +
                                          " bytes, 101 lines)\n<head -100 " + path + ">\n" + head +
                                          "</head>\n");
  // 100 lines fit.
  EXPECT_TRUE(after_first_line(jobs.run("seq 1 100", 60, 5, kNoCancel).text)
                  .starts_with("<output>\n1\n2\n"));
}

TEST_F(BashJobsTest, HeadStopsAtEightKibibytes) {
  // 60 lines of 200 bytes: few lines, but 12,000 bytes.
  const ToolResult r = jobs.run(
      "i=0; while [ $i -lt 60 ]; do printf '%0199d\\n' $i; "
      "i=$((i+1)); done",
      60, 5, kNoCancel);
  ASSERT_NE(r.text.find("(12000 bytes, 60 lines)"), std::string::npos) << r.text;
  const size_t open = r.text.find(">\n", r.text.find("<head -100 ")) + 2;
  const size_t close = r.text.find("</head>");
  EXPECT_EQ(close - open, kHeadBytes + 1);  // the bytes, cut mid-line, and a line break
}

TEST_F(BashJobsTest, RunningJobReportsHeadThenTailsUntilDone) {
  const ToolResult first = jobs.run("seq 1 150; sleep 2; seq 151 175", 60, 1, kNoCancel);
  ASSERT_TRUE(
      std::regex_match(first_line(first.text), std::regex("bash job=1 pid=[0-9]+ status=running "
                                                          "elapsed_sec=[0-9.]+ timeout_sec=60")))
      << first.text;
  const std::string path = output_path_of(first.text);
  EXPECT_NE(first.text.find("output_path=" + path + " (492 bytes, 150 lines)\n<head -100 " + path +
                            ">\n1\n2\n"),
            std::string::npos)
      << first.text;
  EXPECT_NE(first.text.find("\n99\n100\n</head>\n"), std::string::npos) << first.text;
  EXPECT_TRUE(first.text.ends_with(
      "Job 1 is still running: call bash_status job=1 to check it again, or bash_stop job=1 to "
      "stop it.\n"));
  EXPECT_EQ(jobs.job_ids(), std::vector<int64_t>{1});
  EXPECT_NE(jobs.summary().find("bash job=1 pid="), std::string::npos);

  const std::string running = jobs.status(1).text;
  EXPECT_NE(running.find("status=running"), std::string::npos) << running;
  EXPECT_NE(running.find("<tail -4 " + path + ">\n147\n148\n149\n150\n</tail>\n"),
            std::string::npos)
      << running;

  const std::string done = status_until_done(1);
  EXPECT_NE(done.find("status=done"), std::string::npos) << done;
  EXPECT_NE(done.find(" timed_out=0 exit_status=0"), std::string::npos) << done;
  std::string tail;
  for (int i = 156; i <= 175; ++i) tail += std::to_string(i) + "\n";
  EXPECT_NE(done.find("(592 bytes, 175 lines)\n<tail -20 " + path + ">\n" + tail + "</tail>\n"),
            std::string::npos)
      << done;
  EXPECT_EQ(done.find("still running"), std::string::npos);
  EXPECT_TRUE(jobs.job_ids().empty());
  EXPECT_EQ(jobs.status(1).text,
            "Tool error: bash_status: no job 1 (a finished job is removed once its end has been "
            "reported)");
}

TEST_F(BashJobsTest, ExitStatusesAndSignals) {
  EXPECT_NE(first_line(jobs.run("exit 3", 60, 5, kNoCancel).text).find(" exit_status=3"),
            std::string::npos);
  EXPECT_NE(first_line(jobs.run("kill -9 $$", 60, 5, kNoCancel).text).find(" exit_status=137"),
            std::string::npos);
  EXPECT_NE(first_line(jobs.run("kill -TERM $$", 60, 5, kNoCancel).text).find(" exit_status=143"),
            std::string::npos);
}

TEST_F(BashJobsTest, TimeoutKillsTheGroup) {
  const Clock::time_point t0 = Clock::now();
  const ToolResult r = jobs.run("sleep 30 & sleep 30; wait", 1, 5, kNoCancel);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_NE(first_line(r.text).find(" status=done "), std::string::npos) << r.text;
  EXPECT_NE(first_line(r.text).find(" timed_out=1 exit_status=137"), std::string::npos) << r.text;
  EXPECT_LT(took, 3.0);  // the 1 s timeout, not the 5 s refresh nor the 30 s sleeps
  EXPECT_TRUE(group_gone(pid_of(r.text)));
}

TEST_F(BashJobsTest, StopTerminatesTheWholeGroup) {
  const ToolResult started = jobs.run("sleep 100 & sleep 100 & wait", 60, 5, kDontWait);
  ASSERT_NE(started.text.find("status=running"), std::string::npos) << started.text;
  const pid_t pgid = pid_of(started.text);
  for (int i = 0; i < 100 && live_group_members(pgid) < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(live_group_members(pgid), 3);  // the shell and both sleeps

  const Clock::time_point t0 = Clock::now();
  const ToolResult stopped = jobs.stop(1);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 0.9);  // no SIGKILL needed
  EXPECT_NE(first_line(stopped.text).find(" status=done "), std::string::npos) << stopped.text;
  EXPECT_NE(first_line(stopped.text).find(" exit_status=143"), std::string::npos) << stopped.text;
  EXPECT_TRUE(group_gone(pgid));
  EXPECT_TRUE(reaped(pgid));
  EXPECT_TRUE(jobs.job_ids().empty());
  EXPECT_EQ(jobs.stop(1).text,
            "Tool error: bash_stop: no job 1 (a finished job is removed once its end has been "
            "reported)");
}

TEST_F(BashJobsTest, StopEscalatesToSigkillAfterTheGrace) {
  // The ignored SIGTERM is inherited by the sleep too.
  const ToolResult started = jobs.run("trap '' TERM; echo ready; sleep 100", 60, 5, kDontWait);
  const pid_t pgid = pid_of(started.text);
  for (int i = 0; i < 100 && live_group_members(pgid) < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const Clock::time_point t0 = Clock::now();
  const ToolResult stopped = jobs.stop(1);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(took, kStopGraceMs / 1000.0 - 0.05);
  EXPECT_LT(took, 3.0);
  EXPECT_NE(first_line(stopped.text).find(" exit_status=137"), std::string::npos) << stopped.text;
  EXPECT_NE(stopped.text.find("ready"), std::string::npos) << stopped.text;
  EXPECT_TRUE(group_gone(pgid));
}

TEST_F(BashJobsTest, CancelEndsTheWaitButNotTheJob) {
  const Clock::time_point t0 = Clock::now();
  const CancelFn after_200ms = [t0] { return Clock::now() - t0 > std::chrono::milliseconds(200); };
  const ToolResult r = jobs.run("sleep 30", 60, 30, after_200ms);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 2.0);
  EXPECT_NE(r.text.find("status=running"), std::string::npos) << r.text;
  EXPECT_GE(live_group_members(pid_of(r.text)), 1);
  EXPECT_EQ(jobs.job_ids(), std::vector<int64_t>{1});
}

TEST_F(BashJobsTest, PumpKeepsAChattyJobFromBlocking) {
  // 300 KB is several pipe buffers: without draining between looks the writer would stall.
  const ToolResult r = jobs.run("head -c 300000 /dev/zero | tr '\\0' x", 60, 5, kDontWait);
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
  while (jobs.summary().find("status=running") != std::string::npos && Clock::now() < give_up) {
    jobs.pump();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const std::string done = jobs.status(1).text;
  EXPECT_NE(done.find("status=done"), std::string::npos) << done;
  EXPECT_NE(done.find("(300000 bytes, 1 lines)"), std::string::npos) << done;
  EXPECT_EQ(get_file(output_path_of(done)), std::string(300000, 'x'));
}

TEST_F(BashJobsTest, DestructorKillsRunningGroups) {
  pid_t pgid = -1;
  {
    BashJobs local({.output_dir = dir.path()});
    pgid = pid_of(local.run("sleep 100 & sleep 100", 60, 5, kDontWait).text);
    for (int i = 0; i < 100 && live_group_members(pgid) < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_GE(live_group_members(pgid), 1);
  }
  EXPECT_TRUE(group_gone(pgid));
  EXPECT_TRUE(reaped(pgid));
}

TEST_F(BashJobsTest, ErrorsAndTheDispatcher) {
  EXPECT_EQ(jobs.run("", 60, 5, kNoCancel).text, "Tool error: bash: command is empty");
  EXPECT_EQ(jobs.status(7).text,
            "Tool error: bash_status: no job 7 (a finished job is removed once its end has been "
            "reported)");

  ToolContext ctx({.workdir = dir.path(), .output_dir = dir.path()});
  ToolResult r = run_tool(ctx, {"bash", {{"command", "echo hi"}, {"refresh_sec", "5"}}});
  EXPECT_TRUE(first_line(r.text).starts_with("bash job=1 pid=")) << r.text;
  EXPECT_EQ(after_first_line(r.text), "<output>\nhi\n</output>\n");
  EXPECT_EQ(run_tool(ctx, {"bash", {}}).text,
            "Tool error: missing required parameter 'command' for tool bash");
  EXPECT_EQ(run_tool(ctx, {"bash_status", {{"job", "abc"}}}).text,
            "Tool error: bash_status: no job 0 (a finished job is removed once its end has been "
            "reported)");
  EXPECT_EQ(run_tool(ctx, {"bash_stop", {}}).text,
            "Tool error: missing required parameter 'job' for tool bash_stop");
  ctx.cancel = kDontWait;
  r = run_tool(ctx, {"bash", {{"command", "sleep 30"}, {"timeout_sec", "99999999"}}});
  EXPECT_NE(r.text.find("status=running"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("timeout_sec=86400"), std::string::npos) << r.text;
  r = run_tool(ctx, {"bash_stop", {{"job", "2"}}});
  EXPECT_NE(r.text.find("status=done"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace ds4::agent
