#include "rtloop/framework/executor.h"

#include <alloca.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/system_info.h"
#include "sched_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RTLOOP_UNDER_SANITIZER 1
#else
#define RTLOOP_UNDER_SANITIZER 0
#endif

namespace rtloop {

namespace {

using internal::IsRealtimePolicy;
using internal::LinuxPolicyName;

// The signal Stop() sends to wake a sleeping RT thread early. Its handler does nothing; the
// interrupted sleep returns EINTR and the thread sees its stop flag.
int WakeSignal() noexcept { return SIGRTMIN + 3; }
// The signal of WaitMode::kPosixTimer's per-thread timer (as cyclictest -x).
constexpr int kTimerSignal = SIGALRM;

extern "C" void RtloopWakeHandler(int /*sig*/) {}

// The executor whose task runs on this thread (nullptr elsewhere): Stop() from a task's own
// thread would wait for itself.
thread_local const void* t_running_executor = nullptr;

void InstallWakeHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = RtloopWakeHandler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: the sleep must return EINTR
    sigaction(WakeSignal(), &sa, nullptr);
  });
}

// Linux's struct sched_attr (glibc 2.36 has no wrapper).
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
};

int Gettid() noexcept { return static_cast<int>(syscall(SYS_gettid)); }

// Touches `bytes` of this thread's stack so that its pages are present (and locked under
// mlockall) before the first release.
__attribute__((noinline)) void PrefaultStack(std::size_t bytes) {
  auto* p = static_cast<volatile char*>(alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 0;
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// What an executor moved a thread to housekeeping CPUs from, so that a later executor created
// on the same thread still sees the process's CPUs rather than the housekeeping ones.
struct HousekeepingMove {
  std::mutex mu;
  int tid = 0;
  std::vector<int> housekeeping;
  std::vector<int> original;
};
HousekeepingMove& LastHousekeepingMove() {
  static HousekeepingMove move;
  return move;
}
std::vector<int> OriginalAffinity(const std::vector<int>& current) {
  HousekeepingMove& m = LastHousekeepingMove();
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.tid == static_cast<int>(syscall(SYS_gettid)) && m.housekeeping == current) {
    return m.original;
  }
  return current;
}
void RememberHousekeepingMove(const std::vector<int>& original,
                              const std::vector<int>& housekeeping) {
  HousekeepingMove& m = LastHousekeepingMove();
  std::lock_guard<std::mutex> lock(m.mu);
  m.tid = static_cast<int>(syscall(SYS_gettid));
  m.original = original;
  m.housekeeping = housekeeping;
  std::sort(m.housekeeping.begin(), m.housekeeping.end());
  m.housekeeping.erase(std::unique(m.housekeeping.begin(), m.housekeeping.end()),
                       m.housekeeping.end());
}

cpu_set_t ToCpuSet(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(static_cast<std::size_t>(c), &set);
  return set;
}

std::string DescribeException(const std::exception& e) {
  return std::string(typeid(e).name()) + ": " + e.what();
}

}  // namespace

class Executor::Impl {
 public:
  struct Slot {
    TaskId id = 0;
    PeriodicTask* task = nullptr;
    TaskConfig config;
    SchedPolicy effective_policy = SchedPolicy::kFifo;
    int effective_priority = 0;
    int effective_nice = 0;
    bool fell_back = false;
    TaskStats stats;
    std::atomic<bool> stop_requested{false};
    // True while the thread is inside its RT loop (waiting or stepping): the only time Stop()
    // sends it the wake signal, so that OnStop() never sees an EINTR of ours.
    std::atomic<bool> in_loop{false};
    pthread_t thread{};
    bool thread_created = false;
    // Guarded by Impl::mu_.
    bool setup_done = false;
    Status setup_status;
    bool finished = false;
    Impl* owner = nullptr;
  };

  explicit Impl(const ExecutorConfig& config) : config_(config) {}
  ~Impl();

  Status Init();
  Result<TaskId> AddTask(PeriodicTask& task, const TaskConfig& config);
  Status Start();
  Status Stop();
  void Wait();
  bool WaitAny(std::chrono::nanoseconds timeout);
  Status RunUntilSignal();

  std::size_t TaskCount() const noexcept { return task_count_.load(std::memory_order_acquire); }
  const Slot* Find(TaskId id) const noexcept {
    return id < TaskCount() ? slots_[id].get() : nullptr;
  }
  TimePoint start_time() const noexcept { return start_; }

 private:
  enum class Phase { kIdle, kStarted, kStopped };

  Status StopLocked();  // control_mu_ held

  static void* ThreadMain(void* arg);
  void RunTask(Slot& slot);
  Status ApplyScheduling(Slot& slot);
  Status FallBackToOther(Slot& slot, const Status& why);
  void Finish(Slot& slot, TaskState state);
  void StopAndJoinAll();

  ExecutorConfig config_;
  std::vector<int> online_cpus_;
  std::vector<int> allowed_cpus_;  // the process's affinity before any housekeeping move
  std::vector<int> isolated_cpus_;
  std::vector<int> present_cpus_;  // /sys/devices/system/cpu/present: exist, maybe offline
  int dma_fd_ = -1;
  bool memory_locked_ = false;

  // slots_ is reserved up front so that readers never see a reallocation.
  static constexpr std::size_t kMaxTasks = 256;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<std::size_t> task_count_{0};

  // Serialises AddTask/Start/Stop/destruction, so that Stop() (or Wait()) from another thread
  // waits for a Start() in progress. Lock order: control_mu_, then mu_. RT threads never take it.
  std::mutex control_mu_;
  std::atomic<Phase> phase_{Phase::kIdle};  // written under control_mu_
  TimePoint start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool go_ = false;                 // guarded by mu_
  bool abort_ = false;              // guarded by mu_
  std::size_t finished_count_ = 0;  // guarded by mu_
  std::size_t started_count_ = 0;   // threads created; guarded by mu_
};

Executor::Impl::~Impl() {
  std::lock_guard<std::mutex> control(control_mu_);
  StopAndJoinAll();
  if (dma_fd_ >= 0) close(dma_fd_);
}

Status Executor::Impl::Init() {
  slots_.reserve(kMaxTasks);
  if (config_.start_delay.count() < 0) {
    return InvalidArgumentError("ExecutorConfig::start_delay is negative (" +
                                std::to_string(config_.start_delay.count()) +
                                " ns) — use 0 or more");
  }
  if (config_.align_start_to.count() < 0) {
    return InvalidArgumentError("ExecutorConfig::align_start_to is negative (" +
                                std::to_string(config_.align_start_to.count()) +
                                " ns) — use 0 (no alignment) or a positive duration");
  }
  if (config_.cpu_dma_latency_us.has_value() && *config_.cpu_dma_latency_us < 0) {
    return InvalidArgumentError("ExecutorConfig::cpu_dma_latency_us is negative (" +
                                std::to_string(*config_.cpu_dma_latency_us) +
                                ") — use 0 or more µs, or leave it unset");
  }
  const SystemInfo info = ReadSystemInfo();
  online_cpus_ = info.online_cpus;
  allowed_cpus_ = OriginalAffinity(info.affinity_cpus);
  isolated_cpus_ = info.isolated_cpus;
  present_cpus_ = internal::PresentCpus();

  RTLOOP_RETURN_IF_ERROR(internal::ValidateCpus(config_.housekeeping_cpus, online_cpus_,
                                                present_cpus_, allowed_cpus_, "executor",
                                                "ExecutorConfig::housekeeping_cpus"));

  if (config_.lock_memory) {
    if (RTLOOP_UNDER_SANITIZER) {
      std::fprintf(stderr,
                   "rtloop: note: lock_memory ignored in a sanitizer build (mlockall would pin "
                   "the sanitizer's shadow memory)\n");
    } else if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
      const int err = errno;
      rlimit rl{};
      getrlimit(RLIMIT_MEMLOCK, &rl);
      const std::string limit = rl.rlim_cur == RLIM_INFINITY
                                    ? std::string("unlimited")
                                    : std::to_string(rl.rlim_cur / 1024) + " KiB";
      Status s = ErrnoError(err, "mlockall(MCL_CURRENT|MCL_FUTURE) failed",
                            "the memlock limit is " + limit +
                                " (ulimit -l); raise it (ulimit -l unlimited, or memlock in "
                                "/etc/security/limits.conf), run as root / grant CAP_IPC_LOCK, "
                                "or set ExecutorConfig::lock_memory = false");
      if (!config_.allow_non_rt_fallback) return s;
      std::fprintf(stderr,
                   "rtloop: WARNING: %s\nrtloop: WARNING: continuing WITHOUT locked memory "
                   "because allow_non_rt_fallback is set: page faults may add latency.\n",
                   s.message().c_str());
    } else {
      memory_locked_ = true;
      // Keep freed memory in the process: no trimming, no mmap'd chunks that come and go.
      mallopt(M_TRIM_THRESHOLD, -1);
      mallopt(M_MMAP_MAX, 0);
    }
  }

  if (config_.cpu_dma_latency_us.has_value()) {
    const int fd = open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      Status s = ErrnoError(err, "cannot open /dev/cpu_dma_latency",
                            "run as root, or leave ExecutorConfig::cpu_dma_latency_us unset");
      if (geteuid() == 0) return s;
      std::fprintf(stderr, "rtloop: WARNING: %s (continuing)\n", s.message().c_str());
    } else {
      const std::int32_t value = *config_.cpu_dma_latency_us;
      if (write(fd, &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value))) {
        const int err = errno;
        close(fd);
        return ErrnoError(err, "cannot write " + std::to_string(value) + " to /dev/cpu_dma_latency",
                          "run as root, or leave ExecutorConfig::cpu_dma_latency_us unset");
      }
      dma_fd_ = fd;  // held open: closing it drops the request
    }
  }

  if (!config_.housekeeping_cpus.empty()) {
    const cpu_set_t set = ToCpuSet(config_.housekeeping_cpus);
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
      return ErrnoError(rc,
                        "cannot move the calling thread to housekeeping CPUs " +
                            FormatCpuList(config_.housekeeping_cpus),
                        "check ExecutorConfig::housekeeping_cpus against taskset/cpuset");
    }
    RememberHousekeepingMove(allowed_cpus_, config_.housekeeping_cpus);
  }
  InstallWakeHandler();
  return Status::Ok();
}

Result<TaskId> Executor::Impl::AddTask(PeriodicTask& task, const TaskConfig& config) {
  std::lock_guard<std::mutex> control(control_mu_);
  const std::string who = "task " + Quoted(config.name);
  if (phase_ != Phase::kIdle) {
    return FailedPreconditionError("cannot add " + who +
                                   " after Start(): add every task before starting the executor");
  }
  if (config.name.empty()) {
    return InvalidArgumentError("a task has an empty name — set TaskConfig::name");
  }
  if (config.period.count() <= 0) {
    return InvalidArgumentError(who + ": period must be > 0 (got " +
                                std::to_string(config.period.count()) +
                                " ns) — set TaskConfig::period, e.g. std::chrono::milliseconds(1)");
  }
  if (config.phase.count() < 0) {
    return InvalidArgumentError(who + ": phase must be >= 0 (got " +
                                std::to_string(config.phase.count()) +
                                " ns) — set TaskConfig::phase to 0 or a positive offset");
  }
  if (config.clock != config_.start_clock) {
    return InvalidArgumentError(
        who + ": uses clock " + (config.clock == Clock::kRealtime ? "realtime" : "monotonic") +
        " but the executor's start_clock is " +
        (config_.start_clock == Clock::kRealtime ? "realtime" : "monotonic") +
        " — every task must share ExecutorConfig::start_clock");
  }
  if (config.stack_size < static_cast<std::size_t>(PTHREAD_STACK_MIN) ||
      config.stack_size > (std::size_t{1} << 30)) {
    return InvalidArgumentError(who + ": stack_size " + std::to_string(config.stack_size) +
                                " bytes is outside " + std::to_string(PTHREAD_STACK_MIN) +
                                " bytes..1 GiB — set TaskConfig::stack_size in that range "
                                "(default 256 KiB)");
  }
  RTLOOP_RETURN_IF_ERROR(internal::ValidateSchedParams(config));
  RTLOOP_RETURN_IF_ERROR(internal::ValidateCpus(config.cpus, online_cpus_, present_cpus_,
                                                allowed_cpus_, who, "TaskConfig::cpus"));
  for (const auto& s : slots_) {
    if (s->task == &task) {
      return InvalidArgumentError(who + ": this PeriodicTask object was already added as task " +
                                  Quoted(s->config.name) + " — use one object per task");
    }
  }
  if (slots_.size() >= kMaxTasks) {
    return {Status(StatusCode::kResourceExhausted,
                   who + ": an executor runs at most " + std::to_string(kMaxTasks) +
                       " tasks — split the tasks over several executors")};
  }

  auto slot = std::make_unique<Slot>();
  slot->id = static_cast<TaskId>(slots_.size());
  slot->task = &task;
  slot->config = config;
  slot->effective_policy = config.policy;
  slot->effective_priority = config.priority;
  slot->effective_nice = config.nice;
  slot->owner = this;

  if (Status priv = internal::CheckSchedPrivilege(config, internal::ReadPrivilegeFacts());
      !priv.ok()) {
    if (!config_.allow_non_rt_fallback || config.policy == SchedPolicy::kOther ||
        config.policy == SchedPolicy::kBatch) {
      return priv;
    }
    RTLOOP_RETURN_IF_ERROR(FallBackToOther(*slot, priv));
  }

  if (const std::string warning = internal::NonIsolatedCpuWarning(config, isolated_cpus_);
      !warning.empty()) {
    std::fprintf(stderr, "rtloop: warning: %s\n", warning.c_str());
  }

  slots_.push_back(std::move(slot));
  task_count_.store(slots_.size(), std::memory_order_release);
  return slots_.back()->id;
}

Status Executor::Impl::FallBackToOther(Slot& slot, const Status& why) {
  slot.effective_policy = SchedPolicy::kOther;
  slot.effective_priority = 0;
  slot.effective_nice = 0;
  slot.fell_back = true;
  std::fprintf(stderr,
               "rtloop: WARNING: %s\n"
               "rtloop: WARNING: running task \"%s\" as SCHED_OTHER (NOT real-time) because "
               "allow_non_rt_fallback is set; its latency figures are not real-time figures.\n",
               why.message().c_str(), slot.config.name.c_str());
  return Status::Ok();
}

Status Executor::Impl::ApplyScheduling(Slot& slot) {
  const TaskConfig& c = slot.config;
  const std::string who = "task " + Quoted(c.name);
  // Affinity first: the stack is prefaulted afterwards, on the right CPU.
  const std::vector<int>& cpus = c.cpus.empty() ? allowed_cpus_ : c.cpus;
  if (!cpus.empty()) {
    const cpu_set_t set = ToCpuSet(cpus);
    if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
      return ErrnoError(rc, "cannot pin " + who + " to CPUs " + FormatCpuList(cpus),
                        "check TaskConfig::cpus against the online CPUs and taskset/cpuset");
    }
  }

  TaskConfig effective = c;
  effective.policy = slot.effective_policy;
  effective.priority = slot.effective_priority;
  effective.nice = slot.effective_nice;
  int rc = 0;
  if (effective.policy == SchedPolicy::kDeadline) {
    SchedAttr attr{};
    attr.size = sizeof(attr);
    attr.sched_policy = static_cast<std::uint32_t>(internal::ToLinuxPolicy(SchedPolicy::kDeadline));
    attr.sched_runtime = static_cast<std::uint64_t>(c.deadline.runtime.count());
    attr.sched_deadline = static_cast<std::uint64_t>(c.deadline.deadline.count());
    attr.sched_period = static_cast<std::uint64_t>(
        (c.deadline.period.count() != 0 ? c.deadline.period : c.period).count());
    if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) rc = errno;
  } else {
    sched_param param{};
    param.sched_priority = effective.priority;
    rc = pthread_setschedparam(pthread_self(), internal::ToLinuxPolicy(effective.policy), &param);
    if (rc == 0 && !IsRealtimePolicy(effective.policy)) {
      if (effective.nice != 0 &&
          setpriority(PRIO_PROCESS, static_cast<id_t>(Gettid()), effective.nice) != 0) {
        rc = errno;
      }
      prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // 1 ns: no timer coalescing
    }
  }
  if (rc == 0) return Status::Ok();

  std::string hint;
  if (rc == EPERM || rc == EACCES) {
    hint = internal::SchedPermissionHint(effective.policy);
  } else if (rc == EBUSY && effective.policy == SchedPolicy::kDeadline) {
    hint =
        "the kernel's deadline admission control refused the bandwidth runtime/period (see "
        "/proc/sys/kernel/sched_rt_runtime_us); lower runtime or raise period";
  } else if (rc == EINVAL && effective.policy == SchedPolicy::kDeadline) {
    hint =
        "the kernel rejected the parameters; need 1024 ns <= runtime <= deadline <= period and a "
        "period within /proc/sys/kernel/sched_deadline_period_{min,max}_us";
  }
  Status s = ErrnoError(rc, internal::SchedFailureWhat(effective), hint);
  if ((rc == EPERM || rc == EACCES) && config_.allow_non_rt_fallback &&
      IsRealtimePolicy(effective.policy)) {
    RTLOOP_RETURN_IF_ERROR(FallBackToOther(slot, s));
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &param);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    return Status::Ok();
  }
  return s;
}

void* Executor::Impl::ThreadMain(void* arg) {
  auto* slot = static_cast<Slot*>(arg);
  slot->owner->RunTask(*slot);
  return nullptr;
}

void Executor::Impl::Finish(Slot& slot, TaskState state) {
  slot.stats.SetState(state);
  std::lock_guard<std::mutex> lock(mu_);
  slot.finished = true;
  ++finished_count_;
  cv_.notify_all();
}

void Executor::Impl::RunTask(Slot& slot) {
  t_running_executor = this;
  const TaskConfig& c = slot.config;
  const std::string who = "task " + Quoted(c.name);
  slot.stats.SetTid(Gettid());
  slot.stats.SetState(TaskState::kStarting);
  {
    char name[16] = {};
    std::snprintf(name, sizeof(name), "%s", c.name.c_str());
    pthread_setname_np(pthread_self(), name);
  }
  // SIGINT/SIGTERM arrive blocked from Start(); the wake signal must get through, except in
  // posix-timer mode, which takes it (and the timer's) with sigwait.
  sigset_t wait_set;
  sigemptyset(&wait_set);
  sigaddset(&wait_set, WakeSignal());
  sigaddset(&wait_set, kTimerSignal);
  if (c.wait_mode == WaitMode::kPosixTimer) {
    pthread_sigmask(SIG_BLOCK, &wait_set, nullptr);
  } else {
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, WakeSignal());
    pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
  }

  Status st = ApplyScheduling(slot);
  if (st.ok() && memory_locked_) {
    const std::size_t reserve = std::size_t{64} * 1024;
    PrefaultStack(c.stack_size > 2 * reserve ? c.stack_size - reserve : c.stack_size / 2);
  }
  timer_t timer{};
  bool have_timer = false;
  if (st.ok() && c.wait_mode == WaitMode::kPosixTimer) {
    sigevent sev{};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = kTimerSignal;
    sev._sigev_un._tid = Gettid();  // sigev_notify_thread_id (glibc 2.36 lacks the name)
    if (timer_create(ToClockId(c.clock), &sev, &timer) != 0) {
      st = ErrnoError(errno, "cannot create the POSIX timer of " + who,
                      "use another TaskConfig::wait_mode");
    } else {
      have_timer = true;
    }
  }
  bool on_start_ran = false;
  if (st.ok()) {
    try {
      if (c.observer != nullptr) c.observer->OnRtThreadStart(slot.id);
      on_start_ran = true;
      st = slot.task->OnStart();
      if (!st.ok()) {
        st = Status(st.code(), who + ": OnStart() failed: " + st.message(), st.sys_errno());
      }
    } catch (const std::exception& e) {
      st = InternalError(
          who +
          (on_start_ran ? ": OnStart() threw " : ": the observer's OnRtThreadStart() threw ") +
          DescribeException(e) + " — OnStart() must report failure with a Status");
      on_start_ran = false;
    } catch (...) {
      st = InternalError(
          who +
          (on_start_ran ? ": OnStart() threw " : ": the observer's OnRtThreadStart() threw ") +
          "a non-std::exception — OnStart() must report failure with a Status");
      on_start_ran = false;
    }
  }

  bool go = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    slot.setup_done = true;
    slot.setup_status = st;
    cv_.notify_all();
    if (st.ok()) {
      cv_.wait(lock, [this] { return go_ || abort_; });
      go = go_ && !abort_;
    }
  }
  if (!go) {
    if (on_start_ran) slot.task->OnStop();
    if (have_timer) timer_delete(timer);
    Finish(slot, st.ok() ? TaskState::kStopped : TaskState::kFault);
    return;
  }

  slot.stats.SetState(TaskState::kRunning);
  CycleEngineConfig ec;
  ec.task = slot.id;
  ec.period = c.period;
  ec.overrun_policy = c.overrun_policy;
  ec.watchdog = c.watchdog;
  ec.max_cycles = c.max_cycles;
  ec.observer = c.observer;
  ec.stats = &slot.stats;
  CycleEngine engine(ec, start_ + c.phase);
  const Clock clock = c.clock;
  const clockid_t clock_id = ToClockId(clock);
  const timespec period_ts = ToTimespec(c.period);
  TaskState final_state = TaskState::kStopped;

  // The RT loop. Nothing below allocates, locks or makes a syscall but the wait and
  // clock_gettime (plus, in posix-timer mode, timer_settime and sigwait).
  slot.in_loop.store(true, std::memory_order_release);
  for (;;) {
    // Checked before the wait too: a stop that came during Step() costs no sleep.
    if (slot.stop_requested.load(std::memory_order_relaxed)) break;
    // The first release is S + phase in every mode (one grid start for all tasks); after it, the
    // relative modes sleep one period from just before the sleep, as cyclictest -r/-s do.
    const WaitMode mode = engine.cycles() == 0 && (c.wait_mode == WaitMode::kRelative ||
                                                   c.wait_mode == WaitMode::kNanosleep)
                              ? WaitMode::kAbsolute
                              : c.wait_mode;
    switch (mode) {
      case WaitMode::kAbsolute: {
        const timespec ts = engine.release().ToTimespec();
        while (clock_nanosleep(clock_id, TIMER_ABSTIME, &ts, nullptr) == EINTR &&
               !slot.stop_requested.load(std::memory_order_relaxed)) {
        }
        break;
      }
      case WaitMode::kRelative: {
        engine.Rebase(Now(clock) + c.period);
        timespec req = period_ts;
        timespec rem{};
        while (clock_nanosleep(clock_id, 0, &req, &rem) == EINTR &&
               !slot.stop_requested.load(std::memory_order_relaxed)) {
          req = rem;
        }
        break;
      }
      case WaitMode::kNanosleep: {
        engine.Rebase(Now(clock) + c.period);
        timespec req = period_ts;
        timespec rem{};
        while (nanosleep(&req, &rem) != 0 && errno == EINTR &&
               !slot.stop_requested.load(std::memory_order_relaxed)) {
          req = rem;
        }
        break;
      }
      case WaitMode::kPosixTimer: {
        itimerspec its{};
        its.it_value = engine.release().ToTimespec();
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
        timer_settime(timer, TIMER_ABSTIME, &its, nullptr);
        int sig = 0;
        while (sigwait(&wait_set, &sig) == 0 && sig != kTimerSignal &&
               !slot.stop_requested.load(std::memory_order_relaxed)) {
        }
        break;
      }
    }
    if (slot.stop_requested.load(std::memory_order_relaxed)) break;
    const TimePoint wake = Now(clock);
    const CycleContext& ctx = engine.BeginCycle(wake);
    const StepResult result = slot.task->Step(ctx);
    const CycleOutcome out = engine.EndCycle(Now(clock), result);
    if (out.fault) [[unlikely]] {
      slot.task->OnFault(ctx);
    }
    if (out.stop) {
      if (out.fault_state) final_state = TaskState::kFault;
      break;
    }
  }

  slot.in_loop.store(false, std::memory_order_release);
  slot.task->OnStop();
  if (have_timer) timer_delete(timer);
  Finish(slot, final_state);
}

Status Executor::Impl::Start() {
  if (t_running_executor == this) {
    return FailedPreconditionError(
        "Start() called from one of this executor's task threads — call it from the controlling "
        "thread");
  }
  std::lock_guard<std::mutex> control(control_mu_);
  if (phase_ == Phase::kStarted) {
    return FailedPreconditionError("Start() called twice — the executor is already running");
  }
  if (phase_ == Phase::kStopped) {
    return FailedPreconditionError("Start() after Stop(): create a new Executor to run again");
  }
  if (slots_.empty()) {
    return FailedPreconditionError("Start() with no tasks — call AddTask() first");
  }
  phase_ = Phase::kStarted;

  // Threads inherit the creator's signal mask: SIGINT/SIGTERM stay blocked in every executor
  // thread, so that RunUntilSignal() (or the application) handles them on the controlling thread.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, kTimerSignal);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &block, &old);

  Status failure;
  for (auto& slot : slots_) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, slot->config.stack_size);
    const int rc = pthread_create(&slot->thread, &attr, &Impl::ThreadMain, slot.get());
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      failure = ErrnoError(rc, "cannot create the thread of task " + Quoted(slot->config.name),
                           "check the process/thread limits (ulimit -u) and memory");
      break;
    }
    slot->thread_created = true;
    std::lock_guard<std::mutex> lock(mu_);
    ++started_count_;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);

  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] {
      for (const auto& s : slots_) {
        if (s->thread_created && !s->setup_done) return false;
      }
      return true;
    });
    if (failure.ok()) {
      for (const auto& s : slots_) {
        if (!s->setup_status.ok()) {
          failure = s->setup_status;
          break;
        }
      }
    }
    if (failure.ok()) {
      TimePoint start = Now(config_.start_clock) + config_.start_delay;
      if (const std::int64_t align = config_.align_start_to.count(); align > 0) {
        const std::int64_t ns = start.ns();
        const std::int64_t rem = ns % align;
        if (rem != 0) start = TimePoint(std::chrono::nanoseconds(ns - rem + align));
      }
      start_ = start;
      go_ = true;
    } else {
      abort_ = true;
    }
    cv_.notify_all();
  }
  if (!failure.ok()) {
    for (auto& s : slots_) {
      if (s->thread_created) {
        pthread_join(s->thread, nullptr);
        s->thread_created = false;
      }
    }
    phase_ = Phase::kStopped;
    return failure;
  }
  return Status::Ok();
}

void Executor::Impl::StopAndJoinAll() {
  for (auto& s : slots_) s->stop_requested.store(true, std::memory_order_relaxed);
  for (auto& s : slots_) {
    if (!s->thread_created) continue;
    // Re-send the wake signal while the thread is in its RT loop: a signal that lands just
    // before the thread enters its sleep would otherwise cost a whole period. Once it has left
    // the loop (OnStop() running) it gets no more signals.
    std::unique_lock<std::mutex> lock(mu_);
    while (!s->finished) {
      if (s->in_loop.load(std::memory_order_acquire)) pthread_kill(s->thread, WakeSignal());
      cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    lock.unlock();
    pthread_join(s->thread, nullptr);
    s->thread_created = false;
  }
}

Status Executor::Impl::Stop() {
  if (t_running_executor == this) {
    return FailedPreconditionError(
        "Stop() called from one of this executor's task threads (it would wait for itself) — "
        "return StepResult::kStop from Step() to end that task, or call Stop() from another "
        "thread");
  }
  std::lock_guard<std::mutex> control(control_mu_);
  return StopLocked();
}

Status Executor::Impl::StopLocked() {
  if (phase_ == Phase::kIdle) {
    return FailedPreconditionError("Stop() called before Start() — nothing is running yet");
  }
  if (phase_ == Phase::kStopped) {
    return FailedPreconditionError(
        "Stop() called twice (or after a failed Start()) — the executor is already stopped");
  }
  phase_ = Phase::kStopped;
  StopAndJoinAll();
  return Status::Ok();
}

void Executor::Impl::Wait() {
  {
    // A Start() in progress on another thread finishes first.
    std::lock_guard<std::mutex> control(control_mu_);
    if (phase_ == Phase::kIdle) return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return finished_count_ >= started_count_; });
}

bool Executor::Impl::WaitAny(std::chrono::nanoseconds timeout) {
  {
    std::lock_guard<std::mutex> control(control_mu_);
    if (phase_ == Phase::kIdle) return false;
  }
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return finished_count_ > 0; });
}

Status Executor::Impl::RunUntilSignal() {
  if (t_running_executor == this) {
    return FailedPreconditionError(
        "RunUntilSignal() called from one of this executor's task threads — call it from the "
        "controlling thread");
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &signals, &old);
  // Already started by the caller: just wait (the threads were created with the signals
  // blocked either way).
  Status s = phase_ == Phase::kStarted ? Status::Ok() : Start();
  if (!s.ok()) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return s;
  }
  const timespec poll = ToTimespec(std::chrono::milliseconds(50));
  for (;;) {
    siginfo_t info{};
    const int sig = sigtimedwait(&signals, &info, &poll);
    if (sig == SIGINT || sig == SIGTERM) break;
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_count_ >= started_count_) break;
  }
  {
    // Another thread may have called Stop() already: that is not an error here.
    std::lock_guard<std::mutex> control(control_mu_);
    if (phase_ == Phase::kStarted) s = StopLocked();
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return s;
}

// ---- Executor ----

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

Result<std::unique_ptr<Executor>> Executor::Create(const ExecutorConfig& config) {
  auto impl = std::make_unique<Impl>(config);
  RTLOOP_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Result<TaskId> Executor::AddTask(PeriodicTask& task, const TaskConfig& config) {
  return impl_->AddTask(task, config);
}
Status Executor::Start() { return impl_->Start(); }
Status Executor::Stop() { return impl_->Stop(); }
void Executor::Wait() { impl_->Wait(); }
bool Executor::WaitAny(std::chrono::nanoseconds timeout) { return impl_->WaitAny(timeout); }
Status Executor::RunUntilSignal() { return impl_->RunUntilSignal(); }

std::size_t Executor::TaskCount() const noexcept { return impl_->TaskCount(); }

TaskStatsSnapshot Executor::Stats(TaskId id) const noexcept {
  const Impl::Slot* slot = impl_->Find(id);
  return slot != nullptr ? slot->stats.Snapshot() : TaskStatsSnapshot{};
}

TaskState Executor::State(TaskId id) const noexcept {
  const Impl::Slot* slot = impl_->Find(id);
  return slot != nullptr ? slot->stats.state() : TaskState::kCreated;
}

TaskInfo Executor::Info(TaskId id) const {
  TaskInfo info;
  const Impl::Slot* slot = impl_->Find(id);
  if (slot == nullptr) return info;
  info.id = slot->id;
  info.config = slot->config;
  info.effective_policy = slot->effective_policy;
  info.effective_priority = slot->effective_priority;
  info.fell_back_to_non_rt = slot->fell_back;
  return info;
}

TimePoint Executor::start_time() const noexcept { return impl_->start_time(); }

}  // namespace rtloop
