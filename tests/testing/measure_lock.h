// MeasureLock: the machine's measurement lock, /tmp/rtloop-measure.lock (flock), held for the
// object's life, as `flock /tmp/rtloop-measure.lock CMD` holds it for a command: two latency
// measurements or load runs never overlap, whoever starts them (a test, a benchmark, a person).
//
//   const rtloop::testing::MeasureLock lock(std::chrono::minutes(5));
//   ASSERT_TRUE(lock.held()) << lock.why_not();
//   ... start the load, measure ...
//
// Not thread-safe (one test thread); header-only.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace rtloop::testing {

class MeasureLock {
 public:
  // Waits up to `bound` for the lock.
  explicit MeasureLock(std::chrono::seconds bound) {
    fd_ = open("/tmp/rtloop-measure.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      why_not_ = std::string("cannot open /tmp/rtloop-measure.lock: ") + std::strerror(errno);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        why_not_ = "/tmp/rtloop-measure.lock: another measurement held it for " +
                   std::to_string(bound.count()) + " s";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    held_ = true;
  }
  ~MeasureLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  MeasureLock(const MeasureLock&) = delete;
  MeasureLock& operator=(const MeasureLock&) = delete;

  bool held() const noexcept { return held_; }
  const std::string& why_not() const noexcept { return why_not_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  std::string why_not_;
};

}  // namespace rtloop::testing
