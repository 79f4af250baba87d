#include "net_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "rtloop/telemetry/input_file.h"
#include "rtloop/telemetry/server.h"

namespace rtloop::telemetry::internal {

Result<HostPort> ParseAddress(std::string_view address, AddressRole role) {
  const bool listen = role == AddressRole::kListen;
  const auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        "bad address \"" + std::string(address) + "\": " + std::string(why) +
        (listen ? " — use HOST:PORT or :PORT (loopback), e.g. 127.0.0.1:50051, [::1]:50051, "
                  "0.0.0.0:50051 (every interface) or :0 (loopback, a free port)"
                : " — use HOST:PORT or :PORT (loopback), e.g. 127.0.0.1:50051 or [::1]:50051"));
  };
  HostPort out;
  std::string_view port_text;
  if (!address.empty() && address.front() == '[') {
    const std::size_t close = address.find(']');
    if (close == std::string_view::npos) return bad("missing ']' after the IPv6 address");
    out.host = std::string(address.substr(1, close - 1));
    if (out.host.empty()) return bad("empty host in brackets");
    if (close + 1 >= address.size() || address[close + 1] != ':') return bad("missing :PORT");
    port_text = address.substr(close + 2);
  } else {
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return bad("missing :PORT");
    out.host = std::string(address.substr(0, colon));
    if (out.host.find(':') != std::string::npos) return bad("put an IPv6 address in brackets");
    if (out.host.empty()) out.host = "127.0.0.1";  // ":PORT": loopback, the safe default
    port_text = address.substr(colon + 1);
  }
  if (port_text.empty()) return bad("empty port");
  const int min_port = listen ? 0 : 1;
  int port = -1;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < min_port ||
      port > 65535) {
    return bad(listen ? "the port must be a number from 0 (a free port) to 65535"
                      : "the port must be the server's, a number from 1 to 65535");
  }
  out.port = port;
  return out;
}

std::string FormatAddress(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  const std::string h(host);
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return false;
}

std::optional<std::string_view> BearerToken(std::string_view value) noexcept {
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() + 1 || value[kScheme.size()] != ' ') return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = value[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) {
      return std::nullopt;
    }
  }
  const std::string_view token = value.substr(kScheme.size() + 1);
  if (token.size() > kMaxBearerTokenBytes) return std::nullopt;
  for (const char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return std::nullopt;
  }
  return token;
}

bool ConstantTimeEquals(std::string_view given, std::string_view expected) noexcept {
  // One pass over `expected` whatever `given` holds; the length difference is folded in.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto x = static_cast<unsigned char>(i < given.size() ? given[i] : 0);
    diff |= static_cast<unsigned>(x ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

Status ProbeBind(const HostPort& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(address.port);
  const std::string where = FormatAddress(address.host, address.port);
  if (const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list); rc != 0) {
    return InvalidArgumentError("cannot listen on " + where + ": host \"" + address.host +
                                "\" does not resolve (" + gai_strerror(rc) +
                                ") — use an IP address of this machine, e.g. 127.0.0.1");
  }
  Status status;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const int rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
    const int err = errno;
    close(fd);
    if (rc == 0) {
      status = Status::Ok();
      break;
    }
    if (err == EADDRINUSE) {
      status = ErrnoError(err, "cannot listen on " + where,
                          "another process uses this port: pick another port (0 picks a free "
                          "one) or stop that process");
    } else if (err == EADDRNOTAVAIL) {
      status = ErrnoError(err, "cannot listen on " + where,
                          "the host is not an address of this machine: use 127.0.0.1, 0.0.0.0 "
                          "or one of this machine's addresses");
    } else if (err == EACCES) {
      status = ErrnoError(err, "cannot listen on " + where,
                          "ports below 1024 need root or CAP_NET_BIND_SERVICE");
    } else {
      status = ErrnoError(err, "cannot listen on " + where);
    }
  }
  freeaddrinfo(list);
  return status;
}

namespace {

// One non-blocking connect to `ai`, bounded by `timeout`: 0 or the errno.
int ConnectOnce(const addrinfo& ai, std::chrono::milliseconds timeout) {
  const int fd =
      socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai.ai_protocol);
  if (fd < 0) return errno;
  int err = 0;
  if (connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int ready = 0;
      do {
        ready = poll(&p, 1, static_cast<int>(timeout.count()));
      } while (ready < 0 && errno == EINTR);
      socklen_t len = sizeof err;
      if (ready <= 0) {
        err = ETIMEDOUT;
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
    }
  }
  close(fd);
  return err;
}

}  // namespace

int ProbeConnect(const HostPort& address, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(address.port);
  if (getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list) != 0) return EADDRNOTAVAIL;
  int err = EADDRNOTAVAIL;
  for (const addrinfo* ai = list; ai != nullptr && err != 0; ai = ai->ai_next) {
    err = ConnectOnce(*ai, timeout);
  }
  freeaddrinfo(list);
  return err;
}

Status MakeHousekeepingThread(const std::vector<int>& cpus, std::string_view field) {
  sched_param param{};
  param.sched_priority = 0;
  if (const int rc = pthread_setschedparam(pthread_self(), SCHED_OTHER, &param); rc != 0) {
    return ErrnoError(rc, "cannot switch a telemetry server's set-up thread to SCHED_OTHER");
  }
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int cpu : cpus) {
      if (cpu < 0 || cpu >= CPU_SETSIZE) {
        return InvalidArgumentError(std::string(field) + ": CPU " + std::to_string(cpu) +
                                    " is out of range");
      }
      CPU_SET(static_cast<std::size_t>(cpu), &set);
    }
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
      return ErrnoError(rc,
                        std::string("cannot pin the telemetry server's threads to the CPUs of ") +
                            std::string(field),
                        "use online CPUs of this process' affinity");
    }
  }
  return Status::Ok();
}

}  // namespace rtloop::telemetry::internal

namespace rtloop::telemetry {

// Here, not in server.cc: programs check addresses without linking gRPC (a lean rtloop-cyclic).
Status CheckServerAddress(std::string_view address) {
  return internal::ParseAddress(address, internal::AddressRole::kListen).status();
}

}  // namespace rtloop::telemetry
