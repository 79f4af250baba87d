// Helpers of the TraceEvidence tests (trace_evidence_test.cc, trace_cost_test.cc): a periodic
// SCHED_FIFO task like rtloop's cyclic task, a higher-priority spinner, the measurement lock, the
// instance's buffer stats. Real threads on a real CPU, no mock of the kernel.
//
//   OPEN_TRACE_OR_SKIP(trace, TestCpu());
//   TaskRun run = RunTask(cpu, 80, 1'000'000, 200'000'000);   // 200 ms of a 1 kHz task
//
// Thread contract: each helper from the test's thread; LiveTask and Spinner own their threads.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rtloop/explain/outlier.h"
#include "rtloop/explain/trace_evidence.h"
#include "rtloop/framework/system_info.h"

namespace rtloop::explain::live {

inline std::int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

// The machine-wide measurement lock, taken with a bound (10 minutes).
class MeasureLock {
 public:
  MeasureLock() : fd_(open("/tmp/rtloop-measure.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
    for (int i = 0; i < 6000 && fd_ >= 0; ++i) {
      if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
        held_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a lock, bounded
    }
  }
  ~MeasureLock() {
    if (fd_ >= 0) close(fd_);
  }
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

inline int TestCpu() {
  const std::vector<int> online = ReadSystemInfo().online_cpus;
  return online.empty() ? 0 : online.back();
}

// Opens the evidence on `cpu`, or says why the test must skip.
inline std::unique_ptr<TraceEvidence> OpenOrSkipReason(int cpu, std::string* skip,
                                                       int buffer_kb = 0) {
  if (geteuid() != 0) {
    *skip = "needs root (CAP_SYS_ADMIN and tracefs access) for a trace instance";
    return nullptr;
  }
  TraceConfig config;
  config.cpus = {cpu};
  if (buffer_kb > 0) config.buffer_size_kb = buffer_kb;
  Result<std::unique_ptr<TraceEvidence>> t = TraceEvidence::Open(config);
  if (!t.ok()) {
    *skip = "tracefs unavailable: " + t.status().ToString();
    return nullptr;
  }
  return std::move(*t);
}

#define OPEN_TRACE_OR_SKIP(var, cpu, ...)                                                     \
  std::string skip_reason_;                                                                   \
  std::unique_ptr<TraceEvidence> var = OpenOrSkipReason((cpu), &skip_reason_, ##__VA_ARGS__); \
  if (!var) GTEST_SKIP() << skip_reason_

// Pins the calling thread to `cpu` at SCHED_FIFO `prio` and names it; false when refused.
inline bool MakeRt(int cpu, int prio, const char* name) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(cpu), &set);
  sched_param p{};
  p.sched_priority = prio;
  pthread_setname_np(pthread_self(), name);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 &&
         pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
}

inline void PinOnly(int cpu, const char* name) {
  pthread_setname_np(pthread_self(), name);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(cpu), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

struct Cycle {
  std::int64_t release_ns;
  std::int64_t wake_ns;
};

// A periodic SCHED_FIFO task like rtloop's cyclic task: absolute sleeps, skip policy on overrun.
// It publishes each cycle as it ends (count, release order), so an explainer thread can explain
// outliers within a drain period, as the Runtime's does.
class LiveTask {
 public:
  LiveTask(int cpu, int prio, std::int64_t period_ns, std::int64_t duration_ns)
      : cycles_(static_cast<std::size_t>(duration_ns / period_ns) + 2) {
    std::promise<void> started;
    std::future<void> ready = started.get_future();
    thread_ = std::thread([this, cpu, prio, period_ns, duration_ns, &started] {
      rt_ = MakeRt(cpu, prio, "rtl-task");
      tid_ = static_cast<int>(gettid());
      started.set_value();
      const std::int64_t start = NowNs();
      std::int64_t next = start + period_ns;
      std::size_t n = 0;
      while (next < start + duration_ns && n < cycles_.size()) {
        timespec ts{next / 1'000'000'000LL, next % 1'000'000'000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
        }
        const std::int64_t w = NowNs();
        cycles_[n] = {next, w};
        count_.store(++n, std::memory_order_release);
        next += period_ns;
        while (next <= w) next += period_ns;
      }
      finished_.store(true, std::memory_order_release);
    });
    ready.wait();
  }
  ~LiveTask() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  std::size_t count() const { return count_.load(std::memory_order_acquire); }
  const Cycle& cycle(std::size_t k) const { return cycles_[k]; }
  int tid() const { return tid_; }
  bool rt() const { return rt_; }

 private:
  std::vector<Cycle> cycles_;
  std::atomic<std::size_t> count_{0};
  std::atomic<bool> finished_{false};
  int tid_ = 0;
  bool rt_ = false;
  std::thread thread_;
};

struct TaskRun {
  std::vector<Cycle> cycles;
  int tid = 0;
  bool rt = false;
};

inline TaskRun RunTask(int cpu, int prio, std::int64_t period_ns, std::int64_t duration_ns) {
  LiveTask task(cpu, prio, period_ns, duration_ns);
  task.Join();
  TaskRun run;
  run.tid = task.tid();
  run.rt = task.rt();
  for (std::size_t k = 0; k < task.count(); ++k) run.cycles.push_back(task.cycle(k));
  return run;
}

// The cycles' indexes, the worst wake-up latency first.
inline std::vector<std::size_t> WorstFirst(const TaskRun& run) {
  std::vector<std::size_t> order(run.cycles.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto latency = [&](std::size_t i) {
    return run.cycles[i].wake_ns - run.cycles[i].release_ns;
  };
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return latency(a) > latency(b); });
  return order;
}

inline std::string Describe(const OutlierRecord& r) {
  std::string s = "cycle " + std::to_string(r.window.cycle) + " latency " +
                  std::to_string(r.window.length_ns() / 1000) + " us [" +
                  EvidenceKindName(r.evidence) + ": " + r.evidence_note + "]";
  for (const Cause& c : r.causes) {
    s += "\n    " + std::string(CauseKindName(c.kind)) + " " + c.name + " (" +
         std::to_string(c.id) + ", " + c.detail + ") " + std::to_string(c.ns / 1000) + " us x" +
         std::to_string(c.count);
  }
  s += "\n    unexplained " + std::to_string(r.unexplained_ns / 1000) + " us";
  return s;
}

inline const Cause* ThreadCause(const OutlierRecord& r, int tid) {
  for (const Cause& c : r.causes) {
    if (c.kind == CauseKind::kThread && c.id == tid) return &c;
  }
  return nullptr;
}

// The spinner: SCHED_FIFO 90 on the task's CPU, busy 4 ms at a time, alive until released (so its
// policy is read live: "FIFO 90"). The destructor releases and joins it, whatever failed.
class Spinner {
 public:
  static constexpr int kSpins = 4;
  static constexpr std::int64_t kSpinNs = 4'000'000;

  explicit Spinner(int cpu) {
    std::promise<bool> rt;
    std::future<bool> is_rt = rt.get_future();
    thread_ = std::thread([this, cpu, &rt, done = release_.get_future()] {
      const bool ok = MakeRt(cpu, 90, "rtl-spinner");
      tid_ = static_cast<int>(gettid());
      rt.set_value(ok);
      if (!ok) return;
      for (int i = 0; i < kSpins; ++i) {
        timespec gap{0, 150'000'000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &gap, nullptr);
        const std::int64_t s0 = NowNs();
        while (NowNs() - s0 < kSpinNs) {
        }
        spins_[static_cast<std::size_t>(i)] = {s0, NowNs()};
      }
      done.wait();
    });
    rt_ = is_rt.get();
  }
  ~Spinner() { Release(); }
  void Release() {
    if (!released_) release_.set_value();
    released_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool rt() const { return rt_; }
  int tid() const { return tid_; }
  // After Release(): did the window overlap a spin?
  bool Overlaps(std::int64_t begin, std::int64_t end) const {
    return std::any_of(spins_.begin(), spins_.end(),
                       [&](const auto& s) { return s.first < end && s.second > begin; });
  }

 private:
  std::array<std::pair<std::int64_t, std::int64_t>, kSpins> spins_{};
  std::promise<void> release_;
  bool released_ = false;
  bool rt_ = false;
  int tid_ = 0;
  std::thread thread_;
};

// A field of the instance's CPU buffer stats: "overrun" (events overwritten so far), "entries",
// "oldest event ts" (seconds).
inline double StatsField(const TraceEvidence& trace, int cpu, const std::string& key) {
  std::FILE* f = std::fopen(
      (trace.instance_path() + "/per_cpu/cpu" + std::to_string(cpu) + "/stats").c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  double value = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::string(line).rfind(key + ": ", 0) == 0) value = std::atof(line + key.size() + 2);
  }
  std::fclose(f);
  return value;
}

}  // namespace rtloop::explain::live
