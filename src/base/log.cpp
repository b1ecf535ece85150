// src/base/log.cpp: stderr logger; one fprintf per line so concurrent lines do not interleave.
#include "base/log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ds4::base {
namespace {

LogLevel parse_level(const char* s) {
  if (s == nullptr) return LogLevel::kWarn;
  if (std::strcmp(s, "error") == 0) return LogLevel::kError;
  if (std::strcmp(s, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(s, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarn;
}

}  // namespace

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}

LogLevel log_threshold() {
  // Initialised once and never changed afterwards: an immutable process setting, not mutable state.
  static const LogLevel kThreshold = parse_level(std::getenv("DS4_LOG"));
  return kThreshold;
}

void log_message(LogLevel level, const char* fmt, ...) {
  char body[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(body, sizeof body, fmt, args);
  va_end(args);
  std::fprintf(stderr, "ds4 [%s] %s\n", to_string(level), body);
}

}  // namespace ds4::base
