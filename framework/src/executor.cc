#include "rtloop/framework/executor.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "memory_lock.h"
#include "process_setup.h"
#include "release_waiter.h"
#include "rtloop/framework/cycle_engine.h"
#include "rtloop/framework/stop_signals.h"
#include "sched_util.h"
#include "task_config_check.h"
#include "task_thread.h"

namespace rtloop {

namespace {

using internal::ReleaseWaiter;

// The executor whose task runs on this thread (nullptr elsewhere): Stop() from a task's own
// thread would wait for itself.
thread_local const void* t_running_executor = nullptr;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

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
    CycleObserverList observers;  // config.observers, fixed at AddTask
    // The scheduling the task's thread applied (written there during Start()), and as AddTask()
    // settled it (read until the thread has applied its own: Info()).
    internal::EffectiveScheduling sched;
    internal::EffectiveScheduling planned;
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
    // A watchdog with WatchdogAction::kStopAll tripped: Finish() stops the other tasks. Written
    // and read on the task's own thread.
    bool stop_all = false;
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
  bool AllTasksEnded();
  Status RunUntilSignal(std::chrono::nanoseconds duration);

  std::size_t TaskCount() const noexcept { return task_count_.load(std::memory_order_acquire); }
  const Slot* Find(TaskId id) const noexcept {
    return id < TaskCount() ? slots_[id].get() : nullptr;
  }
  TimePoint start_time() const noexcept { return start_; }

 private:
  enum class Phase { kIdle, kStarted, kStopped };

  // Task threads.
  static void* ThreadMain(void* arg);
  void RunTask(Slot& slot);
  Status SetUpOnThread(Slot& slot, std::unique_ptr<ReleaseWaiter>* waiter, bool* on_start_ran);
  Status RunStartHooks(Slot& slot, bool* on_start_ran);
  bool ReportSetUpAndAwaitGo(Slot& slot, const Status& setup);
  TaskState RtLoop(Slot& slot, ReleaseWaiter& waiter) noexcept;
  CycleEngineConfig EngineConfig(Slot& slot) const;
  void Finish(Slot& slot, TaskState state);

  // Controlling thread.
  Status CreateThreads();
  Status AwaitSetUpAndRelease(Status failure);
  TimePoint ChooseStartTime() const;
  Status StopLocked();  // control_mu_ held
  void StopAndJoinAll();

  ExecutorConfig config_;
  internal::CpuFacts cpus_;
  std::unique_ptr<internal::ProcessSetup> process_;

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
}

Status Executor::Impl::Init() {
  slots_.reserve(kMaxTasks);
  cpus_ = internal::ReadCpuFacts();
  Result<std::unique_ptr<internal::ProcessSetup>> process =
      internal::ProcessSetup::Apply(config_, cpus_);
  if (!process.ok()) return process.status();
  process_ = std::move(*process);
  return Status::Ok();
}

Result<TaskId> Executor::Impl::AddTask(PeriodicTask& task, const TaskConfig& config) {
  std::lock_guard<std::mutex> control(control_mu_);
  const std::string who = "task " + Quoted(config.name);
  if (phase_ != Phase::kIdle) {
    return FailedPreconditionError("cannot add " + who +
                                   " after Start(): add every task before starting the executor");
  }
  RTLOOP_RETURN_IF_ERROR(internal::ValidateTaskConfig(config, config_.start_clock, cpus_));
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
  for (CycleObserver* o : config.observers) (void)slot->observers.Add(o);  // validated above
  slot->sched = {config.policy, config.priority, config.nice, false};
  slot->owner = this;

  if (Status priv = internal::CheckSchedPrivilege(config, internal::ReadPrivilegeFacts());
      !priv.ok()) {
    if (!config_.allow_non_rt_fallback || config.policy == SchedPolicy::kOther ||
        config.policy == SchedPolicy::kBatch) {
      return priv;
    }
    internal::FallBackToOther(config.name, priv, &slot->sched);
  }
  slot->planned = slot->sched;
  if (const std::string warning = internal::NonIsolatedCpuWarning(config, cpus_.isolated);
      !warning.empty()) {
    std::fprintf(stderr, "rtloop: warning: %s\n", warning.c_str());
  }

  slots_.push_back(std::move(slot));
  task_count_.store(slots_.size(), std::memory_order_release);
  return slots_.back()->id;
}

// ---- Task threads ----

void* Executor::Impl::ThreadMain(void* arg) {
  auto* slot = static_cast<Slot*>(arg);
  slot->owner->RunTask(*slot);
  return nullptr;
}

// A task's thread, start to end: set-up and OnStart(), the handshake with Start(), the RT loop,
// OnStop().
void Executor::Impl::RunTask(Slot& slot) {
  t_running_executor = this;
  slot.stats.SetTid(internal::Gettid());
  slot.stats.SetState(TaskState::kStarting);
  std::unique_ptr<ReleaseWaiter> waiter;
  bool on_start_ran = false;
  const Status setup = SetUpOnThread(slot, &waiter, &on_start_ran);
  TaskState final_state = setup.ok() ? TaskState::kStopped : TaskState::kFault;
  if (ReportSetUpAndAwaitGo(slot, setup)) {
    slot.stats.SetState(TaskState::kRunning);
    final_state = RtLoop(slot, *waiter);
  }
  if (on_start_ran) slot.task->OnStop();
  waiter.reset();
  Finish(slot, final_state);
}

Status Executor::Impl::SetUpOnThread(Slot& slot, std::unique_ptr<ReleaseWaiter>* waiter,
                                     bool* on_start_ran) {
  internal::TaskThreadOptions options;
  options.default_cpus = &cpus_.allowed;
  options.allow_non_rt_fallback = config_.allow_non_rt_fallback;
  options.prefault_stack = process_->memory_locked();
  RTLOOP_RETURN_IF_ERROR(internal::SetUpTaskThread(slot.config, options, &slot.sched));
  Result<std::unique_ptr<ReleaseWaiter>> made = internal::MakeReleaseWaiter(slot.config);
  if (!made.ok()) return made.status();
  *waiter = std::move(*made);
  return RunStartHooks(slot, on_start_ran);
}

// Every observer's OnRtThreadStart(), then the task's OnStart(). `on_start_ran`: OnStop() is due.
Status Executor::Impl::RunStartHooks(Slot& slot, bool* on_start_ran) {
  const std::string who = "task " + Quoted(slot.config.name);
  const char* stage = "the observer's OnRtThreadStart()";
  try {
    for (CycleObserver* o : slot.observers) o->OnRtThreadStart(slot.id);
    stage = "OnStart()";
    *on_start_ran = true;
    Status st = slot.task->OnStart();
    if (st.ok()) return st;
    return Status(st.code(), who + ": OnStart() failed: " + st.message(), st.sys_errno());
  } catch (const std::exception& e) {
    *on_start_ran = false;
    return InternalError(who + ": " + stage + " threw " + DescribeException(e) +
                         " — OnStart() must report failure with a Status");
  } catch (...) {
    *on_start_ran = false;
    return InternalError(who + ": " + stage +
                         " threw a non-std::exception — OnStart() must report failure with a "
                         "Status");
  }
}

// Tells Start() how set-up went; true when it then releases the tasks.
bool Executor::Impl::ReportSetUpAndAwaitGo(Slot& slot, const Status& setup) {
  std::unique_lock<std::mutex> lock(mu_);
  slot.setup_done = true;
  slot.setup_status = setup;
  cv_.notify_all();
  if (!setup.ok()) return false;
  cv_.wait(lock, [this] { return go_ || abort_; });
  return go_ && !abort_;
}

CycleEngineConfig Executor::Impl::EngineConfig(Slot& slot) const {
  CycleEngineConfig ec;
  ec.task = slot.id;
  ec.period = slot.config.period;
  ec.overrun_policy = slot.config.overrun_policy;
  ec.watchdog = slot.config.watchdog;
  ec.max_cycles = slot.config.max_cycles;
  ec.warmup_cycles = slot.config.warmup_cycles;
  ec.run_for = slot.config.run_for;
  // Each observer's part for this task (CycleObserver::ForTask), resolved once here, on the RT
  // thread after OnRtThreadStart(): the cycle calls it directly.
  for (CycleObserver* o : slot.observers) {
    CycleObserver* part = o->ForTask(slot.id);
    (void)ec.observers.Add(part != nullptr ? part : o);  // as many as slot.observers: they fit
  }
  ec.stats = &slot.stats;
  return ec;
}

// The RT loop, as cycle_engine.h sketches it. Nothing in the loop allocates, locks or makes a
// system call but the waiter's sleep and clock_gettime (the signal mask is set after it ends).
TaskState Executor::Impl::RtLoop(Slot& slot, ReleaseWaiter& waiter) noexcept {
  const Clock clock = slot.config.clock;
  CycleEngine engine(EngineConfig(slot), start_ + slot.config.phase);
  TaskState final_state = TaskState::kStopped;
  slot.in_loop.store(true, std::memory_order_release);
  // Checked before the wait too: a stop that came during Step() costs no sleep.
  while (!slot.stop_requested.load(std::memory_order_relaxed)) {
    waiter.Wait(engine, slot.stop_requested);
    if (slot.stop_requested.load(std::memory_order_relaxed)) break;
    const CycleContext& ctx = engine.BeginCycle(Now(clock));
    const StepResult result = slot.task->Step(ctx);
    CycleOutcome out;
    if (engine.EndCycle(Now(clock), result, &out)) [[unlikely]] {  // a fault or a stop
      if (out.fault) slot.task->OnWatchdog(ctx, engine.last_fault());
      if (out.stop) {
        if (out.fault_state) final_state = TaskState::kFault;
        if (out.stop_all) slot.stop_all = true;
        break;
      }
    }
  }
  // Before in_loop reads false: a wake signal sent while the loop ran stays pending from here on.
  internal::BlockWakeSignal();
  slot.in_loop.store(false, std::memory_order_release);
  return final_state;
}

void Executor::Impl::Finish(Slot& slot, TaskState state) {
  slot.stats.SetState(state);
  std::lock_guard<std::mutex> lock(mu_);
  slot.finished = true;
  ++finished_count_;
  if (slot.stop_all) {
    // WatchdogAction::kStopAll: every other task ends after its current cycle, so Wait() and
    // RunUntilSignal() return. Under mu_: a thread not yet finished is not joined yet, so
    // pthread_kill() has a live thread (a wake lost before the sleep costs one period).
    for (auto& other : slots_) {
      other->stop_requested.store(true, std::memory_order_relaxed);
      if (other.get() != &slot && !other->finished && other->thread_created &&
          other->in_loop.load(std::memory_order_acquire)) {
        pthread_kill(other->thread, internal::WakeSignal());
      }
    }
  }
  cv_.notify_all();
}

// ---- Controlling thread ----

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
  Status failure = AwaitSetUpAndRelease(CreateThreads());
  if (failure.ok()) return failure;
  for (auto& s : slots_) {
    if (s->thread_created) {
      pthread_join(s->thread, nullptr);
      s->thread_created = false;
    }
  }
  phase_ = Phase::kStopped;
  return failure;
}

Status Executor::Impl::CreateThreads() {
  // Threads inherit the creator's signal mask: SIGINT/SIGTERM stay blocked in every executor
  // thread, so that RunUntilSignal() (or the application) handles them on the controlling thread.
  const SignalBlockScope block({SIGINT, SIGTERM, internal::kTimerSignal});
  for (auto& slot : slots_) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, slot->config.stack_size);
    const int rc = pthread_create(&slot->thread, &attr, &Impl::ThreadMain, slot.get());
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      return ErrnoError(rc, "cannot create the thread of task " + Quoted(slot->config.name),
                        "check the process/thread limits (ulimit -u) and memory");
    }
    slot->thread_created = true;
    std::lock_guard<std::mutex> lock(mu_);
    ++started_count_;
  }
  return Status::Ok();
}

// Waits until every created thread has set up, then releases them all with one start time, or
// aborts them when anything failed (`failure`, or the first task's set-up error).
Status Executor::Impl::AwaitSetUpAndRelease(Status failure) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] {
    for (const auto& s : slots_) {
      if (s->thread_created && !s->setup_done) return false;
    }
    return true;
  });
  for (const auto& s : slots_) {
    if (!failure.ok()) break;
    failure = s->setup_status;
  }
  // After every OnStart(): what the tasks allocated there is resident before the first release.
  if (failure.ok() && process_->memory_locked() &&
      config_.lock_scope == MemoryLockScope::kRealtime) {
    if (Result<std::uint64_t> locked = internal::LockRealtimeSet(); !locked.ok()) {
      if (!config_.allow_non_rt_fallback) {
        failure = locked.status();
      } else {
        std::fprintf(stderr, "rtloop: WARNING: %s (continuing: allow_non_rt_fallback is set)\n",
                     locked.status().message().c_str());
      }
    }
  }
  if (failure.ok()) {
    start_ = ChooseStartTime();
    go_ = true;
  } else {
    abort_ = true;
  }
  cv_.notify_all();
  return failure;
}

TimePoint Executor::Impl::ChooseStartTime() const {
  TimePoint start = Now(config_.start_clock) + config_.start_delay;
  if (const std::int64_t align = config_.align_start_to.count(); align > 0) {
    const std::int64_t ns = start.ns();
    const std::int64_t rem = ns % align;
    if (rem != 0) start = TimePoint(std::chrono::nanoseconds(ns - rem + align));
  }
  return start;
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
      if (s->in_loop.load(std::memory_order_acquire)) {
        pthread_kill(s->thread, internal::WakeSignal());
      }
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

bool Executor::Impl::AllTasksEnded() {
  if (phase_ == Phase::kIdle) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return finished_count_ >= started_count_;
}

Status Executor::Impl::RunUntilSignal(std::chrono::nanoseconds duration) {
  if (t_running_executor == this) {
    return FailedPreconditionError(
        "RunUntilSignal() called from one of this executor's task threads — call it from the "
        "controlling thread");
  }
  if (duration.count() < 0) {
    return InvalidArgumentError("RunUntilSignal(): duration is negative (" +
                                std::to_string(duration.count()) +
                                " ns) — use 0 (no limit) or a positive duration");
  }
  Result<std::unique_ptr<StopSignals>> signals = StopSignals::Install();
  if (!signals.ok()) return signals.status();
  // Already started by the caller: just wait (its threads then keep the mask they were made with,
  // which blocks SIGINT/SIGTERM: see CreateThreads()).
  Status s = phase_ == Phase::kStarted ? Status::Ok() : Start();
  if (!s.ok()) return s;
  (void)(*signals)->WaitForStop(duration, [this] { return AllTasksEnded(); });
  // Another thread may have called Stop() already: that is not an error here.
  std::lock_guard<std::mutex> control(control_mu_);
  if (phase_ == Phase::kStarted) s = StopLocked();
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
bool Executor::AllTasksEnded() const { return impl_->AllTasksEnded(); }
Status Executor::RunUntilSignal(std::chrono::nanoseconds duration) {
  return impl_->RunUntilSignal(duration);
}

std::size_t Executor::TaskCount() const noexcept { return impl_->TaskCount(); }

TaskStatsSnapshot Executor::Stats(TaskId id) const noexcept {
  const Impl::Slot* slot = impl_->Find(id);
  return slot != nullptr ? slot->stats.Snapshot() : TaskStatsSnapshot{};
}

bool Executor::ResetStats(TaskId id) noexcept {
  // The executor is not const here: its slot may be written (RequestReset is the only write).
  Impl::Slot* slot = const_cast<Impl::Slot*>(impl_->Find(id));
  if (slot == nullptr) return false;
  slot->stats.RequestReset();
  return true;
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
  // The task's thread writes `sched` before it leaves kStarting (SetState: release); until then
  // the scheduling as AddTask() settled it.
  const TaskState state = slot->stats.state();
  const bool applied = state != TaskState::kCreated && state != TaskState::kStarting;
  const internal::EffectiveScheduling& sched = applied ? slot->sched : slot->planned;
  info.effective_policy = sched.policy;
  info.effective_priority = sched.priority;
  info.fell_back_to_non_rt = sched.fell_back;
  return info;
}

TimePoint Executor::start_time() const noexcept { return impl_->start_time(); }

}  // namespace rtloop
