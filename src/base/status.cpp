// src/base/status.cpp: implementation of include/ds4/status.h (formatting and code names).
#include "ds4/status.h"

#include <cstdio>

namespace ds4 {
namespace {

std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

}  // namespace

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kInvalidFile: return "invalid file";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown status";
}

#define DS4_STATUS_FACTORY_(fn, code)               \
  Status Status::fn(const char* fmt, ...) {         \
    va_list args;                                   \
    va_start(args, fmt);                            \
    Status s(StatusCode::code, vformat(fmt, args)); \
    va_end(args);                                   \
    return s;                                       \
  }

DS4_STATUS_FACTORY_(invalid_argument, kInvalidArgument)
DS4_STATUS_FACTORY_(invalid_file, kInvalidFile)
DS4_STATUS_FACTORY_(invalid_model, kInvalidModel)
DS4_STATUS_FACTORY_(not_found, kNotFound)
DS4_STATUS_FACTORY_(io_error, kIoError)
DS4_STATUS_FACTORY_(out_of_range, kOutOfRange)
DS4_STATUS_FACTORY_(resource_exhausted, kResourceExhausted)
DS4_STATUS_FACTORY_(unavailable, kUnavailable)
DS4_STATUS_FACTORY_(unimplemented, kUnimplemented)
DS4_STATUS_FACTORY_(internal, kInternal)
#undef DS4_STATUS_FACTORY_

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string out = ds4::to_string(code_);
  out += ": ";
  out += message_;
  return out;
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

}  // namespace ds4
