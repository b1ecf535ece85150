// src/agent/file_io.cpp: capped reads, atomic writes and line indexing for the agent tools.
#include "agent/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "base/fd.h"

namespace ds4::agent {
namespace fs = std::filesystem;
namespace {

// Temporary names tried before giving up: each clash means another writer left or is writing a
// file of the same name, so a handful of attempts is plenty.
constexpr int kTempNameAttempts = 64;

using base::Fd;

std::string shown_str(std::string_view shown) { return std::string(shown); }

using base::write_all;

// The file a write to `path` should replace: the target of a symlink when it resolves, so the
// link survives the rename; otherwise `path` itself.
std::string write_target(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    if (!ec) return real.string();
  }
  return path;
}

}  // namespace

Result<std::string> read_file_capped(const std::string& path, std::string_view shown) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0)
    return Status::io_error("cannot open %s: %s", shown_str(shown).c_str(), std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return Status::io_error("cannot stat %s: %s", shown_str(shown).c_str(), std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return Status::invalid_argument("%s is a directory (use list)", shown_str(shown).c_str());
  if (!S_ISREG(st.st_mode))
    return Status::invalid_argument("%s is not a regular file", shown_str(shown).c_str());
  if (static_cast<uint64_t>(st.st_size) > kMaxReadBytes)
    return Status::out_of_range(
        "%s is %lld bytes, over the 16 MiB limit of what the file tools load (use bash with "
        "head, tail, grep or sed for files this large)",
        shown_str(shown).c_str(), static_cast<long long>(st.st_size));
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    // One byte of room past the cap catches a file that grew since fstat.
    if (got == out.size()) out.resize(std::min(kMaxReadBytes + 1, out.size() * 2 + 4096));
    const ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io_error("cannot read %s: %s", shown_str(shown).c_str(), std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > kMaxReadBytes)
      return Status::out_of_range("%s grew past the 16 MiB read limit while being read",
                                  shown_str(shown).c_str());
  }
  out.resize(got);
  return out;
}

Status write_file_atomic(const std::string& path, std::string_view content,
                         std::string_view shown) {
  const fs::path target(write_target(path));
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status::io_error("cannot create the directory of %s: %s", shown_str(shown).c_str(),
                            ec.message().c_str());
  struct stat old;
  const bool existed = ::stat(target.c_str(), &old) == 0;
  if (existed && S_ISDIR(old.st_mode))
    return Status::invalid_argument("%s is a directory", shown_str(shown).c_str());

  std::string temp;
  int raw_fd = -1;
  for (int i = 0; i < kTempNameAttempts && raw_fd < 0; ++i) {
    temp = (dir / ("." + target.filename().string() + ".ds4-write-" + std::to_string(::getpid()) +
                   "-" + std::to_string(i)))
               .string();
    // 0666 less the umask: a new file gets the permissions any editor would give it.
    raw_fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (raw_fd < 0 && errno != EEXIST)
      return Status::io_error("cannot create a temporary file beside %s: %s",
                              shown_str(shown).c_str(), std::strerror(errno));
  }
  if (raw_fd < 0)
    return Status::io_error("cannot create a temporary file beside %s: names in use",
                            shown_str(shown).c_str());
  Fd fd(raw_fd);
  bool ok = true;
  if (existed) ok = ::fchmod(fd.get(), old.st_mode & 07777) == 0;
  ok = ok && write_all(fd.get(), content) && ::fsync(fd.get()) == 0;
  const int saved = errno;
  if (!ok || ::close(fd.release()) != 0 || ::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = ok ? errno : saved;
    ::unlink(temp.c_str());
    return Status::io_error("cannot write %s: %s", shown_str(shown).c_str(), std::strerror(err));
  }
  return Status::ok();
}

std::vector<size_t> line_starts(std::string_view text) {
  std::vector<size_t> starts;
  if (text.empty()) return starts;
  starts.push_back(0);
  for (size_t i = 0; i + 1 < text.size(); ++i)
    if (text[i] == '\n') starts.push_back(i + 1);
  return starts;
}

std::string_view line_at(std::string_view text, const std::vector<size_t>& starts, size_t n) {
  const size_t begin = starts[n - 1];
  size_t end = n < starts.size() ? starts[n] : text.size();
  if (end > begin && text[end - 1] == '\n') --end;
  return text.substr(begin, end - begin);
}

}  // namespace ds4::agent
