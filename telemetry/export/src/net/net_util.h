// Helpers of the gRPC and HTTP servers and the gRPC client that need no gRPC headers: address
// parsing, loopback detection, the bearer-token check (parsing, constant-time comparison), and a
// bind probe that turns a failed listen into an errno-based message. Internal to rtloop_telemetry.
//
// Not RT-safe: every function here allocates or makes system calls. Thread-safe (no shared state).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::telemetry::internal {

struct HostPort {
  std::string host;  // without brackets for IPv6 ("::1")
  int port = 0;      // 0..65535; 0 asks the kernel for a free port
};

// Who uses an address: a server listens on it (port 0 asks the kernel for a free port), a client
// connects to it (port 1..65535: the server's).
enum class AddressRole { kListen, kConnect };

// "127.0.0.1:50051", "localhost:0", "[::1]:50051", "0.0.0.0:7000", and ":PORT", which is loopback
// (127.0.0.1:PORT) for servers and clients alike: the safe default, never every interface. A
// missing port, a port out of range for `role` or an empty host in brackets ("[]:80") is
// InvalidArgument with the expected form in the message. Every tool that takes an address
// (rtloop-cyclic --telemetry/--metrics, the Runtime's servers, rtloop-top) goes through this.
Result<HostPort> ParseAddress(std::string_view address, AddressRole role);
// ParseAddress(address, kListen) for the HTTP endpoint: IPv4 only (Debian's civetweb has no IPv6).
// Defined in http/http_address.cc (builds with RTLOOP_HTTP).
Result<HostPort> ParseHttpAddress(std::string_view address);

// "host:port", bracketing IPv6 literals.
std::string FormatAddress(const std::string& host, int port);

// True for "localhost", 127.0.0.0/8 and ::1; false for everything else (0.0.0.0 and :: included).
bool IsLoopbackHost(std::string_view host);

// The token of an "authorization" metadata value "Bearer <token>" (the scheme in any case, one
// space, then 1..kMaxBearerTokenBytes printable ASCII characters without spaces); nullopt for
// anything else. (Token and TLS files are read with input_file.h.)
std::optional<std::string_view> BearerToken(std::string_view value) noexcept;

// Compares `given` with `expected` in time that depends only on expected.size(), never on where
// the first difference is or how long `given` is.
bool ConstantTimeEquals(std::string_view given, std::string_view expected) noexcept;

// Tries to bind a TCP socket to host:port (SO_REUSEADDR as gRPC does) and reports why it fails:
// EADDRINUSE -> AlreadyExists "port in use", EADDRNOTAVAIL -> "no such local address", unknown
// host -> InvalidArgument. OK when the bind works (the socket is closed again).
Status ProbeBind(const HostPort& address);

// Opens a TCP connection to host:port (every address the host resolves to, each bounded by
// `timeout`) and closes it again: what a client can say when a call failed. 0 when something
// accepted; else the errno of the last attempt (ECONNREFUSED: nothing listens there, ETIMEDOUT: no
// answer within `timeout`, EHOSTUNREACH, ...; EADDRNOTAVAIL when the host does not resolve).
int ProbeConnect(const HostPort& address, std::chrono::milliseconds timeout);

// Moves the calling thread to SCHED_OTHER (nice unchanged) and, when `cpus` is not empty, onto
// those CPUs: the thread a server creates its threads from (they inherit both). `field` names the
// config field in messages ("HttpConfig.cpus").
Status MakeHousekeepingThread(const std::vector<int>& cpus, std::string_view field);

}  // namespace rtloop::telemetry::internal
