#include "fault_watcher.h"

#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <utility>

namespace rtloop::internal {

std::string FormatFaultLine(const std::string& app_name, const TaskReport& r,
                            std::uint64_t new_faults) {
  std::string line = app_name + ": FAULT: task \"" + r.name + "\": " + DescribeFault(r) + "; ";
  const WatchdogAction action = r.info.config.watchdog.effective_action();
  const bool by_watchdog = r.stats.last_fault.reason != FaultReason::kStep;
  if (!by_watchdog) {
    line += "the task stopped (state fault)";
  } else if (action == WatchdogAction::kContinue) {
    line += "the task keeps running (action continue)";
  } else if (action == WatchdogAction::kStopAll) {
    line += "the task stopped (state fault) and every other task stops (action stop-all)";
  } else {
    line += "the task stopped (state fault, action fault-task)";
  }
  if (new_faults > 1 || r.stats.faults > new_faults) {
    line += "; " + std::to_string(r.stats.faults) + " faults so far";
  }
  return line;
}

FaultWatcher::FaultWatcher(const Executor& executor, const telemetry::TelemetryHub* hub,
                           FaultWatcherConfig config)
    : executor_(executor), hub_(hub), config_(std::move(config)) {}

FaultWatcher::~FaultWatcher() { Stop(); }

void FaultWatcher::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    if (!config_.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : config_.cpus) CPU_SET(static_cast<std::size_t>(c), &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    pthread_setname_np(pthread_self(), "rtloop-faults");
    Run();
  });
}

void FaultWatcher::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Check();  // a fault in the last period
}

void FaultWatcher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, config_.period, [this] { return stop_; })) {
    lock.unlock();
    Check();
    lock.lock();
  }
}

void FaultWatcher::Check() {
  std::lock_guard<std::mutex> lock(check_mu_);
  const std::size_t n = executor_.TaskCount();
  if (seen_.size() < n) seen_.resize(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TaskId>(i);
    const std::uint64_t faults = executor_.Stats(id).faults;  // cheap: no report unless needed
    if (faults <= seen_[i]) continue;
    const TaskReport r = MakeTaskReport(&executor_, hub_, id);
    const std::uint64_t fresh = r.stats.faults - seen_[i];
    seen_[i] = r.stats.faults;
    std::fprintf(stderr, "%s\n", FormatFaultLine(config_.app_name, r, fresh).c_str());
    std::fflush(stderr);
    if (config_.on_fault) config_.on_fault(r);
  }
}

}  // namespace rtloop::internal
