#include "monitor_thread.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>

#include "rtloop/framework/stop_signals.h"

namespace example_cli {
namespace {

using Clock = std::chrono::steady_clock;

// The longest sigtimedwait(): how soon Stop() is noticed.
constexpr std::chrono::nanoseconds kPoll = std::chrono::milliseconds(50);

sigset_t MonitorSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

void BlockMonitorSignal() {
  const sigset_t set = MonitorSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

MonitorThread::MonitorThread(std::chrono::nanoseconds tick, std::function<void(Wake)> on_wake)
    : tick_(std::max(tick, kPoll)), on_wake_(std::move(on_wake)) {
  const rtloop::SignalBlockScope blocked({SIGINT, SIGTERM, SIGUSR1});  // inherited by the thread
  thread_ = std::thread([this] { Run(); });
}

MonitorThread::~MonitorThread() { Stop(); }

void MonitorThread::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void MonitorThread::Run() {
  pthread_setname_np(pthread_self(), "monitor");
  const sigset_t set = MonitorSignals();
  auto next_tick = Clock::now() + tick_;
  while (!stop_.load(std::memory_order_relaxed)) {
    const auto wait = std::min<std::chrono::nanoseconds>(kPoll, next_tick - Clock::now());
    timespec ts{0, 0};
    if (wait.count() > 0) {
      ts.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
    }
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (stop_.load(std::memory_order_relaxed)) break;
    if (sig == SIGUSR1) {
      on_wake_(Wake::kSignal);
    } else if (Clock::now() >= next_tick) {
      on_wake_(Wake::kTick);
      next_tick += tick_;
      if (next_tick < Clock::now()) next_tick = Clock::now() + tick_;  // a slow on_wake
    }
  }
}

}  // namespace example_cli
