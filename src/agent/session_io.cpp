// src/agent/session_io.cpp: reading and writing session files (see session_io.h).
#include "agent/session_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/fd.h"
#include "kv/kvc_store.h"  // KvcStore::read_file

namespace ds4::agent {
namespace {

using base::Fd;

// Removes a temporary file unless the write that made it succeeded (also when the hook throws).
class TempGuard {
 public:
  explicit TempGuard(std::string path) : path_(std::move(path)) {}
  ~TempGuard() {
    if (armed_) ::unlink(path_.c_str());
  }
  TempGuard(const TempGuard&) = delete;
  TempGuard& operator=(const TempGuard&) = delete;
  void disarm() { armed_ = false; }

 private:
  std::string path_;
  bool armed_ = true;
};

Status named(const std::string& path, const Status& st) {
  return Status(st.code(), "session file " + path + ": " + st.message());
}

// Exactly n bytes at `offset`, or an error naming the file.
Status read_at(int fd, uint64_t offset, std::span<uint8_t> out, const std::string& path) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r =
        ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return named(path, Status::io_error("read: %s", std::strerror(errno)));
    if (r == 0) return named(path, Status::invalid_file("it was cut short while it was read"));
    got += static_cast<size_t>(r);
  }
  return Status::ok();
}

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The file's size, checked against `max_bytes` before anything is read.
Result<uint64_t> sized(const std::string& path, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::not_found("session file %s does not exist", path.c_str());
    return named(path, Status::io_error("stat: %s", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return named(path, Status::invalid_file("not a regular file"));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return named(path, Status::invalid_file("its %llu bytes exceed the %llu-byte limit",
                                            static_cast<unsigned long long>(size),
                                            static_cast<unsigned long long>(max_bytes)));
  }
  return size;
}

}  // namespace

Result<WholeSessionFile> read_session_file(const std::string& path, uint64_t max_bytes) {
  DS4_TRY(sized(path, max_bytes));
  auto r = kv::KvcStore::read_file(path, max_bytes, {});
  if (!r.is_ok()) return named(path, r.status());
  // read_file hashed the bytes and matched the body's sum (a tool-id map's mismatch it only
  // reports): the footer's sums then stand for a second hashing.
  if (!r->view.tool_map_error.empty())
    return named(path, Status::invalid_file("KVC footer: %s", r->view.tool_map_error.c_str()));
  WholeSessionFile f{.bytes = std::move(r->bytes), .view = {}};
  const kv::KvcChecksums sums = r->view.checksums;
  auto v = decode_session_file(f.bytes.span(), &sums);
  if (!v.is_ok()) return named(path, v.status());
  f.view = std::move(*v);
  return f;
}

Result<kv::KvcHeader> read_kvc_header(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Status::not_found("session file %s does not exist", path.c_str());
    return named(path, Status::io_error("open: %s", std::strerror(errno)));
  }
  std::vector<uint8_t> head(kv::kKvcHeaderBytes);
  DS4_TRY(read_at(fd.get(), 0, head, path));
  auto h = kv::decode_kvc_header(head);
  if (!h.is_ok()) return named(path, h.status());
  return h;
}

Result<SessionFileHead> read_session_head(const std::string& path, uint64_t max_bytes) {
  SessionFileHead out;
  DS4_ASSIGN_OR_RETURN(out.file_bytes, sized(path, max_bytes));
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return named(path, Status::io_error("open: %s", std::strerror(errno)));
  std::vector<uint8_t> lead(kv::kKvcHeaderBytes + 4);
  DS4_TRY(read_at(fd.get(), 0, lead, path));
  auto h = kv::decode_kvc_header(lead);
  if (!h.is_ok()) return named(path, h.status());
  out.header = *h;
  const uint32_t text_bytes = le32(lead.data() + kv::kKvcHeaderBytes);
  const uint64_t payload_at = kv::kvc_payload_offset(text_bytes);
  const uint64_t fixed = payload_at + kv::kKvcFooterBytes;
  if (out.header.payload_bytes > out.file_bytes ||
      fixed + out.header.payload_bytes != out.file_bytes)
    return named(path, Status::invalid_file("its header and text length do not add up to its %llu "
                                            "bytes (cut short, or not an agent file)",
                                            static_cast<unsigned long long>(out.file_bytes)));
  std::string text(text_bytes, '\0');
  DS4_TRY(read_at(fd.get(), kv::kKvcHeaderBytes + 4,
                  std::span(reinterpret_cast<uint8_t*>(text.data()), text.size()), path));
  auto rec = check_session_head(out.header, text);
  if (!rec.is_ok()) return named(path, rec.status());
  out.record = std::move(*rec);
  std::vector<uint8_t> footer(kv::kKvcFooterBytes);
  DS4_TRY(read_at(fd.get(), out.file_bytes - kv::kKvcFooterBytes, footer, path));
  if (auto f = kv::decode_kvc_footer(footer); !f.is_ok()) return named(path, f.status());
  std::vector<uint8_t> payload_head(
      static_cast<size_t>(std::min<uint64_t>(kPayloadHeadBytes, out.header.payload_bytes)));
  DS4_TRY(read_at(fd.get(), payload_at, payload_head, path));
  if (Status st = check_session_payload(out.header, payload_head); !st.is_ok())
    return named(path, st);
  return out;
}

uint64_t session_file_bytes(const SessionFileFrame& frame, uint64_t payload_bytes) {
  return kv::KvcWriter(frame.header, frame.text, payload_bytes, {}).file_bytes();
}

Status write_session_file(const std::string& dir, std::string_view name,
                          const SessionFileFrame& frame, std::span<const uint8_t> payload,
                          const std::function<void(size_t, size_t)>& hook,
                          const base::ReadyBytes* ready,
                          const std::function<Status()>& before_commit) {
  const std::string final_path = dir + "/" + std::string(name);
  const std::string tmp = dir + "/." + std::string(name) + ".tmp." + std::to_string(::getpid());
  TempGuard guard(tmp);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Status::io_error("create '%s': %s", tmp.c_str(), std::strerror(errno));
  kv::KvcWriter w(frame.header, frame.text, payload.size(), {});
  std::function<void(uint64_t, uint64_t)> progress;
  if (hook) {
    progress = [&hook](uint64_t written, uint64_t total) {
      hook(static_cast<size_t>(written), static_cast<size_t>(total));
    };
  }
  DS4_TRY(kv::write_kvc(fd.get(), tmp, w, payload, progress,
                        kv::KvcStore::threads_for(w.file_bytes()), ready));
  if (::fsync(fd.get()) != 0)
    return Status::io_error("fsync '%s': %s", tmp.c_str(), std::strerror(errno));
  if (::close(fd.release()) != 0)
    return Status::io_error("close '%s': %s", tmp.c_str(), std::strerror(errno));
  if (before_commit) DS4_TRY(before_commit());
  if (::rename(tmp.c_str(), final_path.c_str()) != 0)
    return Status::io_error("rename '%s': %s", tmp.c_str(), std::strerror(errno));
  guard.disarm();
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.get() >= 0) ::fsync(d.get());
  return Status::ok();
}

Status rewrite_last_used(const std::string& path, uint64_t last_used) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) return Status::io_error("open '%s': %s", path.c_str(), std::strerror(errno));
  uint8_t t[8];
  for (int i = 0; i < 8; ++i) t[i] = static_cast<uint8_t>(last_used >> (8 * i));
  if (::pwrite(fd.get(), t, sizeof t, kv::kKvcLastUsedAt) != static_cast<ssize_t>(sizeof t))
    return Status::io_error("write '%s': %s", path.c_str(), std::strerror(errno));
  return Status::ok();
}

bool is_session_file_name(std::string_view n) {
  return n.size() == 43 && n.substr(40) == ".kv" &&
         std::all_of(n.begin(), n.begin() + 40, is_lower_hex);
}

pid_t session_temp_writer(std::string_view n) {
  constexpr std::string_view kTmp = ".tmp.";
  if (n.empty() || n[0] != '.') return 0;
  n.remove_prefix(1);
  const size_t at = n.find(kTmp);
  if (at == std::string_view::npos) return 0;
  const std::string_view base = n.substr(0, at), digits = n.substr(at + kTmp.size());
  if (!is_session_file_name(base) && base != "sysprompt.kv") return 0;
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return 0;
  return static_cast<pid_t>(std::stol(std::string(digits)));
}

}  // namespace ds4::agent
