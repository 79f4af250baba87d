// WindowedStats: exact per-second histograms of every task of a TelemetryHub, kept for the last
// minutes, and the statistics of a sliding window over them (the last 10 s by default): what shows
// *when* a board went bad, which the cumulative histograms hide.
//
//   rtloop::telemetry::WindowedStats windows(hub);          // 10 s window, 300 s history
//   if (Status s = windows.Start(); !s.ok()) return s;       // a 1 Hz thread (housekeeping CPU)
//   ...
//   TaskWindow w = windows.Window(id);                       // any thread
//   if (w.latency.count > 0) printf("max %lld ns in the last 10 s\n", (long long)w.latency.max_ns);
//   std::vector<SecondStats> minutes = windows.History(id);  // one entry a second, oldest first
//
// Statistics reset (TaskStats::RequestReset, Runtime::ResetStats): at the first tick that sees the
// task's reset count change, its window restarts empty (that tick's second, which holds values
// from before the reset, included); the cumulative readings and the per-second history are kept.
//
// How: once a second (Tick()), the thread reads each task's cumulative latency and execution
// histograms (LatencyHistogram::ExportBuckets, relaxed loads, the RT thread is never waited for
// and never writes anything extra) and subtracts the previous reading bucket by bucket. Bucket
// counts only grow, so the difference is exactly the histogram of the values recorded in between:
// every value lands in exactly one second. A window's histogram is the sum of its seconds'.
//
// Accuracy (figures of the default histogram layout; HistogramLayout has the others): window
// counts are exact. A window percentile uses the nearest-rank definition and the HDR bucket
// midpoint, as LatencyHistogram does (within 0.1%; exact below 2048 ns). A second's max is exact
// when it raised the task's all-time max (the hub keeps that exactly) or is below 2048 ns;
// otherwise it is the largest value its highest bucket can hold: never below the true max, at
// most 1/1024 above it. Negative values (early wake-ups) are counted per second with
// their sum: a percentile whose rank falls among them reports their mean, as the hub does.
//
// Memory, with B the hub's histogram_layout.bucket_count() (28,672 by default): per histogram, the
// previous reading (dense: B x 8 bytes, 224 KiB, allocated at its first tick and never grown),
// the window's seconds (8 bytes per bucket that changed in that second: a 1 kHz task <= 8 KB a
// second) and the history (56 bytes a second); once, two buffers for the histograms' exports
// ((B + 2) x 24 bytes, 672 KiB each, touched at the first tick) and one for merging (B x 8). So
// after the history is full, the memory no longer grows with the values a task records. Allocated
// on the ticking thread, never on an RT thread.
//
// Threading: Start()/Stop() for one controlling thread; Tick() is called by the thread (or by a
// test when none was started), never concurrently with itself; Window()/History()/TaskIds() from
// any thread (a mutex per task, held for a copy). The thread is created by Start() and inherits
// the caller's CPU affinity and scheduling: start it from a housekeeping thread. Not RT-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/task_stats.h"
#include "rtloop/telemetry/latency_histogram.h"

namespace rtloop::telemetry {

class TelemetryHub;
class TaskTelemetry;

struct WindowedStatsConfig {
  // Length of the sliding window, in whole seconds. 1..history.
  std::chrono::seconds window{10};
  // Per-second statistics kept for charts (History()). window..86400.
  std::chrono::seconds history{300};
  // Time between two ticks of the thread. Each History() entry covers one tick. 10 ms..60 s.
  std::chrono::milliseconds tick{1000};
};

// The statistics of one histogram over a span of time. Empty (count 0, valid false) when the span
// holds no value: show "no data", never 0.
struct WindowSummary {
  bool valid = false;       // count > 0
  std::uint64_t count = 0;  // values recorded in the span
  std::int64_t sum_ns = 0;  // their sum, exact
  std::int64_t max_ns = 0;  // see "Accuracy" above
  std::int64_t p99_ns = 0;  // nearest-rank percentiles, HDR bucket midpoints
  std::int64_t p99_9_ns = 0;
  std::int64_t p99_99_ns = 0;
};

// One task over the window.
struct TaskWindow {
  TaskId id = 0;
  std::chrono::nanoseconds span{0};  // time the window's seconds really cover (0: no tick yet)
  WindowSummary latency;             // wake-up latency
  WindowSummary execution;           // execution time
};

// One tick (normally a second) of one task.
struct SecondStats {
  std::int64_t unix_ms = 0;  // wall-clock time at the end of the tick (for chart axes)
  std::uint64_t latency_count = 0;
  std::int64_t latency_max_ns = 0;  // 0 when latency_count == 0
  std::int64_t latency_p99_ns = 0;
  std::uint64_t execution_count = 0;
  std::int64_t execution_max_ns = 0;
  std::int64_t execution_p99_ns = 0;
};

// A task's cumulative histogram as of its last reading (since the task started).
struct HistogramReading {
  WindowSummary total;  // count, sum, the exact all-time max, p99 ... (nearest rank, midpoints)
  // Non-empty buckets, ascending, as LatencyHistogram::ExportBuckets gives them (negatives as one
  // bucket [min, 0) first, overflow as [layout max_trackable(), max + 1) last); only when asked
  // for.
  std::vector<HistogramBucket> buckets;
  // Counts per bin of the bounds asked for (ascending, ns): bins[i] counts the values of the
  // buckets whose every value is <= bounds[i] and that no earlier bin took (a bucket [lower,
  // upper) goes to the first i with upper - 1 <= bounds[i]; negatives to bin 0, the overflow
  // bucket to the first bound >= the max); the last entry, bins[bounds.size()], takes the rest.
  // Empty when no bounds were asked for.
  std::vector<std::uint64_t> bins;
};

// One tick's reading of a task: its histograms and the executor's counters, read together (the
// execution histogram, then the latency histogram, then the counters), so that an exporter takes
// all of them from one reading (/metrics: rtloop_task_cycles_total is latency.total.count).
// Relations that hold in every reading, the task running or not: latency.total.count <=
// stats.cycles, and execution.total.count <= latency.total.count (the RT thread records the
// counters, then latency, then execution). They differ only by the cycles that ran while the
// reading was taken (0 for a stopped task, rarely more than 1).
struct TaskReading {
  TaskId id = 0;
  bool valid = false;        // read at least once
  std::int64_t unix_ms = 0;  // wall-clock time of the reading
  HistogramReading latency;
  HistogramReading execution;
  TaskStatsSnapshot stats;  // the executor's statistics, read right after the histograms
};

class WindowedStats {
 public:
  // `hub` must outlive this. Tasks added to the hub later are picked up at the next tick. The
  // config is validated by Start() (and Validate()).
  explicit WindowedStats(const TelemetryHub& hub, const WindowedStatsConfig& config = {});
  ~WindowedStats();  // Stop()
  WindowedStats(const WindowedStats&) = delete;
  WindowedStats& operator=(const WindowedStats&) = delete;

  // InvalidArgument naming the field when the config is out of range.
  static Status Validate(const WindowedStatsConfig& config);
  // Validates, takes the first reading (so the first tick covers one second, not the whole run
  // so far) and creates the thread. FailedPrecondition when already started.
  Status Start();
  // Stops and joins the thread; the statistics stay readable. Idempotent.
  void Stop();

  // One reading of every task: appends a second to its history and recomputes its window. The
  // first reading of a task only sets the baseline. Called by the thread; tests without a thread
  // call it themselves (never concurrently with itself).
  void Tick();

  const WindowedStatsConfig& config() const noexcept { return config_; }
  // The hub's histogram layout, which every reading's buckets follow.
  const HistogramLayout& layout() const noexcept { return layout_; }
  // The window of task `id`; an empty TaskWindow (id set) for a task not seen yet. Any thread.
  TaskWindow Window(TaskId id) const;
  // The last reading of task `id` (invalid for a task not read yet); `with_buckets` copies the
  // non-empty buckets too, `bin_bounds_ns` (ascending) sums them into bins (HistogramReading::
  // bins) in one pass under the task's lock: what an exporter needs, without copying buckets.
  // Any thread.
  TaskReading Reading(TaskId id, bool with_buckets = false,
                      std::span<const std::int64_t> bin_bounds_ns = {}) const;
  // Up to `max_seconds` (0: all kept) most recent ticks of task `id`, oldest first. Any thread.
  std::vector<SecondStats> History(TaskId id, std::size_t max_seconds = 0) const;
  // Ticks so far.
  std::uint64_t ticks() const noexcept;

  // Internal to windowed_stats.cc: one task's state.
  struct TaskState;

 private:
  void Run();
  TaskState* StateFor(TaskId id) const;
  // One task's part of Tick().
  void TickTask(const TaskTelemetry& t, TaskState* state);

  const TelemetryHub& hub_;
  const WindowedStatsConfig config_;
  const HistogramLayout layout_;                   // the hub's: every task's histograms have it
  mutable std::mutex tasks_mu_;                    // guards the vector, not the states
  std::vector<std::unique_ptr<TaskState>> tasks_;  // by task id (null: not seen yet)
  std::vector<std::uint64_t> scratch_;             // window merge, dense by bucket (Tick only)
  std::vector<std::uint32_t> touched_;             // indices set in scratch_ (Tick only)
  std::vector<HistogramBucket> latency_buckets_;   // a task's export, room for all (Tick only)
  std::vector<HistogramBucket> execution_buckets_;
  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stop_ = false;  // guarded by run_mu_
  bool started_ = false;
  std::thread thread_;
  std::atomic<std::uint64_t> ticks_{0};
};

}  // namespace rtloop::telemetry
