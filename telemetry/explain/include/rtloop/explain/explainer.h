// Explainer: the non-RT thread that turns a task's late cycles into outlier records. It reads the
// samples a telemetry Subscription hands it (the RT threads do nothing extra for it), picks the
// cycles whose wake-up latency (or execution time) exceeds the thresholds, and asks its evidence
// sources, in order of preference, why each was late (outlier.h; README.md).
//
//   ExplainerConfig c;
//   c.tasks = {{.task = 0, .name = "cyclic0", .tid = stats.tid, .cpu = 1}};
//   c.latency_above_ns = 100'000;                       // rtloop-cyclic --explain-above=100
//   std::vector<std::unique_ptr<EvidenceSource>> sources = MakeEvidenceSources(...);
//   Result<std::unique_ptr<Explainer>> ex =
//       Explainer::Start(c, collector->Subscribe({.count_loss_in_hub = false}),
//                        std::move(sources));
//   ... the run ...
//   (*ex)->Stop();                                      // after the tasks and the collector
//   for (const OutlierRecord& r : (*ex)->Records()) ...
//
// How a window is explained: Start() polls every source once; then on each tick
// (ExplainerConfig::poll_period) every source is polled, the new samples are read, and every
// pending window is offered to the sources in order. The first that returns true makes the record.
// The trace shows who else ran, not the task's own page faults: a record the trace made also gets
// the counters' page-fault count of the task's thread over the sampling interval around the window,
// once the counters sampled after it (or, if they cannot within give_up_after, a note why not). A
// source of kind kCounters answers only once it sampled after the window, so it is asked again on
// later ticks; any other source is asked once per window. A window that no source explained within
// give_up_after is recorded with the evidence kNone and every source's note, so no outlier is ever
// silently missing. Beyond max_records the outliers are counted (ExplainerStats::dropped), not
// recorded; so are those whose samples the subscription lost (ExplainerStats::samples_lost: the
// count of outliers is then a lower bound; the subscription is no stream subscriber, so its loss
// stays out of the hub's subscriber loss).
//
// Threading: Start(), Stop() and the destructor on one controlling thread; Records() and stats()
// from any non-RT thread. The explaining runs on a HousekeepingThread ("rtloop-explain",
// SCHED_OTHER, on the CPUs of the thread that calls Start()). Not RT-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rtloop/explain/outlier.h"
#include "rtloop/framework/housekeeping_thread.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/time.h"
#include "rtloop/telemetry/collector.h"

namespace rtloop::explain {

struct ExplainedTask {
  TaskId task = 0;
  std::string name;
  int tid = 0;                      // the task's RT thread (TaskStatsSnapshot::tid)
  int cpu = -1;                     // the CPU it is pinned to; -1: not pinned to one CPU
  Clock clock = Clock::kMonotonic;  // the task's clock: its E_k are converted to CLOCK_MONOTONIC
  // This task's thresholds; 0: ExplainerConfig's.
  std::int64_t latency_above_ns = 0;
  std::int64_t execution_above_ns = 0;
};

struct ExplainerConfig {
  std::vector<ExplainedTask> tasks;  // the tasks explained; others' samples are ignored
  // A wake-up latency above this is an outlier (> 0), and an execution time above this (0: not
  // judged), for the tasks that do not set their own.
  std::int64_t latency_above_ns = 100'000;
  std::int64_t execution_above_ns = 0;
  std::size_t max_records = 1000;                 // records kept; later outliers are counted. > 0
  std::chrono::milliseconds poll_period{20};      // >= 1 ms
  std::chrono::milliseconds give_up_after{3000};  // >= poll_period
};

// One explained task's counts: what /metrics, the live page and rtloop-top show per task.
struct TaskOutlierStats {
  TaskId task = 0;
  std::string name;
  std::int64_t latency_above_ns = 0;    // the thresholds in force for this task
  std::int64_t execution_above_ns = 0;  // 0: execution time not judged
  std::uint64_t outliers = 0;           // cycles above a threshold seen
  std::uint64_t recorded = 0;           // records made (explained or not)
  std::uint64_t unexplained = 0;        // records with the evidence kNone
  std::uint64_t dropped = 0;            // outliers not recorded (max_records, or too many pending)
  // Records by their leading cause (index: CauseKind); a record with no cause (no evidence, or
  // evidence that showed nothing) counts in without_cause. Their sum is `recorded`.
  std::array<std::uint64_t, kCauseKindCount> by_leading_cause{};
  std::uint64_t without_cause = 0;
  std::uint64_t last_cycle = 0;  // the cycle of the task's last record (recorded > 0)
};

struct ExplainerStats {
  std::uint64_t outliers = 0;     // cycles above a threshold seen in the samples
  std::uint64_t recorded = 0;     // records made (explained or not)
  std::uint64_t unexplained = 0;  // records no source could explain (evidence kNone)
  // Records explained from the /proc counters (evidence kCounters): every one without a trace,
  // and with one, those whose window it did not cover (each record's evidence_note says why).
  std::uint64_t from_counters = 0;
  std::uint64_t dropped = 0;              // outliers beyond max_records, not recorded
  std::uint64_t samples_lost = 0;         // samples the subscription lost: outliers may hide there
  std::int64_t explain_cpu_ns_max = 0;    // CPU time of the costliest record's analysis
  std::int64_t explain_cpu_ns_total = 0;  // CPU time of every analysis together
  std::vector<TaskOutlierStats> tasks;    // per explained task, in ExplainerConfig::tasks' order
};

class Explainer {
 public:
  // Checks `config`, then starts the explaining thread. `sources` in order of preference (at
  // least one). InvalidArgument naming the field for a bad config.
  static Result<std::unique_ptr<Explainer>> Start(
      const ExplainerConfig& config, std::shared_ptr<telemetry::Subscription> subscription,
      std::vector<std::unique_ptr<EvidenceSource>> sources);
  ~Explainer();  // Stop()
  Explainer(const Explainer&) = delete;
  Explainer& operator=(const Explainer&) = delete;

  // Ends the thread, then makes a last pass on the caller's thread: the samples still queued,
  // one more poll, every pending window offered once more and recorded, explained or not. Call it
  // after the tasks and the collector stopped, so that the last cycles are in. Idempotent.
  void Stop();

  // The explaining thread's kernel id (0 once stopped): to move it off the RT CPUs.
  int tid() const noexcept { return thread_ != nullptr ? thread_->tid() : 0; }

  std::vector<OutlierRecord> Records() const;  // in the order the outliers were recorded
  // At most `max` records from the `first`-th (0-based, in recording order): what a view that
  // pages or follows the records reads, without copying every record each time.
  std::vector<OutlierRecord> Records(std::size_t first, std::size_t max) const;
  std::size_t record_count() const;
  ExplainerStats stats() const;

 private:
  struct Pending {
    OutlierWindow window;
    std::int64_t seen_ns = 0;        // CLOCK_MONOTONIC when the sample was read
    std::vector<bool> asked;         // per source: asked once already (sources not re-asked)
    std::vector<std::string> notes;  // per source: its last note
    // The trace explained the window; the record waits for the counters' page faults of the
    // task's own thread, which the trace does not show (FaultsFromCounters()).
    bool traced = false;
    OutlierRecord record;
    std::int64_t cpu_ns = 0;  // the analysis's CPU time so far
  };
  Explainer(const ExplainerConfig& config, std::shared_ptr<telemetry::Subscription> subscription,
            std::vector<std::unique_ptr<EvidenceSource>> sources);
  void Pass(bool last);  // one tick's work; `last`: nothing stays pending
  void ReadSamples();
  void TryPending(bool last);
  bool TryExplain(Pending& p, bool last);  // true when the window is recorded
  // For a window the trace explained: adds the counters' page faults of the task's thread; false
  // while the counters have not sampled after the window (and it is not time to give up).
  bool FaultsFromCounters(Pending& p, bool last);
  void Record(OutlierRecord record, std::int64_t cpu_ns);
  const ExplainedTask* FindTask(TaskId task) const;
  TaskOutlierStats* TaskStats(TaskId task);  // mu_ held

  const ExplainerConfig config_;
  std::shared_ptr<telemetry::Subscription> subscription_;
  std::vector<std::unique_ptr<EvidenceSource>> sources_;
  std::vector<telemetry::SampleBatch> batches_;  // reused by ReadSamples()
  std::vector<Pending> pending_;                 // the explaining thread's (or Stop()'s) only
  mutable std::mutex mu_;                        // guards records_ and stats_
  std::vector<OutlierRecord> records_;
  ExplainerStats stats_;
  std::unique_ptr<HousekeepingThread> thread_;
  bool stopped_ = false;
};

}  // namespace rtloop::explain
