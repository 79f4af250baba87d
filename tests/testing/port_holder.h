// PortHolder: a TCP socket listening on 127.0.0.1 on a port the kernel picked, held until the
// object goes away: the "port in use" of bad-input tests. FreeLoopbackPort(): a port that was free
// a moment ago, for a program that needs a number up front.
//
//   const rtloop::testing::PortHolder busy;
//   ASSERT_GT(busy.port(), 0);
//   Status s = Start("127.0.0.1:" + std::to_string(busy.port()));   // must fail: in use
//
// Not thread-safe (one test thread); header-only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rtloop::testing {

class PortHolder {
 public:
  PortHolder() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        listen(fd_, 1) == 0 && getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~PortHolder() {
    if (fd_ >= 0) close(fd_);
  }
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;

  // The port held; 0 when the socket could not be set up.
  int port() const noexcept { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

// A TCP port that was free a moment ago on 127.0.0.1 (for programs that need a port number
// up front, as Prometheus's --web.listen-address does).
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace rtloop::testing
