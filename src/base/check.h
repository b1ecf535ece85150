// src/base/check.h: invariant checks that abort loudly on a bug.
// Owns: DS4_CHECK, DS4_CHECK_MSG, DS4_DCHECK.
// Does not own: expected failures (bad input, missing files), which return ds4::Status instead.
#pragma once

namespace ds4::base {
[[noreturn]] void check_failed(const char* file, int line, const char* expr, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
}  // namespace ds4::base

#define DS4_CHECK(cond)                                               \
  do {                                                                \
    if (__builtin_expect(!(cond), 0))                                 \
      ::ds4::base::check_failed(__FILE__, __LINE__, #cond, "%s", ""); \
  } while (0)

#define DS4_CHECK_MSG(cond, ...)                                         \
  do {                                                                   \
    if (__builtin_expect(!(cond), 0))                                    \
      ::ds4::base::check_failed(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

#ifdef NDEBUG
#define DS4_DCHECK(cond) \
  do {                   \
  } while (0)
#else
#define DS4_DCHECK(cond) DS4_CHECK(cond)
#endif
