// TraceEvidence with real causes, no mock of the kernel: a higher-priority SCHED_FIFO thread busy
// for 4 ms on the task's CPU, loopback network traffic pinned there, bad configurations, an
// unprivileged process, a stale instance of a dead process. Tests that need tracefs skip with the
// reason when not root or tracefs is unavailable; tests that measure latency or run a load hold
// /tmp/rtloop-measure.lock (flock) so they never overlap another measurement on the machine.
#include "rtloop/explain/trace_evidence.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "rtloop/framework/system_info.h"

namespace rtloop::explain {
namespace {

std::int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

bool DirExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
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

int TestCpu() {
  const std::vector<int> online = ReadSystemInfo().online_cpus;
  return online.empty() ? 0 : online.back();
}

// Opens the evidence on `cpu`, or says why the test must skip.
std::unique_ptr<TraceEvidence> OpenOrSkipReason(int cpu, std::string* skip, int buffer_kb = 0) {
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
bool MakeRt(int cpu, int prio, const char* name) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(cpu), &set);
  sched_param p{};
  p.sched_priority = prio;
  pthread_setname_np(pthread_self(), name);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 &&
         pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
}

void PinOnly(int cpu, const char* name) {
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

TaskRun RunTask(int cpu, int prio, std::int64_t period_ns, std::int64_t duration_ns) {
  LiveTask task(cpu, prio, period_ns, duration_ns);
  task.Join();
  TaskRun run;
  run.tid = task.tid();
  run.rt = task.rt();
  for (std::size_t k = 0; k < task.count(); ++k) run.cycles.push_back(task.cycle(k));
  return run;
}

// The cycles' indexes, the worst wake-up latency first.
std::vector<std::size_t> WorstFirst(const TaskRun& run) {
  std::vector<std::size_t> order(run.cycles.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto latency = [&](std::size_t i) {
    return run.cycles[i].wake_ns - run.cycles[i].release_ns;
  };
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return latency(a) > latency(b); });
  return order;
}

std::string Describe(const OutlierRecord& r) {
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

const Cause* ThreadCause(const OutlierRecord& r, int tid) {
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

TEST(TraceEvidenceTest, HigherPriorityBusyThreadIsNamedWithItsTimeInEveryOutlierItCauses) {
  const int cpu = TestCpu();
  OPEN_TRACE_OR_SKIP(trace, cpu);
  MeasureLock lock;
  ASSERT_TRUE(lock.held()) << "/tmp/rtloop-measure.lock stayed busy for 10 minutes";
  Spinner spinner(cpu);
  if (!spinner.rt()) GTEST_SKIP() << "SCHED_FIFO refused (needs CAP_SYS_NICE)";
  // The explainer: every 20 ms (a drain period) it explains the new cycles late by over 1 ms.
  std::vector<OutlierRecord> records;
  std::vector<OutlierRecord> unpinned;
  int incomplete = 0;  // windows whose read lost the task's events (refused, counted)
  {
    LiveTask task(cpu, 80, 1'000'000, 800'000'000);
    ASSERT_TRUE(task.rt());
    std::size_t seen = 0;
    for (;;) {
      const bool finished = task.finished();
      for (const std::size_t n = task.count(); seen < n; ++seen) {
        const Cycle& c = task.cycle(seen);
        if (c.wake_ns - c.release_ns <= 1'000'000) continue;
        OutlierRecord r = MakeRecord(LatencyWindow(0, "rtl-task", task.tid(), cpu, seen,
                                                   c.release_ns, c.wake_ns, c.wake_ns));
        const bool explained = trace->Explain(r.window, &r);
        std::printf("  (Explain: %.2f ms CPU)\n",
                    static_cast<double>(trace->last_explain_cpu_ns()) / 1e6);
        // A read that lost the task's own events under load is refused, not guessed at.
        if (!explained && r.evidence_note.find("its events are missing") != std::string::npos) {
          std::printf("  cycle %zu: %s\n", seen, r.evidence_note.c_str());
          ++incomplete;
          continue;
        }
        EXPECT_TRUE(explained) << r.evidence_note;
        FinishRecord(&r);
        // Not pinned (cpu -1): the CPU is found from where the task ran nearest W_k.
        OutlierRecord u = MakeRecord(
            LatencyWindow(0, "rtl-task", task.tid(), -1, seen, c.release_ns, c.wake_ns, c.wake_ns));
        EXPECT_TRUE(trace->Explain(u.window, &u)) << u.evidence_note;
        records.push_back(std::move(r));
        unpinned.push_back(std::move(u));
      }
      if (finished) break;
      timespec drain{0, 20'000'000};
      clock_nanosleep(CLOCK_MONOTONIC, 0, &drain, nullptr);
    }
  }
  spinner.Release();
  int by_spinner = 0;
  int spinner_alone = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const OutlierRecord& r = records[i];
    std::printf("  %s\n", Describe(r).c_str());
    const auto latency = static_cast<double>(r.window.length_ns());
    EXPECT_EQ(r.evidence, EvidenceKind::kTrace);
    EXPECT_LE(r.explained_ns, r.window.length_ns());
    EXPECT_LE(r.raw.size(), kMaxRawLines);
    EXPECT_FALSE(r.raw.empty());
    // Something else made it late: printed, not asserted.
    if (!spinner.Overlaps(r.window.release_ns, r.window.wake_ns)) continue;
    ++by_spinner;
    const Cause* cause = ThreadCause(r, spinner.tid());
    ASSERT_NE(cause, nullptr) << Describe(r);
    EXPECT_EQ(cause->name, "rtl-spinner");
    EXPECT_EQ(cause->detail, "FIFO 90");
    // On this shared machine other things share a window at times: another thread in a
    // non-preemptible kernel section, or this VM's timer firing milliseconds late (a timer-delay
    // beside the spinner), or a stall no event shows (the unexplained part). The record then names
    // them beside the spinner, whose share is less. Where the spinner is the only cause above
    // 100 us and the events cover the window, it is the window.
    const bool alone =
        r.unexplained_ns < r.window.length_ns() / 5 &&
        std::none_of(r.causes.begin(), r.causes.end(), [&](const Cause& c) {
          return !(c.kind == CauseKind::kThread && c.id == spinner.tid()) && c.ns > 100'000;
        });
    if (alone) {
      ++spinner_alone;
      EXPECT_EQ(r.causes.front().id, spinner.tid()) << "the spinner ranks first";
      EXPECT_NEAR(static_cast<double>(cause->ns), latency, 0.2 * latency) << Describe(r);
    }
    const Cause* again = ThreadCause(unpinned[i], spinner.tid());
    ASSERT_NE(again, nullptr) << unpinned[i].evidence_note;
    EXPECT_EQ(again->ns, cause->ns);
  }
  EXPECT_GE(spinner_alone, 1) << "no outlier had the spinner as its only thread cause";
  EXPECT_GE(by_spinner + incomplete, Spinner::kSpins)
      << "each 4 ms spin delays at least one 1 ms cycle";
  std::printf("Explain() CPU time: last %.2f ms, max %.2f ms (buffer %d KiB per CPU)\n",
              static_cast<double>(trace->last_explain_cpu_ns()) / 1e6,
              static_cast<double>(trace->max_explain_cpu_ns()) / 1e6, trace->buffer_size_kb());
}

// A field of the instance's CPU buffer stats: "overrun" (events overwritten so far), "entries",
// "oldest event ts" (seconds).
double StatsField(const TraceEvidence& trace, int cpu, const std::string& key) {
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

// The cost of Explain() with a full buffer (the steady state): a 1 kHz SCHED_FIFO task runs until
// its CPU's buffer has wrapped; then, 10 times, it runs 200 ms more and the worst cycle of those is
// explained (each a fresh read of the buffer), and finally 19 more windows of the last run are
// explained from the same read (a burst). Prints the figures the README states;
// RTLOOP_TRACE_BUFFER_KB=N measures another size. Asserts no duration. A benchmark, so it runs
// only when asked (RTLOOP_TRACE_COST=1): on a loaded machine the buffer holds less history and the
// windows it picks may be overwritten before they are read, which is what it measures, not a fault.
TEST(TraceEvidenceTest, CostPerExplainWithAFullBuffer) {
  if (std::getenv("RTLOOP_TRACE_COST") == nullptr) {
    GTEST_SKIP() << "a benchmark: RTLOOP_TRACE_COST=1 runs it (telemetry/explain/README.md, "
                    "\"Cost and buffer size\")";
  }
  const int cpu = TestCpu();
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN and tracefs access)";
  TraceConfig config;
  config.cpus = {cpu};
  if (const char* kb = std::getenv("RTLOOP_TRACE_BUFFER_KB")) config.buffer_size_kb = std::atoi(kb);
  Result<std::unique_ptr<TraceEvidence>> opened = TraceEvidence::Open(config);
  if (!opened.ok()) GTEST_SKIP() << "tracefs unavailable: " << opened.status().ToString();
  TraceEvidence& trace = **opened;
  MeasureLock lock;
  ASSERT_TRUE(lock.held()) << "/tmp/rtloop-measure.lock stayed busy for 10 minutes";
  // Run in 1 s slices until the buffer wrapped (at most 30 s).
  TaskRun run;
  for (int i = 0; i < 30 && StatsField(trace, cpu, "overrun") <= 0; ++i) {
    run = RunTask(cpu, 80, 1'000'000, 1'000'000'000);
    ASSERT_TRUE(run.rt) << "SCHED_FIFO refused";
  }
  ASSERT_GT(StatsField(trace, cpu, "overrun"), 0) << "the buffer never wrapped in 30 s";
  const auto explain = [&](std::size_t k) {
    const Cycle& c = run.cycles[k];
    OutlierRecord r = MakeRecord(
        LatencyWindow(0, "rtl-task", run.tid, cpu, k, c.release_ns, c.wake_ns, c.wake_ns));
    const bool ok = trace.Explain(r.window, &r);
    EXPECT_TRUE(ok) << r.evidence_note;
    return ok ? static_cast<double>(trace.last_explain_cpu_ns()) / 1e6 : 0.0;
  };
  double fresh_sum = 0;
  double fresh_max = 0;
  for (int i = 0; i < 10; ++i) {
    run = RunTask(cpu, 80, 1'000'000, 200'000'000);
    const double ms = explain(WorstFirst(run).front());
    fresh_sum += ms;
    fresh_max = std::max(fresh_max, ms);
  }
  const double entries = StatsField(trace, cpu, "entries");
  const double history_s = static_cast<double>(run.cycles.back().wake_ns) / 1e9 -
                           StatsField(trace, cpu, "oldest event ts");
  const std::vector<std::size_t> order = WorstFirst(run);
  double burst_max = 0;
  for (std::size_t n = 1; n < std::min<std::size_t>(order.size(), 20); ++n) {
    burst_max = std::max(burst_max, explain(order[n]));
  }
  std::printf(
      "buffer %d KiB per CPU: %.0f events, %.2f s of history; Explain() CPU time with a fresh "
      "read: mean %.2f ms, max %.2f ms (10 records); from the same read (a burst): max %.2f ms\n",
      trace.buffer_size_kb(), entries, history_s, fresh_sum / 10, fresh_max, burst_max);
}

// Loopback UDP traffic from threads pinned to the task's CPU: its softirqs (NET_RX, NET_TX) run
// there and delay the task's wake-ups.
TEST(TraceEvidenceTest, LoopbackTrafficOnTheTasksCpuIsNamedAsANetworkSoftirq) {
  const int cpu = TestCpu();
  // The records are made after the run, and a softirq per packet fills the default buffer in a
  // quarter of a second here: this test keeps the whole run (the explainer of a real run
  // explains within a drain period, and the note says when a window was overwritten).
  OPEN_TRACE_OR_SKIP(trace, cpu, 16384);
  MeasureLock lock;
  ASSERT_TRUE(lock.held()) << "/tmp/rtloop-measure.lock stayed busy for 10 minutes";
  const int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(rx, 0);
  ASSERT_GE(tx, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  timeval timeout{0, 100'000};
  setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::atomic<bool> stop{false};
  std::thread receiver([&] {
    PinOnly(cpu, "rtl-udp-rx");
    std::vector<char> buf(65536);
    while (!stop) (void)recv(rx, buf.data(), buf.size(), 0);
  });
  std::thread sender([&] {
    PinOnly(cpu, "rtl-udp-tx");
    const std::vector<char> payload(32 * 1024, 'x');
    while (!stop) {
      (void)sendto(tx, payload.data(), payload.size(), MSG_DONTWAIT,
                   reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    }
  });
  const TaskRun run = RunTask(cpu, 80, 1'000'000, 500'000'000);
  stop = true;
  sender.join();
  receiver.join();
  close(rx);
  close(tx);
  ASSERT_TRUE(run.rt) << "SCHED_FIFO refused";
  // The 30 worst wake-ups.
  const std::vector<std::size_t> order = WorstFirst(run);
  const auto latency = [&](std::size_t i) {
    return run.cycles[i].wake_ns - run.cycles[i].release_ns;
  };
  const std::size_t worst = std::min<std::size_t>(order.size(), 30);
  int network = 0;
  for (std::size_t n = 0; n < worst; ++n) {
    const std::size_t k = order[n];
    const Cycle& c = run.cycles[k];
    OutlierRecord r = MakeRecord(
        LatencyWindow(0, "rtl-task", run.tid, cpu, k, c.release_ns, c.wake_ns, c.wake_ns));
    if (!trace->Explain(r.window, &r)) {
      ADD_FAILURE() << r.evidence_note;
      continue;
    }
    FinishRecord(&r);
    EXPECT_LE(r.explained_ns, latency(k));
    const bool named = std::any_of(r.causes.begin(), r.causes.end(), [](const Cause& cause) {
      return (cause.kind == CauseKind::kSoftirq &&
              (cause.name == "NET_RX" || cause.name == "NET_TX")) ||
             cause.kind == CauseKind::kIrq;
    });
    if (named) {
      ++network;
      if (network <= 3) std::printf("  %s\n", Describe(r).c_str());
    }
  }
  EXPECT_GE(network, 1) << "none of the 30 worst wake-ups names the network softirq or an IRQ";
  std::printf("%d of the %zu worst wake-ups name NET_RX/NET_TX or an IRQ; Explain() max %.2f ms\n",
              network, worst, static_cast<double>(trace->max_explain_cpu_ns()) / 1e6);
}

TEST(TraceEvidenceTest, ExplainSaysWhenTheWindowIsNoLongerInTheBufferOrTheCpuIsNotTraced) {
  const int cpu = TestCpu();
  OPEN_TRACE_OR_SKIP(trace, cpu);
  // Some events on the CPU (a few cycles of a task there), then a window from long before the
  // instance existed.
  ASSERT_FALSE(RunTask(cpu, 80, 1'000'000, 20'000'000).cycles.empty());
  const std::int64_t old = NowNs() - 3'600'000'000'000LL;
  OutlierRecord r = MakeRecord(LatencyWindow(0, "t", 1, cpu, 0, old, old + 10'000, old + 20'000));
  EXPECT_FALSE(trace->Explain(r.window, &r));
  EXPECT_EQ(r.evidence, EvidenceKind::kNone);
  EXPECT_NE(r.evidence_note.find(trace->instance_name()), std::string::npos) << r.evidence_note;
  EXPECT_NE(r.evidence_note.find("no longer in the buffer, whose oldest event is at"),
            std::string::npos)
      << r.evidence_note;
  EXPECT_TRUE(r.causes.empty());
  r = MakeRecord(LatencyWindow(0, "t", 1, cpu + 1000, 0, old, old + 10'000, old + 20'000));
  EXPECT_FALSE(trace->Explain(r.window, &r));
  EXPECT_NE(r.evidence_note.find("does not trace CPU"), std::string::npos) << r.evidence_note;
  // Unpinned, and the thread never ran: its CPU is unknown.
  r = MakeRecord(LatencyWindow(0, "t", 999999, -1, 0, old, old + 10'000, old + 20'000));
  EXPECT_FALSE(trace->Explain(r.window, &r));
  EXPECT_NE(r.evidence_note.find("unknown"), std::string::npos) << r.evidence_note;
  // A recent window of a thread the read does not show on the CPU (as when the read lost the
  // task's events under load): refused, not attributed to whoever ran last before the gap.
  const TaskRun run = RunTask(cpu, 80, 1'000'000, 20'000'000);
  ASSERT_FALSE(run.cycles.empty());
  const Cycle& c = run.cycles.back();
  r = MakeRecord(LatencyWindow(0, "t", 999999, cpu, 0, c.release_ns, c.wake_ns, c.wake_ns));
  EXPECT_FALSE(trace->Explain(r.window, &r));
  EXPECT_NE(r.evidence_note.find("does not show thread 999999 around W_k"), std::string::npos)
      << r.evidence_note;
  EXPECT_TRUE(r.causes.empty());
  // The task's own window is explained from the same read.
  r = MakeRecord(LatencyWindow(0, "t", run.tid, cpu, 0, c.release_ns, c.wake_ns, c.wake_ns));
  EXPECT_TRUE(trace->Explain(r.window, &r)) << r.evidence_note;
}

TEST(TraceEvidenceTest, OpenRefusesABadConfigWithTheFix) {
  TraceConfig config;
  config.cpus = {4096};
  Result<std::unique_ptr<TraceEvidence>> t = TraceEvidence::Open(config);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("CPU 4096"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("online CPUs"), std::string::npos);
  config.cpus = {};
  config.buffer_size_kb = 0;
  t = TraceEvidence::Open(config);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("buffer_size_kb"), std::string::npos);
  config.buffer_size_kb = 64;
  config.instance = "../escape";
  t = TraceEvidence::Open(config);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceEvidenceTest, OpenAsAnUnprivilegedUserSaysWhatIsMissing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become nobody (setuid)";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    Result<std::unique_ptr<TraceEvidence>> t = TraceEvidence::Open({});
    const std::string out = t.ok() ? std::string("OK") : t.status().ToString();
    (void)!write(fds[1], out.data(), out.size());
    _exit(t.ok() ? 1 : 0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child crashed";
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;
  std::printf("as nobody: %s\n", out.c_str());
  EXPECT_NE(out.find("PERMISSION_DENIED"), std::string::npos) << out;
  EXPECT_NE(out.find("run as root"), std::string::npos) << out;
}

// Runs `body` in a child in its own mount namespace where tracefs (and debugfs) are not mounted;
// returns what the child wrote, or why it could not run.
template <typename Body>
std::string InNamespaceWithoutTracefs(Body body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    close(fds[0]);
    std::string out = "SKIP: cannot make a private mount namespace";
    if (unshare(CLONE_NEWNS) == 0 &&
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
      umount2("/sys/kernel/tracing", MNT_DETACH);
      umount2("/sys/kernel/debug/tracing", MNT_DETACH);
      umount2("/sys/kernel/debug", MNT_DETACH);
      out = body();
    }
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status)) return "the child crashed";
  return out;
}

TEST(TraceEvidenceTest, TracefsNotMountedIsMountedWhenAllowedAndOtherwiseNamedWithTheFix) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) for a mount namespace";
  const int cpu = TestCpu();
  // Root in a namespace without tracefs: Open() mounts it at /sys/kernel/tracing, as rtla does.
  const std::string mounted = InNamespaceWithoutTracefs([cpu]() -> std::string {
    TraceConfig config;
    config.cpus = {cpu};
    Result<std::unique_ptr<TraceEvidence>> t = TraceEvidence::Open(config);
    if (!t.ok()) return t.status().ToString();
    return (*t)->instance_path();
  });
  if (mounted.rfind("SKIP", 0) == 0) GTEST_SKIP() << mounted;
  EXPECT_EQ(mounted,
            "/sys/kernel/tracing/instances/rtloop-" + mounted.substr(mounted.rfind('-') + 1));
  // Not allowed to mount (nobody): the Status names the fix.
  const std::string refused = InNamespaceWithoutTracefs([]() -> std::string {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) return "setuid";
    Result<std::unique_ptr<TraceEvidence>> t = TraceEvidence::Open({});
    return t.ok() ? std::string("OK") : t.status().ToString();
  });
  std::printf("not mounted, as nobody: %s\n", refused.c_str());
  EXPECT_NE(refused.find("PERMISSION_DENIED: tracefs is not mounted and mounting it at "
                         "/sys/kernel/tracing failed"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("mount -t tracefs nodev /sys/kernel/tracing"), std::string::npos);
}

TEST(TraceEvidenceTest, OpenRemovesTheInstanceOfADeadProcessAndSaysSoThenRemovesItsOwn) {
  const int cpu = TestCpu();
  std::string instances;
  {
    OPEN_TRACE_OR_SKIP(probe, cpu);
    const std::string& path = probe->instance_path();
    instances = path.substr(0, path.rfind('/'));
  }
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string stale = instances + "/rtloop-" + std::to_string(dead);
  const std::string alive = instances + "/rtloop-1";  // init lives: never removed
  ASSERT_EQ(mkdir(stale.c_str(), 0750), 0);
  ASSERT_EQ(mkdir(alive.c_str(), 0750), 0);
  std::string own;
  {
    TraceConfig config;
    config.cpus = {cpu};
    Result<std::unique_ptr<TraceEvidence>> t = TraceEvidence::Open(config);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    own = (*t)->instance_path();
    EXPECT_FALSE(DirExists(stale));
    EXPECT_TRUE(DirExists(alive));
    EXPECT_TRUE(DirExists(own));
    ASSERT_EQ((*t)->open_notes().size(), 1u);
    EXPECT_NE((*t)->open_notes()[0].find("rtloop-" + std::to_string(dead)), std::string::npos);
    EXPECT_NE((*t)->open_notes()[0].find("is gone"), std::string::npos);
    EXPECT_EQ(own, instances + "/rtloop-" + std::to_string(getpid()));
  }
  EXPECT_FALSE(DirExists(own)) << "the destructor removes the instance";
  EXPECT_EQ(rmdir(alive.c_str()), 0);
  // A second instance of the same name in this process is refused with the fix.
  TraceConfig config;
  config.cpus = {cpu};
  Result<std::unique_ptr<TraceEvidence>> first = TraceEvidence::Open(config);
  ASSERT_TRUE(first.ok());
  Result<std::unique_ptr<TraceEvidence>> second = TraceEvidence::Open(config);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another name"), std::string::npos);
  EXPECT_TRUE(DirExists((*first)->instance_path())) << "the refused Open removed nothing";
}

}  // namespace
}  // namespace rtloop::explain
