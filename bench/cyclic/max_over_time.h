// MaxOverTime: rtloop-cyclic's --max-over-time=FILE extension, the maximum wake-up latency of each
// thread in each time window (OSADL's "max over time"), exact and in constant memory, so a 24 h run
// shows when its spikes happened without recording every sample.
//
//   Result<telemetry::OutputFile> file = telemetry::OutputFile::Open(path, {.what = "..."});
//   MaxOverTimeConfig c;
//   c.window = std::chrono::seconds(1);          // --max-window=1000 (ms)
//   c.origin = Now(Clock::kMonotonic);           // window 0 starts here, for every thread
//   c.threads = 2;
//   c.break_latch = &latch;                      // -b: windows end with the break, as T: does
//   Result<std::unique_ptr<MaxOverTime>> mot = MaxOverTime::Create(c, std::move(*file));
//   task_config.observers = {stats, (*mot)->Observer(i)};   // one per thread, beside the others
//   (*mot)->Start();   // after the tasks started: the writer thread appends windows to FILE
//   ... runtime->Stop();
//   Status s = (*mot)->Close();   // the last windows, "# end", FILE.partial renamed to FILE
//
// Per sample the value is cyclictest's diff (CyclictestDiff: us, or ns with -N), taken over the
// same samples as the T: line (the executor leaves --warmup's cycles out, and samples after a -b
// break are left out here as in CyclicThreadStats), so the windows' maxima agree exactly with its
// Max and their cycles add up to its C:. A window is [origin + k*window, origin + (k+1)*window)
// on the release time E_k; the RT thread keeps the running max of its current window and, when a
// release falls into a later window, publishes the finished one into a preallocated
// single-producer ring. A writer thread drains the rings every 100 ms and appends the windows to
// the file, so it grows during the run and can be watched live. The file goes through
// telemetry::OutputFile like every output of rtloop-cyclic: it is FILE.partial until Close()
// completes it (a run killed meanwhile leaves FILE.partial with every window written so far), and
// Abandon() (a set-up error) removes it.
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
// allocation, no lock, no syscall). Start()/Close()/Abandon() on the main thread; Close() only
// after the RT threads stopped. Create/Start/Close/Abandon are not RT-safe (file I/O, a thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cyclic_thread_stats.h"
#include "rtloop/framework/cycle_observer.h"
#include "rtloop/framework/status.h"
#include "rtloop/framework/time.h"
#include "rtloop/telemetry/output_file.h"

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
  // `ring_capacity` must be a power of two. `thread` is the thread's index; with `latch` (-b)
  // samples after the break are left out (BreakLatch::Excludes).
  WindowMaxTracker(int thread, std::chrono::nanoseconds window, TimePoint origin, bool nsecs,
                   std::size_t ring_capacity, const BreakLatch* latch = nullptr);
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

  const int thread_;
  const std::int64_t window_ns_;
  const TimePoint origin_;
  const bool nsecs_;
  const BreakLatch* const latch_;  // nullable
  std::vector<WindowMax> ring_;    // sized in the constructor, never resized
  const std::uint64_t mask_;

  // RT thread only.
  WindowMax current_{-1, 0, 0};
  // Producer index (RT thread writes, reader acquires) and consumer index (reader only writes).
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<std::uint64_t> lost_{0};
};

struct MaxOverTimeConfig {
  std::chrono::nanoseconds window = std::chrono::seconds(1);  // --max-window (ms)
  TimePoint origin;                         // start of window 0, on the run's clock
  int threads = 1;                          // measurement threads
  bool nsecs = false;                       // -N: values in ns
  const BreakLatch* break_latch = nullptr;  // -b: the run's latch (outlives the trackers)
  std::size_t ring_capacity = 4096;         // windows per thread between two drains
};

class MaxOverTime {
 public:
  // Validates the config and writes the header into `file` (opened and checked with the run's
  // other outputs, telemetry/output_file.h). Errors name the file. Not RT-safe.
  static Result<std::unique_ptr<MaxOverTime>> Create(const MaxOverTimeConfig& config,
                                                     telemetry::OutputFile file);
  ~MaxOverTime();  // Abandon() unless closed
  MaxOverTime(const MaxOverTime&) = delete;
  MaxOverTime& operator=(const MaxOverTime&) = delete;

  // The observer for thread `index`. Call once per thread, before the tasks start. Not RT-safe.
  CycleObserver* Observer(int index);
  // Starts the writer thread (it inherits the calling thread's CPU affinity). Not RT-safe.
  Status Start();
  // Stops the writer, appends every remaining window and "# lost_windows: N", "# end", and
  // completes the file (FILE.partial renamed to FILE). The first write, sync, close or rename
  // error, if any (the message names the option and the file); FILE is then not created.
  // Idempotent. Only after the RT threads stopped.
  Status Close();
  // Stops the writer and removes FILE.partial: for a run whose set-up failed. Idempotent.
  void Abandon();

 private:
  MaxOverTime(const MaxOverTimeConfig& config, telemetry::OutputFile file);
  void StopWriter();
  void DrainAll();
  void Append(int thread, const WindowMax& w, std::string& out) const;

  const MaxOverTimeConfig config_;
  telemetry::OutputFile file_;  // the writer thread's until StopWriter(), then Close()'s
  std::vector<std::unique_ptr<WindowMaxTracker>> trackers_;  // by thread index
  std::thread writer_;
  std::atomic<bool> stop_{false};
  bool done_ = false;  // closed or abandoned
};

template <typename Fn>
void WindowMaxTracker::Drain(Fn&& fn) {
  std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint64_t head = head_.load(std::memory_order_acquire);
  while (tail != head) {
    fn(ring_[static_cast<std::size_t>(tail & mask_)]);
    ++tail;
  }
  tail_.store(tail, std::memory_order_release);
}

}  // namespace rtloop::cyclic
