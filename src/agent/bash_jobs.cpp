// src/agent/bash_jobs.cpp: spawning, draining, reaping, stopping and reporting shell jobs.
#include "agent/bash_jobs.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;  // NOLINT: POSIX's environment of this process, passed to the job as is

namespace ds4::agent {

struct BashJobs::Job {
  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  ~Job() {
    if (pipe_fd >= 0) ::close(pipe_fd);
    if (out_fd >= 0) ::close(out_fd);
  }

  int64_t id = 0;
  std::string command;
  pid_t pid = -1;    // the shell; also the id of the job's process group (and session)
  int pipe_fd = -1;  // read end of the stdout+stderr pipe; -1 once closed
  int out_fd = -1;   // the output file
  std::string output_path;
  Clock::time_point started;
  Clock::time_point finished;
  int64_t timeout_sec = kDefaultBashTimeoutSec;
  uint64_t bytes = 0;
  uint64_t line_breaks = 0;
  char last_byte = '\n';
  bool done = false;
  bool timed_out = false;
  int exit_status = 0;
  bool output_shown = false;  // some output was in an earlier report
};

namespace {

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // a full disk loses output; the job itself is unaffected
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

std::string read_at(int fd, uint64_t offset, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

// `text` with a final line break, so a closing tag always starts its own line.
std::string as_block(std::string text) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

// The first kHeadLines lines of the first kHeadBytes bytes.
std::string head_of(int fd, uint64_t bytes) {
  std::string text = read_at(fd, 0, static_cast<size_t>(std::min<uint64_t>(bytes, kHeadBytes)));
  size_t lines = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' && ++lines == kHeadLines) {
      text.resize(i + 1);
      break;
    }
  return text;
}

// The last `n` lines within the last kTailScanBytes bytes.
std::string tail_of(int fd, uint64_t bytes, size_t n) {
  const uint64_t scan = std::min<uint64_t>(bytes, kTailScanBytes);
  std::string text = read_at(fd, bytes - scan, static_cast<size_t>(scan));
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;  // the final line break ends the last line
  size_t seen = 0;
  for (size_t i = end; i > 0; --i)
    if (text[i - 1] == '\n' && ++seen == n) return text.substr(i);
  return text;
}

std::string seconds(std::chrono::steady_clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

BashJobs::BashJobs(BashJobsOptions options) : output_dir_(std::move(options.output_dir)) {
  if (output_dir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    output_dir_ = tmp && *tmp ? tmp : "/tmp";
  }
}

BashJobs::~BashJobs() {
  for (auto& [id, job] : jobs_) {
    if (job->done) continue;
    ::kill(-job->pid, SIGKILL);
    int st = 0;
    while (::waitpid(job->pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

ToolResult BashJobs::run(std::string_view command, int64_t timeout_sec, int64_t refresh_sec,
                         const CancelFn& cancel) {
  if (command.empty()) return tool_error("bash: command is empty");
  auto job = std::make_unique<Job>();
  job->command = std::string(command);
  job->timeout_sec = std::clamp<int64_t>(timeout_sec, 1, kMaxBashTimeoutSec);
  std::string path = output_dir_ + "/ds4_agent_output_XXXXXX";
  job->out_fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (job->out_fd < 0)
    return tool_error("bash: cannot create an output file in " + output_dir_ + ": " +
                      std::strerror(errno));
  job->output_path = path;

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    return tool_error(std::string("bash: cannot create a pipe: ") + std::strerror(err));
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  ::posix_spawnattr_init(&attr);
  // The job starts with no blocked signals (the agent's threads may block some) and default
  // dispositions for those an agent may ignore (ignoring survives exec).
  sigset_t none, reset;
  sigemptyset(&none);
  sigemptyset(&reset);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU})
    sigaddset(&reset, sig);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &reset);
  // A session of its own: its own process group (killed as one, its id the shell's pid, set
  // before posix_spawn returns), and no controlling terminal, so a job can neither read the
  // agent's keyboard nor change its terminal modes.
  ::posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char sh[] = "sh";
  char dash_c[] = "-c";
  char* argv[] = {sh, dash_c, job->command.data(), nullptr};
  const int rc = ::posix_spawn(&job->pid, "/bin/sh", &actions, &attr, argv, environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    ::unlink(path.c_str());
    return tool_error(std::string("bash: cannot start /bin/sh: ") + std::strerror(rc));
  }
  job->pipe_fd = fds[0];
  ::fcntl(job->pipe_fd, F_SETFL, ::fcntl(job->pipe_fd, F_GETFL) | O_NONBLOCK);
  job->started = Clock::now();
  job->id = next_id_++;
  Job& j = *job;
  jobs_.emplace(j.id, std::move(job));

  const int64_t refresh = std::clamp<int64_t>(refresh_sec, 1, kMaxBashRefreshSec);
  wait_for(j, j.started + std::chrono::seconds(refresh), cancel);
  return report_and_forget(j.id);
}

ToolResult BashJobs::status(int64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end())
    return tool_error("bash_status: no job " + std::to_string(id) +
                      " (a finished job is removed once its end has been reported)");
  refresh(*it->second);
  return report_and_forget(id);
}

ToolResult BashJobs::stop(int64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end())
    return tool_error("bash_stop: no job " + std::to_string(id) +
                      " (a finished job is removed once its end has been reported)");
  Job& j = *it->second;
  refresh(j);
  if (!j.done) {
    ::kill(-j.pid, SIGTERM);
    const Clock::time_point grace_end = Clock::now() + std::chrono::milliseconds(kStopGraceMs);
    // The grace ends early once the shell has gone. Waiting for every member instead would
    // wait on orphaned zombies too wherever PID 1 is slow to reap them (some containers).
    while (Clock::now() < grace_end && !j.done) {
      refresh(j);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Whatever ignored SIGTERM, and anything the shell left behind in its group.
    if (::kill(-j.pid, 0) == 0) ::kill(-j.pid, SIGKILL);
    if (!j.done) {
      int st = 0;
      while (::waitpid(j.pid, &st, 0) < 0 && errno == EINTR) {
      }
      refresh(j);  // drains; records the exit below when refresh could not
      if (!j.done) {
        j.done = true;
        j.finished = Clock::now();
        j.exit_status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
      }
    }
  }
  return report_and_forget(id);
}

void BashJobs::pump() {
  for (auto& [id, job] : jobs_) refresh(*job);
}

std::vector<int64_t> BashJobs::job_ids() const {
  std::vector<int64_t> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

std::string BashJobs::summary() {
  std::string out;
  for (auto& [id, job] : jobs_) {
    refresh(*job);
    out += "bash job=" + std::to_string(id) + " pid=" + std::to_string(job->pid) +
           " status=" + (job->done ? "done" : "running") + " command=" + job->command + "\n";
  }
  return out;
}

// Moves whatever the pipe holds now into the output file; closes the pipe at end of file (every
// writer in the group has gone).
void BashJobs::drain(Job& j) {
  char buf[64 * 1024];
  while (j.pipe_fd >= 0) {
    const ssize_t n = ::read(j.pipe_fd, buf, sizeof buf);
    if (n > 0) {
      write_all(j.out_fd, buf, static_cast<size_t>(n));
      j.bytes += static_cast<uint64_t>(n);
      j.line_breaks += static_cast<uint64_t>(std::count(buf, buf + n, '\n'));
      j.last_byte = buf[n - 1];
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::close(j.pipe_fd);
    j.pipe_fd = -1;
  }
}

void BashJobs::refresh(Job& j) {
  drain(j);
  if (j.done) return;
  int st = 0;
  pid_t got = ::waitpid(j.pid, &st, WNOHANG);
  if (got == 0 && Clock::now() >= j.started + std::chrono::seconds(j.timeout_sec)) {
    ::kill(-j.pid, SIGKILL);
    j.timed_out = true;
    while ((got = ::waitpid(j.pid, &st, 0)) < 0 && errno == EINTR) {
    }
  }
  if (got != j.pid) return;
  j.done = true;
  j.finished = Clock::now();
  j.exit_status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
  // What the shell wrote before it exited is in the pipe now; take it, then let go of the pipe
  // (a background child that still holds it gets EPIPE rather than hanging the report).
  drain(j);
  if (j.pipe_fd >= 0) {
    ::close(j.pipe_fd);
    j.pipe_fd = -1;
  }
}

void BashJobs::wait_for(Job& j, Clock::time_point until, const CancelFn& cancel) {
  for (;;) {
    refresh(j);
    if (j.done || (cancel && cancel())) return;
    const Clock::time_point now = Clock::now();
    if (now >= until) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
    const int ms = static_cast<int>(std::clamp<int64_t>(left, 1, kJobPollMs));
    if (j.pipe_fd >= 0) {
      pollfd p{j.pipe_fd, POLLIN, 0};
      ::poll(&p, 1, ms);  // wakes early on output, so the pipe never stays full
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
  }
}

std::string BashJobs::observe(Job& j) {
  const Clock::time_point end = j.done ? j.finished : Clock::now();
  std::string out = "bash job=" + std::to_string(j.id) + " pid=" + std::to_string(j.pid);
  if (j.done)
    out += " status=done elapsed_sec=" + seconds(end - j.started) +
           " timed_out=" + (j.timed_out ? "1" : "0") +
           " exit_status=" + std::to_string(j.exit_status) + "\n";
  else
    out += " status=running elapsed_sec=" + seconds(end - j.started) +
           " timeout_sec=" + std::to_string(j.timeout_sec) + "\n";

  const uint64_t lines = j.line_breaks + (j.bytes > 0 && j.last_byte != '\n' ? 1 : 0);
  if (j.bytes == 0) {
    out += "<output>\n</output>\n";
  } else if (j.done && !j.output_shown && lines <= kHeadLines && j.bytes <= kHeadBytes) {
    out +=
        "<output>\n" + as_block(read_at(j.out_fd, 0, static_cast<size_t>(j.bytes))) + "</output>\n";
  } else {
    out += "output_path=" + j.output_path + " (" + std::to_string(j.bytes) + " bytes, " +
           std::to_string(lines) + " lines)\n";
    if (!j.output_shown) {
      out += "<head -" + std::to_string(kHeadLines) + " " + j.output_path + ">\n" +
             as_block(head_of(j.out_fd, j.bytes)) + "</head>\n";
    } else {
      const size_t n = j.done ? kTailLinesDone : kTailLinesRunning;
      out += "<tail -" + std::to_string(n) + " " + j.output_path + ">\n" +
             as_block(tail_of(j.out_fd, j.bytes, n)) + "</tail>\n";
    }
  }
  if (j.bytes > 0) j.output_shown = true;
  if (!j.done)
    out += "Job " + std::to_string(j.id) +
           " is still running: call bash_status job=" + std::to_string(j.id) +
           " to check it again, or bash_stop job=" + std::to_string(j.id) + " to stop it.\n";
  return out;
}

ToolResult BashJobs::report_and_forget(int64_t id) {
  auto it = jobs_.find(id);
  std::string text = observe(*it->second);
  if (it->second->done) jobs_.erase(it);
  return tool_ok(std::move(text));
}

}  // namespace ds4::agent
