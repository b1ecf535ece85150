// src/http/trace.cpp: trace lines.
#include "http/trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace ds4::http {

Result<std::unique_ptr<TraceFile>> TraceFile::open(const std::string& path) {
  // The trace holds whole prompts and outputs: readable by the server's user only (0600, an
  // existing file's mode included).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FILE* f = fd < 0 || ::fchmod(fd, 0600) != 0 ? nullptr : ::fdopen(fd, "w");
  if (!f) {
    if (fd >= 0) ::close(fd);
    return Status::io_error("cannot open trace file '%s': %s", path.c_str(), strerror(errno));
  }
  return std::unique_ptr<TraceFile>(new TraceFile(f));
}

TraceFile::~TraceFile() { std::fclose(f_); }

void TraceFile::write(const std::string& id, const char* endpoint, const std::string& model,
                      bool stream, const std::string& rendered, const serve::Event& done) {
  using nlohmann::json;
  const json line = {{"id", id},
                     {"endpoint", endpoint},
                     {"model", model},
                     {"stream", stream},
                     {"prompt_tokens", done.usage.prompt_tokens},
                     {"cached_tokens", done.usage.cached_tokens},
                     {"completion_tokens", done.usage.completion_tokens},
                     {"draft_steps", done.usage.draft_steps},
                     {"draft_tokens", done.usage.draft_tokens},
                     {"accepted_draft_tokens", done.usage.accepted_draft_tokens},
                     {"finish", gen::to_string(done.finish)},
                     {"error", done.error.is_ok() ? json(nullptr) : json(done.error.message())},
                     {"rendered", rendered},
                     {"output", done.text}};
  const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  std::fwrite(text.data(), 1, text.size(), f_);
  std::fflush(f_);
}

}  // namespace ds4::http
