// MaxOverTime: rtloop-cyclic's --max-over-time=FILE extension, the maximum wake-up latency of each
// thread in each time window (OSADL's "max over time"), exact and in constant memory, so a 24 h run
// shows when its spikes happened without recording every sample.
//
//   MaxOverTimeConfig c;
//   c.path = "mot.txt";
//   c.window = std::chrono::seconds(1);          // --max-window=1000 (ms)
//   c.origin = Now(Clock::kMonotonic);           // window 0 starts here, for every thread
//   c.threads = 2;
//   Result<std::unique_ptr<MaxOverTime>> mot = MaxOverTime::Create(c);   // opens FILE
//   task_config.observers = {(*mot)->Observer(i, next_observer)};        // one per thread
//   (*mot)->Start();   // after the executor started: the writer thread appends windows to FILE
//   ... executor->Stop();
//   Status s = (*mot)->Close();   // the last windows, "# end"; any write error
//
// Per sample (after the first `warmup_cycles` of the thread, as the other statistics): the value is
// cyclictest's diff (CyclicRecorder::Diff: us, or ns with -N), so the windows' maxima agree exactly
// with the T: line's Max. A window is [origin + k*window, origin + (k+1)*window) on the release
// time E_k; the RT thread keeps the running max of its current window and, when a release falls
// into a later window, publishes the finished one into a preallocated single-producer ring. A
// writer thread drains the rings every 100 ms and appends the windows to FILE, so the file grows
// during the run (a long run that is killed keeps what was written) and can be watched live.
//
// FILE format (text; one window of one thread a line, in the order windows completed; a window in
// which a thread had no release is absent):
//   # rtloop-cyclic max over time
//   # window_us: 1000000
//   # unit: us                        (ns under -N)
//   # columns: thread window start_s max cycles
//   0 0 0.000 17 999
//   1 0 0.000 15 1000
//   ...
//   # lost_windows: 0                 (windows dropped because a ring was full; 0 normally)
//   # end                             (written by Close(): the file is complete)
//
// Threading: Observer(i) objects are called on thread i's RT thread (OnCycle is RT-safe: no
// allocation, no lock, no syscall). Start()/Close() on the main thread; Close() only after the RT
// threads stopped. Create/Start/Close are not RT-safe (file I/O, a thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/time.h"

namespace rtloop::cyclic {

// One finished window of one thread.
struct WindowMax {
  std::int64_t window = 0;   // index k since the origin
  std::int64_t max = 0;      // the largest diff in the window (run unit)
  std::uint64_t cycles = 0;  // samples in the window
};

// The RT side for one thread: the running window and the ring of finished ones.
class WindowMaxTracker final : public CycleObserver {
 public:
  // `ring_capacity` must be a power of two; `next` (nullable) gets every call after this one.
  WindowMaxTracker(std::chrono::nanoseconds window, TimePoint origin, bool nsecs,
                   std::uint64_t warmup_cycles, std::size_t ring_capacity, CycleObserver* next);
  void OnRtThreadStart(TaskId task) override;
  // RT-safe.
  void OnCycle(const CycleSample& sample) noexcept override;

  // Reader (one thread): calls fn(const WindowMax&) for each finished window, oldest first.
  template <typename Fn>
  void Drain(Fn&& fn);
  // After the RT thread stopped: the window it was in, if it had any sample there.
  bool TakeCurrent(WindowMax* out) noexcept;
  // Windows dropped because the ring was full (any thread).
  std::uint64_t lost() const noexcept { return lost_.load(std::memory_order_relaxed); }

 private:
  void Publish() noexcept;

  const std::int64_t window_ns_;
  const TimePoint origin_;
  const bool nsecs_;
  const std::uint64_t warmup_cycles_;
  CycleObserver* const next_;
  std::vector<WindowMax> ring_;  // sized in the constructor, never resized
  const std::uint64_t mask_;

  // RT thread only.
  std::uint64_t seen_ = 0;
  WindowMax current_{-1, 0, 0};
  // Producer index (RT thread writes, reader acquires) and consumer index (reader only writes).
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<std::uint64_t> lost_{0};
};

struct MaxOverTimeConfig {
  std::string path;                                           // --max-over-time=FILE
  std::chrono::nanoseconds window = std::chrono::seconds(1);  // --max-window (ms)
  TimePoint origin;                  // start of window 0, on the run's clock
  int threads = 1;                   // measurement threads
  bool nsecs = false;                // -N: values in ns
  std::uint64_t warmup_cycles = 0;   // --warmup
  std::size_t ring_capacity = 4096;  // windows per thread between two drains
};

class MaxOverTime {
 public:
  // Validates the config, creates FILE and writes its header. Errors name the path. Not RT-safe.
  static Result<std::unique_ptr<MaxOverTime>> Create(const MaxOverTimeConfig& config);
  ~MaxOverTime();
  MaxOverTime(const MaxOverTime&) = delete;
  MaxOverTime& operator=(const MaxOverTime&) = delete;

  // The observer for thread `index`, forwarding to `next` (nullable). Call once per thread, before
  // the executor starts. Not RT-safe.
  CycleObserver* Observer(int index, CycleObserver* next);
  // Starts the writer thread (it inherits the calling thread's CPU affinity). Not RT-safe.
  Status Start();
  // Stops the writer, appends every remaining window and "# lost_windows: N", "# end", closes the
  // file. The first write/flush/close error, if any (the message names the file). Idempotent.
  Status Close();

 private:
  explicit MaxOverTime(const MaxOverTimeConfig& config, std::FILE* file);
  void DrainAll();
  void Write(int thread, const WindowMax& w);

  const MaxOverTimeConfig config_;
  std::FILE* file_;
  std::vector<std::unique_ptr<WindowMaxTracker>> trackers_;  // by thread index
  std::thread writer_;
  std::atomic<bool> stop_{false};
  int error_ = 0;  // first errno of a failed write (writer thread, then Close)
  bool closed_ = false;
};

template <typename Fn>
void WindowMaxTracker::Drain(Fn&& fn) {
  std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint64_t head = head_.load(std::memory_order_acquire);
  while (tail != head) {
    fn(ring_[tail & mask_]);
    ++tail;
  }
  tail_.store(tail, std::memory_order_release);
}

}  // namespace rtloop::cyclic
