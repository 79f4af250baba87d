// TaskTelemetry and TelemetryHub: the RT-side half of telemetry. The hub is the CycleObserver of
// every task of an executor; for each task it keeps latency and execution-time histograms, its own
// cycle statistics and the task's SampleRing, all allocated when the task is added.
//
//   rtloop::telemetry::TelemetryHub hub;              // default: 64 task slots, 1 ms drain
//   task_config.observer = &hub;
//   rtloop::Result<rtloop::TaskId> id = executor->AddTask(task, task_config);
//   if (Status s = hub.AddTask(*id, task_config); !s.ok()) return s;
//   hub.AttachExecutor(*executor);                    // task state/tid/faults from the executor
//   rtloop::telemetry::Collector collector(hub);      // drains the rings (collector.h)
//   ...
//   TaskTelemetrySnapshot snap = hub.Snapshot(*id);   // any thread
//
// Threading: AddTask()/AttachExecutor()/SetStatsSource() are set-up calls (not RT-safe, internally
// locked); AddTask() may be called while other tasks run (slots are published atomically).
// OnRtThreadStart() and OnCycle() run on each task's RT thread (OnCycle() is RT-safe).
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
#include <string>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/executor.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_config.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/latency_histogram.h"
#include "rtloop/telemetry/sample_ring.h"

namespace rtloop::telemetry {

struct TelemetryHubConfig {
  // Task ids 0 .. max_tasks-1 can be added; slots are allocated up front. 1..65536.
  std::size_t max_tasks = 64;
  // The collector's drain period the rings are sized for (capacity >= rate x 2 x drain_period).
  std::chrono::nanoseconds drain_period{std::chrono::milliseconds(1)};
  // Smallest ring capacity in samples (32 bytes each).
  std::size_t min_ring_capacity = 8192;
  // When > 0: every ring gets exactly this capacity, whatever the task rate.
  std::size_t ring_capacity = 0;
};

// Everything telemetry knows about one task at one moment.
struct TaskTelemetrySnapshot {
  TaskId id = 0;
  std::string name;
  // Executor statistics: from the attached stats source (AttachExecutor/SetStatsSource), otherwise
  // from the hub's own bookkeeping (then state is kRunning once a cycle was seen, tid is 0).
  TaskStatsSnapshot stats;
  HistogramSummary latency;        // wake-up latency, ns
  HistogramSummary execution;      // execution time, ns
  std::uint64_t samples = 0;       // cycles the hub saw (== samples produced for the ring)
  std::uint64_t ring_pushed = 0;   // samples that entered the ring
  std::uint64_t ring_dropped = 0;  // samples the ring had no room for (stats still include them)
  std::uint64_t delivered = 0;     // samples the collector took out of the ring
  // Once the task and the collector have stopped: samples == ring_pushed + ring_dropped and
  // ring_pushed == delivered. While they run, the counters are read one after another (delivered
  // first, samples last), so samples in flight can make them differ by a few.
  std::size_t ring_capacity = 0;
  // Non-empty histogram buckets (filled only when Snapshot() is asked for them), for dashboards.
  std::vector<HistogramBucket> latency_buckets;
  std::vector<HistogramBucket> execution_buckets;
};

// One task's telemetry state. Created by TelemetryHub::AddTask.
class TaskTelemetry {
 public:
  TaskTelemetry(TaskId id, const TaskConfig& config, std::unique_ptr<SampleRing> ring);
  TaskTelemetry(const TaskTelemetry&) = delete;
  TaskTelemetry& operator=(const TaskTelemetry&) = delete;

  // On the task's RT thread before its first cycle: attaches the ring's producer token. Not
  // RT-safe: allocates.
  void OnRtThreadStart();
  // Records one cycle: statistics, both histograms, one ring push. RT thread. RT-safe.
  void OnCycle(const CycleSample& sample) noexcept;

  TaskId id() const noexcept { return id_; }
  const TaskConfig& config() const noexcept { return config_; }
  const LatencyHistogram& latency() const noexcept { return latency_; }
  const LatencyHistogram& execution() const noexcept { return execution_; }
  SampleRing& ring() noexcept { return *ring_; }
  const SampleRing& ring() const noexcept { return *ring_; }
  std::uint64_t samples() const noexcept { return samples_.load(std::memory_order_relaxed); }
  // The collector's count of samples it took out of the ring (written by the collector only).
  std::uint64_t delivered() const noexcept { return ring_->reader().drained(); }
  // Statistics from the hub's own bookkeeping (no state/tid). Any thread.
  TaskStatsSnapshot OwnStats() const noexcept;

 private:
  using I64 = std::atomic<std::int64_t>;
  using U64 = std::atomic<std::uint64_t>;
  const TaskId id_;
  const TaskConfig config_;
  std::unique_ptr<SampleRing> ring_;
  LatencyHistogram latency_;
  LatencyHistogram execution_;
  // Single writer (the RT thread): relaxed load + store, no read-modify-write.
  U64 samples_{0};
  U64 overruns_{0};
  U64 missed_{0};
  U64 faults_{0};
  U64 jitter_count_{0};
  I64 jitter_min_{0};
  I64 jitter_max_{0};
  I64 latency_last_{0};
  I64 execution_last_{0};
  I64 jitter_last_{0};
};

class TelemetryHub final : public CycleObserver {
 public:
  // Source of executor statistics for a task (e.g. Executor::Stats). Called from any thread.
  using StatsSource = std::function<TaskStatsSnapshot(TaskId)>;

  explicit TelemetryHub(const TelemetryHubConfig& config = {});
  ~TelemetryHub() override;
  TelemetryHub(const TelemetryHub&) = delete;
  TelemetryHub& operator=(const TelemetryHub&) = delete;

  // Allocates the task's histograms and ring (sized from config.period) and publishes it. Call
  // after Executor::AddTask returned `id` and before the executor starts. InvalidArgument for an id
  // beyond max_tasks; AlreadyExists for an id added twice. Not RT-safe.
  Status AddTask(TaskId id, const TaskConfig& config);

  // Takes task statistics (state, tid, faults, ...) from `executor` from now on; the executor must
  // outlive the hub's use of it. Not RT-safe.
  void AttachExecutor(const Executor& executor) {
    SetStatsSource([&executor](TaskId id) { return executor.Stats(id); });
  }
  // Same with any callable; nullptr returns to the hub's own bookkeeping. Not RT-safe.
  void SetStatsSource(StatsSource source);

  // CycleObserver, called on each task's RT thread. OnRtThreadStart() attaches the task's ring
  // producer token there (allocates once; not RT-safe). OnCycle() updates the task's statistics and
  // both histograms and pushes one sample: no allocation, lock or syscall. RT-safe.
  void OnRtThreadStart(TaskId task) override;
  void OnCycle(const CycleSample& sample) noexcept override;

  // Any thread.
  const TelemetryHubConfig& config() const noexcept { return config_; }
  std::size_t max_tasks() const noexcept { return config_.max_tasks; }
  // The task in slot `id`, or nullptr. Any thread. RT-safe.
  TaskTelemetry* task(TaskId id) noexcept;
  const TaskTelemetry* task(TaskId id) const noexcept;
  // Ids of the tasks added, ascending. Not RT-safe: allocates.
  std::vector<TaskId> TaskIds() const;
  // Not RT-safe: copies strings. NotFound for an unknown id. `with_buckets` also exports both
  // histograms' non-empty buckets.
  Result<TaskTelemetrySnapshot> Snapshot(TaskId id, bool with_buckets = false) const;
  std::vector<TaskTelemetrySnapshot> SnapshotAll(bool with_buckets = false) const;
  // The task's statistics as Snapshot() reports them (the attached stats source, else the hub's
  // own), without the histogram passes that make a Snapshot() cost ~0.1 ms: for exporters that
  // take histograms from WindowedStats. Zeroes (state kCreated) for an unknown id. Any thread.
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
  StatsSource stats_source_;                           // guarded by mu_
  std::atomic<std::uint64_t> unknown_task_samples_{0};
};

}  // namespace rtloop::telemetry
