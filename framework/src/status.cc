#include "rtloop/framework/status.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace rtloop {

std::string_view StatusCodeName(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kAborted:
      return "ABORTED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status InvalidArgumentError(std::string message) {
  return {StatusCode::kInvalidArgument, std::move(message)};
}
Status FailedPreconditionError(std::string message) {
  return {StatusCode::kFailedPrecondition, std::move(message)};
}
Status NotFoundError(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
Status DataLossError(std::string message) { return {StatusCode::kDataLoss, std::move(message)}; }
Status InternalError(std::string message) { return {StatusCode::kInternal, std::move(message)}; }

namespace {

StatusCode CodeForErrno(int err) noexcept {
  switch (err) {
    case EPERM:
    case EACCES:
      return StatusCode::kPermissionDenied;
    case ENOENT:
    case ESRCH:
    case ENODEV:
    case ENXIO:
      return StatusCode::kNotFound;
    case EINVAL:
    case ERANGE:
    case EDOM:
      return StatusCode::kInvalidArgument;
    case EADDRINUSE:
    case EEXIST:
      return StatusCode::kAlreadyExists;
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
    case EAGAIN:
    case EBUSY:
      return StatusCode::kResourceExhausted;
    case ECONNREFUSED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ETIMEDOUT:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

}  // namespace

Status ErrnoError(int err, std::string_view what, std::string_view hint) {
  char buf[256];
  // GNU strerror_r: returns a pointer to the text (possibly not `buf`).
  const char* text = strerror_r(err, buf, sizeof(buf));
  std::string message(what);
  message += ": ";
  message += text;
  if (!hint.empty()) {
    message += " — ";
    message += hint;
  }
  return {CodeForErrno(err), std::move(message), err};
}

}  // namespace rtloop
