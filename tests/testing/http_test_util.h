// Test helpers for the HTTP endpoint: a blocking HTTP/1.0 GET over a loopback socket (the test's
// own minimal client: status code, headers and body), any bytes sent as they are (HttpRaw), and
// counts of the process's open file descriptors and threads for leak checks.
//
//   HttpReply r = HttpGet(server.port(), "/metrics", "Authorization: Bearer secret\r\n");
//   EXPECT_EQ(r.status, 200) << r.error;
//
// Thread-safe (no shared state); blocking, bounded by `timeout`.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace rtloop::telemetry::testing {

struct HttpReply {
  int status = 0;       // 0: no reply (see error)
  std::string headers;  // the header block, lines separated by \r\n
  std::string body;
  std::string error;
  std::string raw;  // every byte received
};

// A TCP socket connected to 127.0.0.1:port, or -1.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` byte for byte and reads the reply until the server closes: what a client of
// any kind (a browser's WebSocket, a proxy, a scanner) gets back. status 0 when the reply does
// not start with an HTTP/1.x status line; `raw` holds whatever came.
inline HttpReply HttpRaw(int port, const std::string& request,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000)) {
  HttpReply r;
  const int fd = ConnectLoopback(port);
  if (fd < 0) {
    r.error = "connect failed";
    return r;
  }
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    r.error = "send failed";
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.error = "timed out";
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    r.raw.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  const std::size_t end = r.raw.find("\r\n\r\n");
  // "HTTP/1.x NNN ": rtloop's endpoint always says 1.1; other servers (Prometheus) answer an
  // HTTP/1.0 request with 1.0.
  if (end == std::string::npos || r.raw.compare(0, 7, "HTTP/1.") != 0 || r.raw.size() < 13 ||
      r.raw[8] != ' ') {
    if (r.error.empty()) r.error = "no HTTP reply (" + std::to_string(r.raw.size()) + " bytes)";
    return r;
  }
  r.status = std::atoi(r.raw.c_str() + 9);
  r.headers = r.raw.substr(0, end);
  r.body = r.raw.substr(end + 4);
  return r;
}

inline HttpReply HttpGet(int port, const std::string& path, const std::string& extra_headers = {},
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000),
                         const char* method = "GET") {
  return HttpRaw(port,
                 std::string(method) + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" +
                     extra_headers + "\r\n",
                 timeout);
}

// Entries in /proc/self/<dir> ("fd" or "task").
inline int CountProcEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir((std::string("/proc/self/") + dir).c_str())) {
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// "fd -> target" lines of /proc/self/fd, for a leak message.
inline std::string ListFds() {
  std::string out;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[256] = {};
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      out += std::string(e->d_name) + " -> " + (n > 0 ? target : "?");
      // A socket: its line of /proc/net/tcp (local and remote address:port in hex, state).
      const std::string t(target);
      if (t.rfind("socket:[", 0) == 0) {
        const std::string inode = t.substr(8, t.size() - 9);
        std::ifstream tcp("/proc/net/tcp");
        for (std::string line; std::getline(tcp, line);) {
          if (line.find(" " + inode + " ") != std::string::npos) out += "  tcp: " + line;
        }
      }
      out += "\n";
    }
    closedir(d);
  }
  return out;
}

// The value of the first sample line of a /metrics text that starts with `series` (a name plus
// the start of its labels), or -1.
inline double Sample(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series, 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

}  // namespace rtloop::telemetry::testing
