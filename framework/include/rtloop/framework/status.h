// Status and Result<T>: how rtloop reports errors without exceptions.
//
// Set-up APIs return a Status (code, errno, message) or a Result<T> (a value or a Status). The
// message is written for the user: what was attempted, the errno text, and how to fix it.
//
//   rtloop::Result<std::unique_ptr<rtloop::Executor>> executor = rtloop::Executor::Create(config);
//   if (!executor.ok()) {
//     std::fprintf(stderr, "%s\n", executor.status().ToString().c_str());
//     return 1;
//   }
//   RTLOOP_RETURN_IF_ERROR((*executor)->Start());  // in a function that returns Status
//
// Thread-safety: value types; a const object may be read from any thread.
// Not RT-safe: constructing a non-OK Status allocates its message. Checking ok() is RT-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "rtloop/framework/check.h"

namespace rtloop {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed something wrong (bad period, unknown CPU, bad flag)
  kPermissionDenied,    // missing privilege (CAP_SYS_NICE, memlock limit, file permission)
  kNotFound,            // a file, CPU or task that does not exist
  kFailedPrecondition,  // called in the wrong state (Stop() before Start())
  kAlreadyExists,       // e.g. a port in use
  kResourceExhausted,   // a limit was reached (streams, memory)
  kUnavailable,         // a peer or device cannot be reached now
  kDataLoss,            // truncated or corrupt data
  kUnauthenticated,     // missing or wrong token
  kInternal,            // an unexpected system error
  // The run ended but a task faulted (a watchdog trip or Step() returning kFault):
  // rtloop::Runtime::RunUntilSignal() says so, and ExitCode() makes it exit status 3.
  kAborted,
};

std::string_view StatusCodeName(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, int sys_errno = 0)
      : code_(code), sys_errno_(sys_errno), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  // RT-safe (ok(), code(), sys_errno(), message()).
  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  // errno of the failed system call, 0 when the error did not come from one.
  int sys_errno() const noexcept { return sys_errno_; }
  const std::string& message() const noexcept { return message_; }

  // "INVALID_ARGUMENT: <message>", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  int sys_errno_ = 0;
  std::string message_;
};

// Shorthands; the message should say what was attempted and how to fix it.
Status InvalidArgumentError(std::string message);
Status FailedPreconditionError(std::string message);
Status NotFoundError(std::string message);
Status DataLossError(std::string message);
Status InternalError(std::string message);
// A failed system call: the code follows errno (EPERM/EACCES -> kPermissionDenied, ENOENT ->
// kNotFound, EINVAL -> kInvalidArgument, EADDRINUSE/EEXIST -> kAlreadyExists, ...). The message is
// "<what>: <strerror(err)>" followed by " — <hint>" when a hint is given.
Status ErrnoError(int err, std::string_view what, std::string_view hint = {});

// A value or the Status that explains why there is none. Shaped like std::expected, which clang 14
// cannot use here.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    RTLOOP_CHECK(!std::get<1>(v_).ok(), "Result built from an OK Status carries no value");
  }

  bool ok() const noexcept { return v_.index() == 0; }
  // The error; an OK Status when there is a value.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

  T& value() & {
    RTLOOP_CHECK(ok(), "Result::value() on an error");
    return std::get<0>(v_);
  }
  const T& value() const& {
    RTLOOP_CHECK(ok(), "Result::value() on an error");
    return std::get<0>(v_);
  }
  T&& value() && {
    RTLOOP_CHECK(ok(), "Result::value() on an error");
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rtloop

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define RTLOOP_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::rtloop::Status rtloop_status_ = (expr);        \
    if (!rtloop_status_.ok()) return rtloop_status_; \
  } while (false)
