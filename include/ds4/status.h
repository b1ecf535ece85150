// include/ds4/status.h: the error vocabulary shared by every module and by applications.
// Owns: Status (a code plus a human-readable message), Result<T> (a value or a Status), DS4_TRY.
// Does not own: invariant checks (src/base/check.h aborts on bugs; Status is for expected
// failures).
//
// Expected failures -- bad files, bad requests, missing devices, exhausted memory for a context --
// travel as Status. Messages say what failed, where (file offset, tensor or key name) and the
// offending value, so a user can act on one line.
#pragma once

#include <cstdarg>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ds4 {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // caller passed something malformed (flags, parameters)
  kInvalidFile,        // a file's bytes do not follow its container format (GGUF, safetensors)
  kInvalidModel,       // a well-formed file that is not a model we can run
  kNotFound,           // a named thing (file, key, tensor) does not exist
  kIoError,            // the operating system refused a read/write/map
  kOutOfRange,         // a size or index beyond what the format or the session allows
  kResourceExhausted,  // memory or disk ran out
  kUnavailable,        // a feature or device not present in this build or on this machine
  kUnimplemented,      // recognised but not supported yet
  kInternal,           // a fault we did not expect; message carries details
};

const char* to_string(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status invalid_file(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status invalid_model(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status not_found(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status io_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status out_of_range(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status resource_exhausted(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status unavailable(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status unimplemented(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
  static Status internal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid file: GGUF header truncated at offset 12"
  std::string to_string() const;

  // Adds context in front of the message: "loading model.gguf: <message>".
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a T or a non-OK Status. Accessing value() of an error is a bug and aborts.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).is_ok()) v_ = Status::internal("Result constructed from OK status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOkStatus;  // immutable, shared by every Result
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

namespace detail {
inline Status to_status(Status s) { return s; }
template <class T>
Status to_status(const Result<T>& r) {
  return r.status();
}
}  // namespace detail

}  // namespace ds4

#define DS4_CONCAT_INNER_(a, b) a##b
#define DS4_CONCAT_(a, b) DS4_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define DS4_TRY(expr)                                                 \
  do {                                                                \
    ::ds4::Status ds4_try_status_ = ::ds4::detail::to_status((expr)); \
    if (!ds4_try_status_.is_ok()) return ds4_try_status_;             \
  } while (0)

// `DS4_ASSIGN_OR_RETURN(auto x, make_x());` binds the value or returns the error.
#define DS4_ASSIGN_OR_RETURN(lhs, expr) \
  DS4_ASSIGN_OR_RETURN_IMPL_(DS4_CONCAT_(ds4_result_, __LINE__), lhs, expr)
#define DS4_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()
