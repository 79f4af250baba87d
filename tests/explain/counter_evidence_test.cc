// Tests of CounterEvidence (telemetry/explain/include/rtloop/explain/counter_evidence.h) with real
// causes and the real /proc: page faults in a step, a higher-priority SCHED_FIFO spinner on the
// task's CPU, loopback network traffic on it; and the contract (not yet sampled, too old,
// unprivileged). Loads run under flock /tmp/rtloop-measure.lock.
#include "rtloop/explain/counter_evidence.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "alloc_counter.h"
#include "child_process.h"
#include "counter_state.h"
#include "rtloop/framework/system_info.h"

namespace rtloop::explain {
namespace {

std::int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void SleepUntil(std::int64_t t_ns) {
  const timespec ts{static_cast<time_t>(t_ns / 1'000'000'000),
                    static_cast<long>(t_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Waits (bounded: 10 s) until `flag` is true; false on time-out.
bool WaitFor(const std::atomic<bool>& flag) {
  const std::int64_t give_up = MonoNs() + 10'000'000'000;
  while (!flag.load()) {
    if (MonoNs() > give_up) return false;
    SleepUntil(MonoNs() + 100'000);
  }
  return true;
}

// The test threads are std::jthread and wait on flags with a bound (WaitFor), so an ASSERT that
// returns early joins them instead of aborting on a joinable std::thread.

// flock(2) on /tmp/rtloop-measure.lock while it lives: loads never overlap another measurement.
class MeasureLock {
 public:
  MeasureLock() : fd_(open("/tmp/rtloop-measure.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~MeasureLock() {
    if (fd_ >= 0) close(fd_);
  }
  MeasureLock(const MeasureLock&) = delete;
  MeasureLock& operator=(const MeasureLock&) = delete;

 private:
  int fd_;
};

// The CPU the load tests use: the last one this process may run on.
int TestCpu() {
  const std::vector<int> cpus = CurrentAffinity();
  return cpus.empty() ? 0 : cpus.back();
}

// Pins the calling thread to `cpu` and, when policy != SCHED_OTHER, sets its policy; an errno.
int PinAndSchedule(int cpu, int policy, int priority) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(cpu), &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return errno;
  if (policy == SCHED_OTHER) return 0;
  sched_param param{};
  param.sched_priority = priority;
  return pthread_setschedparam(pthread_self(), policy, &param);
}

std::unique_ptr<CounterEvidence> MustCreate(const CounterConfig& config) {
  Result<std::unique_ptr<CounterEvidence>> r = CounterEvidence::Create(config);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

// Polls once, lets the step thread run (`go`), polls again once it is `done`, then lets it end
// (`release`) and joins it. False when the step did not finish within WaitFor's bound.
bool PollAroundStep(CounterEvidence* source, std::atomic<bool>* go, const std::atomic<bool>& done,
                    std::atomic<bool>* release, std::jthread* step) {
  source->Poll(MonoNs());
  *go = true;
  const bool finished = WaitFor(done);
  source->Poll(MonoNs());
  *release = true;
  step->join();
  return finished;
}

const Cause* FindCause(const OutlierRecord& r, CauseKind kind, const std::string& name = "") {
  for (const Cause& c : r.causes) {
    if (c.kind == kind && (name.empty() || c.name == name)) return &c;
  }
  return nullptr;
}

std::string Describe(const OutlierRecord& r) {
  std::string s = r.evidence_note + "\n";
  for (const Cause& c : r.causes) {
    s += std::string(CauseKindName(c.kind)) + " " + c.name + " count " + std::to_string(c.count) +
         " ns " + std::to_string(c.ns) + " id " + std::to_string(c.id) + " " + c.detail + "\n";
  }
  for (const std::string& line : r.raw) s += "raw: " + line + "\n";
  return s;
}

// Touches `pages` fresh pages (no locking, no huge pages): one minor fault each.
void TouchFreshPages(std::size_t pages) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, pages * page, MADV_NOHUGEPAGE);
  auto* bytes = static_cast<volatile char*>(p);
  for (std::size_t i = 0; i < pages; ++i) bytes[i * page] = 1;
  munmap(p, pages * page);
}

TEST(CounterEvidenceTest, PageFaultsInsideAStepAreNamedWithTheirCount) {
  constexpr std::size_t kPages = 512;
  std::atomic<int> tid{0};
  std::atomic<bool> go{false};
  std::atomic<bool> done{false};
  std::atomic<bool> release{false};
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::jthread step([&] {
    tid = gettid();
    if (!WaitFor(go)) return;
    begin = MonoNs();
    TouchFreshPages(kPages);
    end = MonoNs();
    done = true;
    WaitFor(release);  // alive until sampled: an exited thread's counters cannot be read
  });
  while (tid.load() == 0) std::this_thread::yield();
  CounterConfig config;
  config.threads = {{tid.load(), -1, SCHED_OTHER, 0}};
  config.why_not_trace = "tracefs: not permitted";
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  ASSERT_TRUE(PollAroundStep(source.get(), &go, done, &release, &step));

  OutlierRecord r =
      MakeRecord(LatencyWindow(0, "step", tid, -1, 0, begin - 1000, begin, end, true));
  ASSERT_TRUE(source->Explain(r.window, &r)) << r.evidence_note;
  FinishRecord(&r);
  EXPECT_EQ(r.evidence, EvidenceKind::kCounters);
  const Cause* faults = FindCause(r, CauseKind::kPageFaults);
  ASSERT_NE(faults, nullptr) << Describe(r);
  EXPECT_GE(faults->count, kPages) << Describe(r);
  EXPECT_EQ(faults->ns, -1) << "a count, not a time";
  EXPECT_NE(faults->detail.find("minor "), std::string::npos) << faults->detail;
  EXPECT_NE(r.evidence_note.find("tracefs: not permitted"), std::string::npos) << r.evidence_note;
  EXPECT_NE(r.evidence_note.find("sampled"), std::string::npos) << r.evidence_note;
  EXPECT_EQ(r.unexplained_ns, r.window.length_ns()) << "counts explain no time";
  EXPECT_GT(source->max_poll_cpu_ns(), 0);
  EXPECT_GE(source->max_poll_cpu_ns(), source->last_poll_cpu_ns());
  EXPECT_GT(source->last_explain_cpu_ns(), 0);
  std::printf("[ faults   ] Poll CPU time max %lld ns, Explain %lld ns\n%s",
              static_cast<long long>(source->max_poll_cpu_ns()),
              static_cast<long long>(source->last_explain_cpu_ns()), Describe(r).c_str());
}

// A SCHED_FIFO task busy in its step on CPU c, and a SCHED_FIFO spinner of higher priority
// pinned to c that wakes in the middle of the step and spins 3 ms: the task is preempted.
struct FifoSpinnerRun {
  static constexpr int kTaskPriority = 50;
  static constexpr int kSpinnerPriority = 60;
  int cpu = 0;
  std::atomic<int> task_tid{0}, task_err{-1}, spinner_tid{0}, spinner_err{-1};
  std::atomic<bool> go{false}, task_running{false}, spun{false}, task_done{false}, release{false};
  std::int64_t wake = 0;
  std::int64_t done_at = 0;

  void Task() {
    task_tid = gettid();
    task_err = PinAndSchedule(cpu, SCHED_FIFO, kTaskPriority);
    if (task_err != 0 || !WaitFor(go)) return;
    wake = MonoNs();
    task_running = true;
    const std::int64_t give_up = wake + 2'000'000'000;
    while (!spun.load() && MonoNs() < give_up) {
    }
    done_at = MonoNs();
    task_done = true;
    WaitFor(release);  // alive until sampled: an exited thread's counters cannot be read
  }
  void Spinner() {
    pthread_setname_np(pthread_self(), "rtloop-spinner");
    spinner_tid = gettid();
    spinner_err = PinAndSchedule(cpu, SCHED_FIFO, kSpinnerPriority);
    if (spinner_err != 0 || !WaitFor(task_running)) return;
    SleepUntil(MonoNs() + 1'000'000);  // wakes while the task is busy: preempts it
    const std::int64_t until = MonoNs() + 3'000'000;
    while (MonoNs() < until) {
    }
    spun = true;
    WaitFor(release);  // stays alive (asleep) until the record is made
  }
  void ReleaseAll() { go = task_running = spun = release = true; }
};

TEST(CounterEvidenceTest, HigherPriorityFifoSpinnerIsNamedAndThePreemptionCounted) {
  const MeasureLock lock;
  FifoSpinnerRun run;
  run.cpu = TestCpu();
  std::jthread task([&] { run.Task(); });
  std::jthread spinner([&] { run.Spinner(); });
  while (run.task_err.load() < 0 || run.spinner_err.load() < 0) std::this_thread::yield();
  if (run.task_err != 0 || run.spinner_err != 0) {
    run.ReleaseAll();
    task.join();
    spinner.join();
    GTEST_SKIP() << "SCHED_FIFO not permitted here ("
                 << std::strerror(run.task_err ? run.task_err.load() : run.spinner_err.load())
                 << "): run as root, grant CAP_SYS_NICE or raise RLIMIT_RTPRIO";
  }
  CounterConfig config;
  config.threads = {{run.task_tid.load(), run.cpu, SCHED_FIFO, FifoSpinnerRun::kTaskPriority}};
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  if (source != nullptr) source->Poll(MonoNs());
  run.go = true;
  const bool finished = WaitFor(run.task_done);
  OutlierRecord r = MakeRecord(LatencyWindow(0, "task", run.task_tid, run.cpu, 0, run.wake - 1000,
                                             run.wake, run.done_at, /*execution=*/true));
  bool explained = false;
  if (source != nullptr && finished) {
    source->Poll(MonoNs());
    explained = source->Explain(r.window, &r);
  }
  run.ReleaseAll();
  task.join();
  spinner.join();
  ASSERT_TRUE(finished && explained) << r.evidence_note;
  FinishRecord(&r);
  const Cause* preemption = FindCause(r, CauseKind::kPreemption);
  ASSERT_NE(preemption, nullptr) << Describe(r);
  EXPECT_GE(preemption->count, 1u);
  const Cause* candidate = FindCause(r, CauseKind::kThread, "rtloop-spinner");
  ASSERT_NE(candidate, nullptr) << Describe(r);
  EXPECT_EQ(candidate->id, run.spinner_tid.load());
  EXPECT_EQ(candidate->ns, -1);
  EXPECT_EQ(candidate->detail.rfind("FIFO 60, may run on CPU " + std::to_string(run.cpu), 0), 0u)
      << candidate->detail;
  for (const Cause& c : r.causes) {
    EXPECT_FALSE(c.kind == CauseKind::kThread && c.id == run.task_tid.load())
        << "the task is not its own candidate";
  }
  std::printf("[ spinner  ] Explain CPU time %lld ns\n%s",
              static_cast<long long>(source->last_explain_cpu_ns()), Describe(r).c_str());
}

// UDP datagrams to a loopback socket from a thread pinned to CPU c: NET_RX runs on c.
TEST(CounterEvidenceTest, LoopbackTrafficOnTheCpuIsNamedAsANetworkSoftirq) {
  const int cpu = TestCpu();
  const MeasureLock lock;
  std::atomic<int> tid{0};
  std::atomic<int> err{-1};
  std::atomic<bool> go{false};
  std::atomic<bool> done{false};
  std::atomic<bool> release{false};
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::jthread traffic([&] {
    tid = gettid();
    const int pin_err = PinAndSchedule(cpu, SCHED_OTHER, 0);
    const int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    const bool bound = bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                       getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    err = pin_err != 0 ? pin_err : bound ? 0 : errno;
    if (WaitFor(go)) {
      begin = MonoNs();
      char buf[256] = {};
      for (int i = 0; i < 2000; ++i) {
        sendto(tx, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        recv(rx, buf, sizeof buf, MSG_DONTWAIT);
      }
      end = MonoNs();
    }
    close(rx);
    close(tx);
    done = true;
    WaitFor(release);  // alive until sampled: an exited thread's counters cannot be read
  });
  while (err.load() < 0) std::this_thread::yield();
  ASSERT_EQ(err.load(), 0) << std::strerror(err.load());
  CounterConfig config;
  config.threads = {{tid.load(), cpu, SCHED_OTHER, 0}};
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  ASSERT_TRUE(PollAroundStep(source.get(), &go, done, &release, &traffic));
  OutlierRecord r = MakeRecord(LatencyWindow(0, "net", tid, cpu, 0, begin, end, end));
  ASSERT_TRUE(source->Explain(r.window, &r)) << r.evidence_note;
  FinishRecord(&r);
  const Cause* net_rx = FindCause(r, CauseKind::kSoftirq, "NET_RX");
  const Cause* net_tx = FindCause(r, CauseKind::kSoftirq, "NET_TX");
  ASSERT_TRUE(net_rx != nullptr || net_tx != nullptr) << Describe(r);
  EXPECT_GT((net_rx != nullptr ? net_rx : net_tx)->count, 0u);
  bool raw_names_it = false;
  for (const std::string& line : r.raw)
    raw_names_it |= line.find("softirq NET_") != std::string::npos;
  EXPECT_TRUE(raw_names_it) << "the raw evidence shows the counter's difference";
  for (const std::string& line : r.raw) EXPECT_EQ(line.find("not read"), std::string::npos) << line;
  std::printf("[ loopback ]\n%s", Describe(r).c_str());
}

TEST(CounterEvidenceTest, PollAllocatesNothingAfterCreate) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out under a sanitizer";
  }
  CounterConfig config;
  config.threads = {{gettid(), TestCpu(), SCHED_OTHER, 0}};
  config.history = 4;
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  const rtloop::testing::AllocationCounter counter;
  for (int i = 0; i < 10; ++i) source->Poll(MonoNs());  // the ring wraps; IRQ lines are learnt
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  EXPECT_EQ(source->polls(), 10u);
  EXPECT_EQ(source->interrupts_truncated(), 0u) << "this VM's /proc/interrupts fits 256 KiB";
}

TEST(CounterEvidenceTest, AWindowAfterTheNewestSnapshotIsNotYetSampledUntilTheNextPoll) {
  CounterConfig config;
  config.threads = {{gettid(), TestCpu(), SCHED_OTHER, 0}};
  config.why_not_trace = "tracefs: not mounted";
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  source->Poll(MonoNs());
  const std::int64_t t = MonoNs();
  const OutlierWindow w = LatencyWindow(0, "t", gettid(), TestCpu(), 0, t, t + 1000, t + 2000);
  OutlierRecord r = MakeRecord(w);
  EXPECT_FALSE(source->Explain(w, &r));
  EXPECT_NE(r.evidence_note.find("not yet sampled"), std::string::npos) << r.evidence_note;
  EXPECT_EQ(r.evidence, EvidenceKind::kNone) << "no counters for this window yet";
  EXPECT_TRUE(r.causes.empty());
  EXPECT_NE(r.evidence_note.find("tracefs: not mounted"), std::string::npos) << r.evidence_note;
  while (MonoNs() <= t + 1000) {
  }
  source->Poll(MonoNs());
  OutlierRecord again = MakeRecord(w);
  EXPECT_TRUE(source->Explain(w, &again)) << again.evidence_note;
  EXPECT_EQ(again.evidence, EvidenceKind::kCounters);
}

TEST(CounterEvidenceTest, AWindowOlderThanTheHistoryIsTooOld) {
  CounterConfig config;
  config.threads = {{gettid(), -1, SCHED_OTHER, 0}};
  config.history = 2;
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  source->Poll(MonoNs());
  const std::int64_t t = MonoNs();
  const OutlierWindow w = LatencyWindow(0, "t", gettid(), -1, 0, t, t + 1, t + 2);
  while (MonoNs() <= t + 1) {
  }
  source->Poll(MonoNs());
  OutlierRecord r = MakeRecord(w);
  EXPECT_TRUE(source->Explain(w, &r))
      << "covered while both snapshots are kept: " << r.evidence_note;
  source->Poll(MonoNs());  // overwrites the snapshot before the window
  OutlierRecord old = MakeRecord(w);
  EXPECT_FALSE(source->Explain(w, &old));
  EXPECT_NE(old.evidence_note.find("too old"), std::string::npos) << old.evidence_note;
}

// The session's counters begin after the tasks' threads started: an early window is not "too
// old" (no history would help), and the note says what it is.
TEST(CounterEvidenceTest, AWindowBeforeTheFirstSnapshotIsSaidToBeSo) {
  CounterConfig config;
  config.threads = {{gettid(), -1, SCHED_OTHER, 0}};
  config.history = 4;
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  const std::int64_t t = MonoNs();
  const OutlierWindow w = LatencyWindow(0, "t", gettid(), -1, 0, t, t + 1, t + 2);
  while (MonoNs() <= t + 2) {
  }
  source->Poll(MonoNs());
  source->Poll(MonoNs());
  OutlierRecord r = MakeRecord(w);
  EXPECT_FALSE(source->Explain(w, &r));
  EXPECT_NE(r.evidence_note.find("counters: before the first /proc snapshot"), std::string::npos)
      << r.evidence_note;
  EXPECT_EQ(r.evidence_note.find("too old"), std::string::npos) << r.evidence_note;
}

TEST(CounterEvidenceTest, AThreadThatHasExitedIsSaidNotReadInsteadOfShowingNoFaults) {
  std::atomic<int> tid{0};
  std::atomic<bool> created{false};
  std::jthread gone([&] {
    tid = gettid();
    WaitFor(created);
  });
  while (tid.load() == 0) std::this_thread::yield();
  CounterConfig config;
  config.threads = {{tid.load(), -1, SCHED_OTHER, 0}};
  Result<std::unique_ptr<CounterEvidence>> source = CounterEvidence::Create(config);
  created = true;
  gone.join();
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  (*source)->Poll(MonoNs());
  const std::int64_t t = MonoNs();
  while (MonoNs() <= t + 1000) {
  }
  (*source)->Poll(MonoNs());
  OutlierRecord r = MakeRecord(LatencyWindow(0, "gone", tid, -1, 0, t, t + 1000, t + 1000));
  ASSERT_TRUE((*source)->Explain(r.window, &r)) << r.evidence_note;
  ASSERT_FALSE(r.raw.empty());
  EXPECT_NE(r.raw[0].find("counters not read"), std::string::npos) << r.raw[0];
}

// Steal time cannot be induced from inside a guest: the attribution is checked on two snapshots
// written by hand (the layout of counter_state.h), 30 ticks of steal around a 1 ms window.
TEST(CounterEvidenceTest, StealIsATimeCappedAtTheWindowAndSaysItIsOverTheInterval) {
  CounterEvidence::State s;
  s.config.max_irq_lines = 1;
  s.cpus = {1};
  s.stride = s.cpu_base(1);
  s.values.assign(2 * s.stride, internal::kNoCount);
  s.begin_ns = {0, 40'000'000};
  s.end_ns = {100'000, 40'100'000};
  s.ns_per_tick = 1'000'000;  // USER_HZ 1000
  s.values[s.cpu_base(0)] = 100;
  s.values[s.stride + s.cpu_base(0)] = 130;
  OutlierRecord r = MakeRecord(LatencyWindow(0, "t", 1, 1, 0, 10'000'000, 11'000'000, 11'000'000));
  internal::AddCpuCauses(s, 0, 1, 0, &r);
  const Cause* steal = FindCause(r, CauseKind::kSteal);
  ASSERT_NE(steal, nullptr) << Describe(r);
  EXPECT_EQ(steal->ns, 1'000'000) << "30 ms of steal, capped at the 1 ms window";
  EXPECT_EQ(steal->count, 30u);
  EXPECT_NE(steal->detail.find("30000 us of steal time on CPU 1 over the 39.9 ms sampling"),
            std::string::npos)
      << steal->detail;
  FinishRecord(&r);
  EXPECT_EQ(r.explained_ns, 1'000'000);
  EXPECT_EQ(r.unexplained_ns, 0);
}

TEST(CounterEvidenceTest, ABadConfigIsRefusedWithTheFix) {
  CounterConfig none;
  Result<std::unique_ptr<CounterEvidence>> r = CounterEvidence::Create(none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  CounterConfig foreign;
  foreign.threads = {{1, -1, SCHED_OTHER, 0}};  // init's thread, not one of ours
  r = CounterEvidence::Create(foreign);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be a thread of this process"), std::string::npos)
      << r.status().ToString();
  CounterConfig short_history;
  short_history.threads = {{gettid(), -1, SCHED_OTHER, 0}};
  short_history.history = 1;
  r = CounterEvidence::Create(short_history);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at least 2"), std::string::npos) << r.status().ToString();
  short_history.history = 1'000'000'000;
  r = CounterEvidence::Create(short_history);
  ASSERT_FALSE(r.ok()) << "refused, not a bad_alloc";
  EXPECT_NE(r.status().message().find("more than 100000"), std::string::npos)
      << r.status().ToString();
}

TEST(CounterEvidenceTest, ACutInterruptsFileAndTheScanBoundAreStatedInTheNote) {
  CounterConfig config;
  config.threads = {{gettid(), TestCpu(), SCHED_OTHER, 0}};
  config.interrupts_bytes = 1024;  // this VM's /proc/interrupts is over 2 KiB
  config.max_threads_scanned = 3;
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  source->Poll(MonoNs());
  const std::int64_t t = MonoNs();
  while (MonoNs() <= t + 1000) {
  }
  source->Poll(MonoNs());
  OutlierRecord r =
      MakeRecord(LatencyWindow(0, "t", gettid(), TestCpu(), 0, t, t + 1000, t + 1000));
  ASSERT_TRUE(source->Explain(r.window, &r)) << r.evidence_note;
  EXPECT_EQ(source->interrupts_truncated(), 2u);
  EXPECT_NE(r.evidence_note.find("/proc/interrupts was cut at 1024 bytes"), std::string::npos)
      << r.evidence_note;
  EXPECT_NE(r.evidence_note.find("3 threads scanned for candidates (the bound"), std::string::npos)
      << r.evidence_note;
}

TEST(CounterEvidenceTest, AWindowOfAnUnwatchedThreadAndCpuIsRefused) {
  CounterConfig config;
  config.threads = {{gettid(), -1, SCHED_OTHER, 0}};
  std::unique_ptr<CounterEvidence> source = MustCreate(config);
  ASSERT_NE(source, nullptr);
  source->Poll(MonoNs());
  source->Poll(MonoNs());
  OutlierRecord r = MakeRecord(LatencyWindow(0, "other", 1, -1, 0, 0, 1, 2));
  EXPECT_FALSE(source->Explain(r.window, &r));
  EXPECT_NE(r.evidence_note.find("is watched"), std::string::npos) << r.evidence_note;
}

// Runs the page-fault check in this (single-threaded) process: 0 when the faults were named.
int CheckFaultsHere() {
  CounterConfig config;
  config.threads = {{gettid(), TestCpu(), SCHED_OTHER, 0}};
  Result<std::unique_ptr<CounterEvidence>> source = CounterEvidence::Create(config);
  if (!source.ok()) return 10;
  (*source)->Poll(MonoNs());
  const std::int64_t begin = MonoNs();
  TouchFreshPages(64);
  const std::int64_t end = MonoNs();
  (*source)->Poll(MonoNs());
  OutlierRecord r =
      MakeRecord(LatencyWindow(0, "t", gettid(), TestCpu(), 0, begin, begin, end, true));
  if (!(*source)->Explain(r.window, &r)) return 11;
  const Cause* faults = FindCause(r, CauseKind::kPageFaults);
  return faults != nullptr && faults->count >= 64 ? 0 : 12;
}

TEST(CounterEvidenceTest, WorksWithoutPrivilege) {
  if (geteuid() != 0) {
    EXPECT_EQ(CheckFaultsHere(), 0) << "already unprivileged";
    return;
  }
  const rtloop::testing::ForkedResult r = rtloop::testing::RunForked([] {
    if (setgid(65534) != 0 || setuid(65534) != 0) return 126;
    return CheckFaultsHere();
  });
  if (r.status == 126) GTEST_SKIP() << "cannot become nobody (65534) here";
  EXPECT_EQ(r.status, 0)
      << "10: Create failed, 11: Explain refused, 12: no page faults named (as nobody); >128: a "
         "signal. "
      << r.out;
}

}  // namespace
}  // namespace rtloop::explain
