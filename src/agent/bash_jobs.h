// src/agent/bash_jobs.h: the agent's shell jobs: bash, bash_status and bash_stop (features.md
// §5.4).
// Owns: each job's process group (`/bin/sh -c CMD` in a session of its own, stdin /dev/null),
// the pipe that carries its stdout and stderr into an output file, its timeout, reaping, and the
// observation text the model reads (status line, output or head/tail of the output file).
// Does not own: the terminal (the agent's UI shows these reports), parameter parsing
// (dispatch.cpp) or the cancel signal's source (the caller's callback).
//
// No threads: output is drained whenever a job is looked at: while `bash` waits, on
// bash_status and bash_stop, and on pump(), which the agent calls between decoded tokens so a
// chatty background job never stalls on a full pipe for long.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/tool_args.h"

namespace ds4::agent {

inline constexpr int64_t kDefaultBashTimeoutSec = 3600;
inline constexpr int64_t kMaxBashTimeoutSec = 86400;
inline constexpr int64_t kDefaultBashRefreshSec = 60;
inline constexpr int64_t kMaxBashRefreshSec = 3600;
// How often a waiting call checks the cancel callback, the job's exit and its timeout: short
// enough that Ctrl+C feels immediate, long enough to cost nothing.
inline constexpr int kJobPollMs = 50;
// bash_stop's grace between SIGTERM and SIGKILL: time for a build or server to clean up.
inline constexpr int kStopGraceMs = 1000;
// What a first look at a large output shows (the head), and what later looks show (the tail:
// a few lines while the job runs, more once it is done), scanning at most kTailScanBytes of the
// file's end. A finished job's output within the head limits is shown whole.
inline constexpr size_t kHeadLines = 100;
inline constexpr size_t kHeadBytes = 8 * 1024;
inline constexpr size_t kTailLinesRunning = 4;
inline constexpr size_t kTailLinesDone = 20;
inline constexpr size_t kTailScanBytes = 32 * 1024;

// Polled while `bash` waits; true ends the wait early (the job keeps running).
using CancelFn = std::function<bool()>;

struct BashJobsOptions {
  // Where output files go ("ds4_agent_output_XXXXXX"); empty: $TMPDIR, else /tmp. The files stay
  // after their job is reported, so the model can still read them.
  std::string output_dir;
};

class BashJobs {
 public:
  explicit BashJobs(BashJobsOptions options = {});
  // Kills (SIGKILL) the process group of every job still running and reaps it.
  ~BashJobs();
  BashJobs(const BashJobs&) = delete;
  BashJobs& operator=(const BashJobs&) = delete;

  // Starts `command` as job N (numbered from 1), waits up to `refresh_sec` for it (less when it
  // ends, times out or `cancel` says so) and reports. `timeout_sec` bounds the job's life: then
  // its group is killed and it reports timed_out=1.
  ToolResult run(std::string_view command, int64_t timeout_sec, int64_t refresh_sec,
                 const CancelFn& cancel);
  // Reports job `job` without waiting.
  ToolResult status(int64_t job);
  // SIGTERM to the job's group, up to kStopGraceMs for the shell to exit, then SIGKILL to what is
  // left of the group; reports.
  ToolResult stop(int64_t job);
  // Drains every job's pipe, reaps the finished and kills the timed out, without waiting.
  void pump();

  // Jobs still registered (running, or done but not yet reported), in id order.
  std::vector<int64_t> job_ids() const;
  // One line per registered job ("bash job=J pid=P status=... command=..."), for the note the
  // agent keeps across a compaction so the summary does not lose running processes.
  std::string summary();

 private:
  struct Job;
  using Clock = std::chrono::steady_clock;

  static void drain(Job& job);
  void refresh(Job& job);
  void wait_for(Job& job, Clock::time_point until, const CancelFn& cancel);
  std::string observe(Job& job);
  ToolResult report_and_forget(int64_t id);

  std::string output_dir_;
  int64_t next_id_ = 1;
  std::map<int64_t, std::unique_ptr<Job>> jobs_;
};

}  // namespace ds4::agent
