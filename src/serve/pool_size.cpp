// src/serve/pool_size.cpp: the default number of live sessions from free memory and --ctx.
#include "serve/pool_size.h"

#include <algorithm>
#include <cstdio>

namespace ds4::serve {
namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

PoolSizing size_pool(std::optional<uint64_t> free_bytes, uint64_t reserved_bytes,
                     uint64_t session_bytes) {
  PoolSizing p;
  p.session_bytes = session_bytes;
  p.reserved_bytes = reserved_bytes;
  if (!free_bytes) {
    p.sessions = kUnknownMemorySessions;
    p.reason = "free memory unknown on this backend: " + std::to_string(p.sessions) +
               " sessions (set --parallel)";
    return p;
  }
  const uint64_t usable = *free_bytes > reserved_bytes ? *free_bytes - reserved_bytes : 0;
  p.free_bytes = usable;
  const double fit = session_bytes == 0 ? kMaxDefaultSessions
                                        : kPoolMemoryShare * static_cast<double>(usable) /
                                              static_cast<double>(session_bytes);
  p.sessions = static_cast<int>(std::clamp(fit, 1.0, static_cast<double>(kMaxDefaultSessions)));
  p.reason = "half of " + mib(usable) + " free" +
             (reserved_bytes ? " (after " + mib(reserved_bytes) + " for the model file)" : "") +
             " fits " + (fit >= kMaxDefaultSessions ? "at least " : "") +
             std::to_string(static_cast<int>(std::max(fit, 0.0))) + ", at most " +
             std::to_string(kMaxDefaultSessions) + " by default";
  return p;
}

PoolSizing size_pool(const Engine& engine, int n_ctx) {
  const bool cpu = engine.options().backend == BackendKind::kCpu;
  return size_pool(engine.free_memory_bytes(), cpu ? engine.info().file_bytes : 0,
                   engine.session_bytes(n_ctx));
}

}  // namespace ds4::serve
