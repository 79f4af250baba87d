// Helpers for tests of file handling: a full file system without privileges, and a bound on calls
// that must never block on a FIFO. Header-only (the integration tests use it without linking
// rtloop_testing).
//
//   { const FileSizeLimit full(4096); EXPECT_FALSE(file.Write(big).ok()); }   // EFBIG past 4 KiB
//   Result<std::string> r = WithoutBlocking([&] { return ReadInputFile(fifo); }, fifo);
//
// Threading: FileSizeLimit changes process-wide settings (RLIMIT_FSIZE, SIGXFSZ): one at a time.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

namespace rtloop::testing {

// While it lives, writes past `bytes` in any file fail with EFBIG (SIGXFSZ ignored): what ENOSPC
// does on a full disk, without mounting one.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_signal_ = ::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_signal_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  sighandler_t old_signal_;
};

// fn()'s result; a call still blocked after 5 s fails the test and is released by opening `fifo`
// for reading and writing (so the test fails instead of hanging).
template <typename Fn>
auto WithoutBlocking(Fn fn, const std::string& fifo) {
  auto future = std::async(std::launch::async, fn);
  if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the call blocked on " << fifo;
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  return future.get();
}

}  // namespace rtloop::testing
