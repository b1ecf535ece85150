// src/base/log.h: leveled diagnostics on stderr.
// Owns: the log line format and the level threshold (read once from DS4_LOG:
// error|warn|info|debug). Does not own: user-facing output of applications, which print their own
// results on stdout.
#pragma once

namespace ds4::base {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

const char* to_string(LogLevel level);
// The threshold, from the DS4_LOG environment variable on first use (default: warn).
LogLevel log_threshold();
void log_message(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace ds4::base

#define DS4_LOG(level, ...)                                                        \
  do {                                                                             \
    if (static_cast<int>(level) <= static_cast<int>(::ds4::base::log_threshold())) \
      ::ds4::base::log_message(level, __VA_ARGS__);                                \
  } while (0)
#define DS4_LOG_ERROR(...) DS4_LOG(::ds4::base::LogLevel::kError, __VA_ARGS__)
#define DS4_LOG_WARN(...) DS4_LOG(::ds4::base::LogLevel::kWarn, __VA_ARGS__)
#define DS4_LOG_INFO(...) DS4_LOG(::ds4::base::LogLevel::kInfo, __VA_ARGS__)
#define DS4_LOG_DEBUG(...) DS4_LOG(::ds4::base::LogLevel::kDebug, __VA_ARGS__)
