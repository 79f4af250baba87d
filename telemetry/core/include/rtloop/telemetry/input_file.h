// ReadInputFile: how rtloop reads the small files a user names on a command line or in a config:
// bearer tokens, TLS certificates and keys, configuration files. Bounded and never blocking, so
// that /dev/zero, a FIFO or a huge file is a clear error instead of an OOM kill or a hang.
//
//   Result<std::string> pem = ReadInputFile(path, {.what = "TLS certificate"});
//   if (!pem.ok()) return pem.status();   // "TLS certificate 'x': is a named pipe (FIFO); ..."
//   Result<std::string> token = ReadTokenFile(token_path);   // trimmed and checked
//
// Rules: the path must name a regular file (directories, FIFOs, devices and sockets are refused
// by what they are, before anything is read; the open itself cannot block); at most
// options.max_bytes are read (a larger file is refused, whatever its size claims, /proc included);
// an empty file is refused unless allowed.
//
// Threading: plain functions, any thread. Not RT-safe: file I/O and allocation.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "rtloop/framework/status.h"

namespace rtloop::telemetry {

struct InputFileOptions {
  std::string what = "file";         // the file's role, for messages: "token file", "TLS key"
  std::size_t max_bytes = 1u << 20;  // larger files are refused (ResourceExhausted)
  bool allow_empty = false;          // false: an empty file is InvalidArgument
};

// The whole content of `path` under the rules above. Errors name options.what, the path and the
// fix: NotFound/PermissionDenied (errno), InvalidArgument (not a regular file, empty),
// ResourceExhausted (too big).
Result<std::string> ReadInputFile(std::string_view path, const InputFileOptions& options = {});

// The longest bearer token accepted: it travels in a request header, and gRPC's default limit for
// all request metadata together is 8 KiB.
inline constexpr std::size_t kMaxBearerTokenBytes = 4096;

// Checks a bearer token: 1..kMaxBearerTokenBytes printable ASCII characters without spaces (what
// an HTTP/2 header value "Bearer <token>" can carry). `where` starts the message ("token file
// 'x'", "ClientConfig.token").
Status CheckBearerToken(std::string_view token, std::string_view where);

// A bearer token from a file of at most 16 KiB: surrounding whitespace trimmed, then
// CheckBearerToken().
Result<std::string> ReadTokenFile(std::string_view path);

}  // namespace rtloop::telemetry
