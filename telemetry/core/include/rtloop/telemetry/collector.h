// Collector: the non-RT thread that drains every task's SampleRing in bulk and fans the samples out
// to sinks: subscriptions (bounded drop-oldest queues, added and removed at any time, e.g. one per
// gRPC stream) and SampleSinks such as the SampleLogWriter.
//
// When it wakes: every drain period (the hub's TelemetryHubConfig::drain_period, as
// rtloop::Runtime's 50 ms by default: kDefaultDrainPeriod) while someone consumes samples (a
// subscription or a sink); with no consumer only as often as the rings need to stay below half full
// (capacity / 2 cycles of the fastest task, at most once a second), since nobody waits for the
// samples then. A new subscription wakes it at once. After a pass it tells each subscription that
// got samples (Subscription::SetOnSamples), so that a consumer such as a gRPC stream need not wake
// on a timer of its own. Each wake-up on a CPU that runs RT tasks costs them latency: start it on a
// housekeeping CPU, or give CollectorConfig::cpus (rtloop::Runtime picks CPUs no pinned task uses).
//
//   rtloop::telemetry::Collector collector(hub);
//   collector.AddSink(sample_log.get());                  // before Start()
//   if (Status s = collector.Start(); !s.ok()) return s;  // call from a housekeeping CPU
//   std::shared_ptr<Subscription> sub = collector.Subscribe({.tasks = {0}});
//   std::vector<SampleBatch> batches;
//   sub->Pop(&batches, std::chrono::milliseconds(100));   // waits up to 100 ms for samples
//   sub->Close();                                         // or collector.Unsubscribe(sub)
//   collector.Stop();                                     // drains what remains, flushes sinks
//
// Accounting is exact: per task, samples produced = delivered (drained by the collector) + dropped
// in the ring; per subscription, offered (delivered to it) = received + lost + queued. A slow or
// stalled subscription loses its own oldest samples and affects neither other subscriptions, nor
// sinks, nor any RT thread.
//
// Loss: a Subscription is the one place that counts subscriber loss. A sample is lost for a
// subscription when its queue was full (the oldest go), or when its consumer ends it with the
// sample undelivered (Abandon(): a stream at the run's delivery deadline). Each loss is counted
// once, at that moment, in the subscription's own figures (stats().lost, the next batch's
// lost_before) and in its task's TaskTelemetry::subscriber_lost, the count every export reads
// (GetStats' stream_loss, /metrics' rtloop_task_subscriber_lost_samples_total, the task report's
// LOST, rtloop-top's LOSS). What is still queued when a subscription is closed otherwise (Close(),
// Unsubscribe(): a client cancelled) is not lost: nothing is owed to a consumer that left.
//
// Threading: every public method may be called from any non-RT thread. The collector thread is
// created by Start(); it switches itself to SCHED_OTHER, blocks SIGINT/SIGTERM, and moves to
// CollectorConfig::cpus when given (otherwise it keeps the caller's affinity). Sinks run on the
// collector thread (and on the thread calling Stop()/DrainOnce(), or a reader of the hub's
// histograms: TelemetryHub::Drain()), never concurrently with each other.
//
// The histograms: each pass records the samples it drains into their task's histograms
// (TaskTelemetry::RecordDrained) before handing them on; the RT thread only pushes. From
// construction until Stop() the collector is the hub's drainer (TelemetryHub::SetDrainer): a
// reader of the histograms first runs a pass on its own thread, unless one is under way.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/status.h"
#include "rtloop/telemetry/sample.h"
#include "rtloop/telemetry/task_telemetry.h"

namespace rtloop::telemetry {

// Receives every drained sample, on the collector thread, in per-task chunks in seq order.
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // `samples` all belong to `task`, in the order the RT thread produced them.
  virtual void OnSamples(TaskId task, std::span<const Sample> samples) = 0;
  // After each drain pass (every drain period, and at Stop()). Default: nothing.
  virtual void OnDrainEnd() {}
};

// Consecutive samples of one task, as a subscriber receives them.
struct SampleBatch {
  TaskId task = 0;
  std::uint64_t first_seq = 0;  // seq of samples[0]; samples[i].seq == first_seq + i
  // Samples of this task this subscription lost (dropped oldest from its queue) since its previous
  // batch of the task. A seq gap larger than lost_before was dropped in the task's ring.
  std::uint64_t lost_before = 0;
  std::vector<Sample> samples;
};

struct SubscriptionConfig {
  std::vector<TaskId> tasks = {};  // tasks to receive; empty: all (ids > 65535 match nothing)
  std::size_t capacity = 1 << 16;  // samples queued at most; the oldest are dropped beyond. > 0
  // Count this subscription's loss in its task's TaskTelemetry::subscriber_lost (see "Loss"
  // above). false for a consumer that reports its loss itself and is no stream subscriber (the
  // outlier analysis: ExplainerStats::samples_lost, /metrics' rtloop_outlier_samples_lost_total).
  bool count_loss_in_hub = true;
};

struct SubscriptionStats {
  std::uint64_t offered = 0;   // samples the collector delivered to this subscription
  std::uint64_t received = 0;  // samples handed out by Pop()
  std::uint64_t lost = 0;      // samples dropped (oldest first) because the queue was full
  std::uint64_t queued = 0;    // samples waiting; offered == received + lost + queued
};

class Subscription {
 public:
  // Moves up to `max_samples` queued samples into `out` (cleared first) as per-task batches of
  // consecutive seqs, waiting up to `timeout` (at most a day per call) for the first sample.
  // Returns the number of samples; 0 on timeout or when closed and empty. Any (non-RT) thread; one
  // consumer at a time.
  std::size_t Pop(std::vector<SampleBatch>* out, std::chrono::nanoseconds timeout,
                  std::size_t max_samples = 1 << 14);
  // No more samples are queued; a waiting Pop() wakes. Queued samples may still be popped.
  // Idempotent.
  void Close();
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  // Ends the subscription for a consumer that could not deliver what it holds (a stream whose
  // run ended and whose delivery deadline passed): closes it, and counts as lost (see "Loss")
  // every sample still queued and the samples of `undelivered`, batches Pop() handed out that the
  // consumer never passed on (they leave `received`; their lost_before is reported again here).
  // Returns per task id the loss no batch delivered reported: the stream's last account. Any
  // (non-RT) thread; the consumer, once.
  std::vector<std::uint64_t> Abandon(std::span<const SampleBatch> undelivered);
  // True when `task` passes this subscription's filter.
  bool Wants(TaskId task) const noexcept;
  // `fn` is called on the collector's thread after every drain pass that queued samples here
  // (outside the collector's locks; it may Pop()): a consumer can then react to new samples
  // instead of polling for them. It must not block, and must not call the collector's Stop() or
  // DrainOnce(). Replaces an earlier one; nullptr: none. Any (non-RT) thread.
  void SetOnSamples(std::function<void()> fn);
  // Calls the SetOnSamples() function, if any (the collector, after a drain pass).
  void NotifySamples();
  SubscriptionStats stats() const;

  // Used by the collector: appends samples of one task, dropping the oldest beyond capacity
  // (counted as lost).
  void Offer(TaskId task, std::span<const Sample> samples);

  // Use Collector::Subscribe(). `hub` (may be null): where each loss is also counted, in the
  // TaskTelemetry of the sample's task.
  explicit Subscription(const SubscriptionConfig& config, TelemetryHub* hub = nullptr);

 private:
  // Counts `n` lost samples of `task`: the one place subscriber loss is counted. mu_ held.
  void LoseLocked(TaskId task, std::uint64_t n);

  TelemetryHub* const hub_;         // null: the loss is counted here only
  const std::vector<bool> filter_;  // by task id; empty: all
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Sample> ring_;  // circular, capacity_ slots, guarded by mu_
  std::size_t head_ = 0;      // index of the oldest queued sample
  std::size_t size_ = 0;
  std::vector<std::uint64_t> pending_lost_;                  // per task id, guarded by mu_
  std::shared_ptr<const std::function<void()>> on_samples_;  // guarded by mu_
  std::uint64_t offered_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t lost_ = 0;
  std::atomic<bool> closed_{false};
};

struct CollectorConfig {
  // Time between drain passes while samples are consumed. 0: the hub's drain_period, for which
  // its rings are sized (a longer one than that makes the rings drop samples). >= 0.
  std::chrono::nanoseconds drain_period{0};
  // Samples taken from one ring per bulk dequeue (buffer allocated once). > 0.
  std::size_t chunk_size = 4096;
  // CPUs for the collector thread; empty: the affinity of the thread that calls Start().
  std::vector<int> cpus = {};
};

struct CollectorStats {
  std::uint64_t passes = 0;     // drain passes so far
  std::uint64_t delivered = 0;  // samples drained from all rings
  std::size_t subscriptions = 0;
};

class Collector {
 public:
  // `hub` must outlive the collector.
  explicit Collector(TelemetryHub& hub, const CollectorConfig& config = {});
  ~Collector();  // Stop() if still running (the sinks must then still exist)
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Adds a sink (not owned; must outlive the collector's Stop() or destruction). Before Start()
  // only: FailedPrecondition afterwards.
  Status AddSink(SampleSink* sink);
  // Creates the collector thread and returns once it runs with its CPUs and scheduling (tid() is
  // set). FailedPrecondition when already started.
  Status Start();
  // Stops the thread (if started), then drains every ring until empty, delivers, and flushes the
  // sinks. Stop the executor first to collect every sample. Safe to call more than once, but not
  // concurrently with itself or Start().
  void Stop();
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  // One synchronous drain pass on the calling thread (for callers that run no thread, and tests);
  // returns the samples drained. Serialised with the collector thread's own passes.
  std::size_t DrainOnce();

  // Any time, any non-RT thread. Never fails: a capacity of 0 is taken as 1.
  std::shared_ptr<Subscription> Subscribe(const SubscriptionConfig& config);
  // Closes `sub` and forgets it. Safe to call twice or with a subscription already closed.
  void Unsubscribe(const std::shared_ptr<Subscription>& sub);

  CollectorStats stats() const;
  // The drain period in force (CollectorConfig::drain_period or the hub's). Any thread.
  std::chrono::nanoseconds drain_period() const noexcept { return drain_period_; }
  // Kernel thread id of the collector thread while it runs; 0 otherwise. Any thread.
  int tid() const noexcept { return tid_.load(std::memory_order_acquire); }

 private:
  void Run(std::promise<void>* ready);  // `ready` is set once the thread is set up
  std::size_t DrainPass();
  // A pass unless one is under way (then 0 at once): TelemetryHub::Drain()'s drainer.
  std::size_t DrainIfIdle();
  std::size_t DrainPassLocked();  // drain_mu_ held
  // The time to the next pass: the drain period with a consumer, longer without (see above).
  std::chrono::nanoseconds NextWait();

  TelemetryHub& hub_;
  const CollectorConfig config_;
  const std::chrono::nanoseconds drain_period_;
  std::atomic<int> tid_{0};
  std::vector<SampleSink*> sinks_;
  std::vector<Sample> buffer_;
  mutable std::mutex subs_mu_;
  std::vector<std::shared_ptr<Subscription>> subs_;  // guarded by subs_mu_
  std::mutex drain_mu_;                              // one drain pass at a time
  // The subscriptions the current drain pass offered samples to (NotifySamples() after it).
  std::vector<std::shared_ptr<Subscription>> notify_;  // guarded by drain_mu_
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;  // guarded by stop_mu_
  bool wake_requested_ = false;  // guarded by stop_mu_: a first consumer arrived
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::atomic<std::uint64_t> passes_{0};
  std::atomic<std::uint64_t> delivered_{0};
};

}  // namespace rtloop::telemetry
