// TaskTelemetry and TelemetryHub: the RT-side half of telemetry. The hub is a CycleObserver of
// every task of an executor; for each task it keeps what only telemetry has: the latency and
// execution-time histograms (percentiles), the task's SampleRing and its accounting (pushed,
// dropped, delivered, lost by subscribers), all allocated when the task is added. Everything else
// about a task (cycles, min/max/sum/last, overruns, missed releases, faults, state) is the
// executor's TaskStats: the hub reads it through the TaskStatsReader attached to it (the executor,
// rtloop/framework/task_stats.h) and keeps no copy.
//
// The RT thread only publishes: its OnCycle() is one ring push. The histograms are recorded from
// the ring by its consumer: the collector's drain passes, or the hub's own when there is no
// collector; every reader of them drains first (Drain()), so they are up to date when read. A
// sample the full ring refuses is recorded by the RT thread itself, so none is missing from them
// (the histograms take several writers: LatencyHistogram::RecordShared); so is one whose values
// the 32-byte Sample cannot hold (a latency beyond +-2.1 s, an execution time beyond 4.3 s: the
// drain skips its saturated sample), so the histograms always have the exact values. A task's
// TaskSampleObserver (SetSampleObserver) is fed the same way: the drained chunks from the ring's
// consumer, the refused and saturated samples from the RT thread.
//
// rtloop::Runtime (runtime.h) does all of the wiring below; by hand it is:
//   rtloop::telemetry::TelemetryHub hub;              // default: 64 task slots, 10 ms drain
//   hub.AttachStats(*executor);                       // the task statistics: required
//   task_config.observers.push_back(&hub);
//   rtloop::Result<rtloop::TaskId> id = executor->AddTask(task, task_config);
//   if (Status s = hub.AddTask(*id, task_config); !s.ok()) return s;
//   rtloop::telemetry::Collector collector(hub);      // drains the rings (collector.h)
//   ...
//   Result<rtloop::TaskReport> snap = hub.Snapshot(*id);      // any thread (task_report.h)
//
// Threading: AddTask() and AttachStats() are set-up calls (AddTask() is not RT-safe; it is
// internally locked and may be called while other tasks run: slots are published atomically).
// OnRtThreadStart(), ForTask() and OnCycle() run on each task's RT thread (OnCycle() is RT-safe).
// SetSampleObserver() is a set-up call too (before the executor starts); the observer's OnDrained()
// runs on the thread that drains (the collector's, or a reader's in Drain()), one at a time, and
// its OnRefused() on the task's RT thread.
//
// Memory per task: two histograms of TelemetryHubConfig::histogram_layout (2 x B x 8 bytes, B =
// its bucket_count(): 448 KiB by default) and the ring (capacity x 32 bytes).
// Snapshot()/Describe()/task accessors may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/sample_ring.h"
#include "rtloop/telemetry/task_report.h"

namespace rtloop::telemetry {

// The drain period when nothing sets one, for the hub and rtloop::Runtime alike (RuntimeConfig's
// telemetry.drain_period): it sizes every task's ring (rate x 2 x drain period, at least
// min_ring_capacity) and paces the collector while someone consumes samples. 50 ms: a live view
// (20 updates a second) needs no more, and every drain pass wakes the collector, the gRPC threads
// that write each stream and the clients; on a CPU that runs RT tasks each wake-up costs them
// latency (bench/cyclic/README.md, "What telemetry costs": with one streaming client 10 ms made
// ~785 telemetry wake-ups/s, 50 ms ~234).
inline constexpr std::chrono::milliseconds kDefaultDrainPeriod{50};

struct TelemetryHubConfig {
  // Task ids 0 .. max_tasks-1 can be added; slots are allocated up front. 1..65536.
  std::size_t max_tasks = 64;
  // The collector's drain period: the rings are sized for it (capacity >= rate x 2 x
  // drain_period), and a Collector whose CollectorConfig::drain_period is 0 (its default) drains at
  // it. kDefaultDrainPeriod (50 ms) says why.
  std::chrono::nanoseconds drain_period{kDefaultDrainPeriod};
  // Smallest ring capacity in samples (32 bytes each).
  std::size_t min_ring_capacity = 8192;
  // When > 0: every ring gets exactly this capacity, whatever the task rate.
  std::size_t ring_capacity = 0;
  // The layout of every task's latency and execution-time histograms (one per hub: histograms of
  // one layout can be merged and compared). The default is 224 KiB a histogram; a small board
  // takes a smaller one (HistogramLayout::Create, bench/footprint/README.md).
  HistogramLayout histogram_layout{};
};

// A task's own consumer of its samples besides the histograms (e.g. rtloop-cyclic's cyclictest
// statistics, bench/cyclic/cyclic_thread_stats.h): it computes from the drained samples, in seq
// order, and gets from the RT thread only what the ring could not carry. Set with
// TelemetryHub::SetSampleObserver() before the task's thread starts; must outlive the task's
// thread and the hub's drains.
class TaskSampleObserver {
 public:
  virtual ~TaskSampleObserver() = default;
  // The ring's one consumer (the collector's drain pass, or the hub's own without a collector),
  // after the histograms: samples just drained, in seq order. A saturated one (kSampleSaturated)
  // is in the span with its clamped values: OnRefused() had its exact ones; skip it. Must not
  // block (it runs inside a drain pass).
  virtual void OnDrained(std::span<const Sample> samples) noexcept = 0;
  // The task's RT thread: a cycle the full ring refused (a gap in the drained seqs), or one the
  // Sample cannot hold, with its exact values. Called before any later sample of the task is
  // pushed, but typically before older samples still in the ring are drained. Must be RT-safe.
  virtual void OnRefused(const CycleSample& sample) noexcept = 0;
};

// One task's telemetry state. Created by TelemetryHub::AddTask. It is the CycleObserver the task's
// RT thread calls (TelemetryHub::ForTask): one virtual call a cycle, no look-up.
class TaskTelemetry final : public CycleObserver {
 public:
  // Allocates both histograms with `layout`. Not RT-safe.
  TaskTelemetry(TaskId id, const TaskConfig& config, std::unique_ptr<SampleRing> ring,
                const HistogramLayout& layout = {});
  TaskTelemetry(const TaskTelemetry&) = delete;
  TaskTelemetry& operator=(const TaskTelemetry&) = delete;

  // On the task's RT thread before its first cycle: attaches the ring's producer token. Not
  // RT-safe: allocates.
  void OnRtThreadStart();
  // CycleObserver: the hub calls the one above for its own task (`task` is this one's id).
  void OnRtThreadStart(TaskId /*task*/) override { OnRtThreadStart(); }
  // Publishes one cycle: one ring push. The histograms are recorded from the ring by whoever
  // drains it (RecordDrained()); a sample the full ring refuses, or one the Sample cannot hold
  // (kSampleSaturated), is recorded here, at once, so no count or value is lost. RT thread.
  // RT-safe.
  void OnCycle(const CycleSample& sample) noexcept override;
  // Records samples just drained from this task's ring in both histograms, but the saturated
  // ones (OnCycle() recorded them). The ring's one consumer (the collector, or the hub's own drain
  // without one). RT-safe (lock-free).
  void RecordDrained(std::span<const Sample> samples) noexcept;
  // The task's TaskSampleObserver (nullptr: none): RecordDrained() hands it every drained chunk,
  // OnCycle() every sample it records itself. Set-up: before the task's RT thread starts (the RT
  // thread and the drains read it without synchronisation of their own). Not RT-safe.
  void SetSampleObserver(TaskSampleObserver* observer) noexcept { observer_ = observer; }
  TaskSampleObserver* sample_observer() const noexcept { return observer_; }

  TaskId id() const noexcept { return id_; }
  const TaskConfig& config() const noexcept { return config_; }
  const LatencyHistogram& latency() const noexcept { return latency_; }
  const LatencyHistogram& execution() const noexcept { return execution_; }
  SampleRing& ring() noexcept { return *ring_; }
  const SampleRing& ring() const noexcept { return *ring_; }
  // Cycles the hub saw: samples pushed into the ring plus those it had no room for. Any thread.
  std::uint64_t samples() const noexcept {
    return ring_->writer().pushed() + ring_->writer().dropped();
  }
  // The collector's count of samples it took out of the ring (written by the collector only).
  std::uint64_t delivered() const noexcept { return ring_->reader().drained(); }
  // Samples subscribers lost (TaskReport::subscriber_lost says which). Any thread.
  std::uint64_t subscriber_lost() const noexcept {
    return subscriber_lost_.load(std::memory_order_relaxed);
  }
  // Counts `n` samples a subscription lost. Called by Subscription only (the one place that
  // counts subscriber loss), from the collector's drain pass or a stream's end. Any thread.
  void AddSubscriberLoss(std::uint64_t n) noexcept {
    subscriber_lost_.fetch_add(n, std::memory_order_relaxed);
  }

 private:
  const TaskId id_;
  const TaskConfig config_;
  std::unique_ptr<SampleRing> ring_;
  LatencyHistogram latency_;
  LatencyHistogram execution_;
  TaskSampleObserver* observer_ = nullptr;
  std::atomic<std::uint64_t> subscriber_lost_{0};
};

class TelemetryHub final : public CycleObserver {
 public:
  explicit TelemetryHub(const TelemetryHubConfig& config = {});
  ~TelemetryHub() override;
  TelemetryHub(const TelemetryHub&) = delete;
  TelemetryHub& operator=(const TelemetryHub&) = delete;

  // Allocates the task's histograms (of the hub's histogram_layout) and ring (sized from
  // config.period) and publishes it. Call after Executor::AddTask returned `id` and before the
  // executor starts. InvalidArgument for an id beyond max_tasks; AlreadyExists for an id added
  // twice. Not RT-safe.
  Status AddTask(TaskId id, const TaskConfig& config);

  // Takes task statistics (cycles, min/max, state, tid, faults, ...) from `stats`, the executor
  // (tests attach a TaskStatsReader of their own); it must outlive the hub's use of it. Without
  // it Snapshot() fails: the hub keeps no copy of them. Each reader then calls `stats` directly,
  // without a lock of the hub's. A set-up call, before the readers (a later one replaces it for
  // the readers after it); one atomic store, so any thread.
  void AttachStats(const TaskStatsReader& stats) noexcept {
    stats_.store(&stats, std::memory_order_release);
  }
  bool has_stats() const noexcept { return stats_.load(std::memory_order_acquire) != nullptr; }

  // CycleObserver, called on each task's RT thread. OnRtThreadStart() attaches the task's ring
  // producer token there (allocates once; not RT-safe). OnCycle() pushes one sample (records it
  // in both histograms itself only when the ring is full): no allocation, lock or syscall.
  // RT-safe.
  void OnRtThreadStart(TaskId task) override;
  void OnCycle(const CycleSample& sample) noexcept override;
  // The task's TaskTelemetry when it was added (the executor then calls it directly each cycle,
  // and this hub's OnCycle() is skipped), else the hub itself (its OnCycle() looks the task up,
  // finds one added later, counts unknown ids). On the task's RT thread, before its first cycle.
  CycleObserver* ForTask(TaskId task) noexcept override;

  // Sets task `id`'s TaskSampleObserver (nullptr: none), after AddTask() and before the executor
  // starts. NotFound for a task never added. Not RT-safe.
  Status SetSampleObserver(TaskId id, TaskSampleObserver* observer);

  // Any thread.
  const TelemetryHubConfig& config() const noexcept { return config_; }
  std::size_t max_tasks() const noexcept { return config_.max_tasks; }
  // The task in slot `id`, or nullptr. Any thread. RT-safe.
  TaskTelemetry* task(TaskId id) noexcept;
  const TaskTelemetry* task(TaskId id) const noexcept;
  // Ids of the tasks added, ascending. Not RT-safe: allocates.
  std::vector<TaskId> TaskIds() const;
  // The task's report from this hub alone (MakeTaskReport(nullptr, this, id, parts): the
  // configuration as added, the attached reader's counters, the histograms). NotFound for an
  // unknown id; FailedPrecondition without a stats reader (AttachStats). Not RT-safe: copies
  // strings.
  Result<TaskReport> Snapshot(TaskId id, TaskReportParts parts = {}) const;
  // Every task's report, by id; empty without a stats reader.
  std::vector<TaskReport> SnapshotAll(TaskReportParts parts = {}) const;
  // Brings every task's histograms up to now: drains the rings through the drainer (the
  // collector, which also hands the samples on) or, without one, itself (the samples then only
  // feed the histograms). Snapshot(), SnapshotAll() and every other reader of the histograms call
  // it first. When a drain is already under way (on another thread, or this one: a sink that
  // reads a snapshot), it returns at once: that drain brings them up to date. Any thread. Not
  // RT-safe (locks; the drainer runs the collector's sinks).
  void Drain() const;
  // The rings' one consumer besides the hub itself: a Collector sets itself when constructed
  // (and again at Start()) and clears it (nullptr) in Stop(), after its last drain, and when
  // destroyed. Waits for a drain under way. Not RT-safe.
  void SetDrainer(std::function<void()> drainer);

  // The task's statistics as Snapshot() reports them (from the attached reader), without the
  // histogram passes that make a Snapshot() cost ~0.1 ms: for exporters that take histograms
  // from WindowedStats. Zeroes (state kCreated) for an unknown id or when no reader is attached.
  // Any thread.
  TaskStatsSnapshot Stats(TaskId id) const;
  // Samples for task ids that were never added (they are ignored). Any thread.
  std::uint64_t unknown_task_samples() const noexcept {
    return unknown_task_samples_.load(std::memory_order_relaxed);
  }

 private:
  TelemetryHubConfig config_;
  std::unique_ptr<std::atomic<TaskTelemetry*>[]> slots_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<TaskTelemetry>> owned_;  // guarded by mu_
  std::atomic<const TaskStatsReader*> stats_{nullptr};
  std::atomic<std::uint64_t> unknown_task_samples_{0};
  // Serialises Drain()s and SetDrainer() (Drain() only tries it).
  mutable std::mutex drain_mu_;
  std::function<void()> drainer_;  // guarded by drain_mu_
};

// Inline: the executor (through ForTask) or TelemetryHub::OnCycle() calls it on the RT thread every
// cycle (bench/rtcost/README.md).
inline void TaskTelemetry::OnCycle(const CycleSample& s) noexcept {
  const Sample sample = MakeSample(s);
  if (ring_->writer().TryPush(sample) && (sample.flags & kSampleSaturated) == 0) [[likely]] {
    return;
  }
  // A sample the full ring dropped (and counted), or one the Sample cannot hold: recorded here,
  // with the cycle's exact values (the executor's statistics already have them).
  latency_.RecordShared(s.wakeup_latency_ns);
  execution_.RecordShared(s.execution_ns);
  if (observer_ != nullptr) observer_->OnRefused(s);
}

inline void TaskTelemetry::RecordDrained(std::span<const Sample> samples) noexcept {
  for (const Sample& s : samples) {
    if ((s.flags & kSampleSaturated) != 0) [[unlikely]]
      continue;  // OnCycle() recorded it
    latency_.RecordShared(s.latency_ns);
    execution_.RecordShared(s.execution_ns);
  }
  if (observer_ != nullptr) observer_->OnDrained(samples);
}

}  // namespace rtloop::telemetry
