// src/base/check.cpp: the single place where a failed invariant ends the process.
#include "base/check.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace ds4::base {

void check_failed(const char* file, int line, const char* expr, const char* fmt, ...) {
  std::fprintf(stderr, "ds4: check failed at %s:%d: %s", file, line, expr);
  va_list args;
  va_start(args, fmt);
  char detail[512];
  std::vsnprintf(detail, sizeof detail, fmt, args);
  va_end(args);
  if (detail[0] != '\0') std::fprintf(stderr, " (%s)", detail);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace ds4::base
