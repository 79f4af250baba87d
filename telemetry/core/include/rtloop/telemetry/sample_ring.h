// SampleRing: the bounded lock-free queue that carries one task's samples from its RT thread to the
// collector. Built on moodycamel::ConcurrentQueue (kept out of this header), sized and prefaulted
// at set-up, written through one long-lived explicit producer token owned by the RT thread with
// try_enqueue only: a full ring drops the sample and counts it; the RT thread never blocks and
// never allocates.
//
//   Result<std::unique_ptr<SampleRing>> ring = SampleRing::Create({.capacity = 8192});
//   // on the RT thread, at start (may allocate):
//   (*ring)->writer().AttachToCurrentThread();
//   // on the RT thread, every cycle (RT-safe):
//   (*ring)->writer().TryPush(sample);
//   // on the collector thread:
//   std::size_t n = (*ring)->reader().Drain(buffer, std::size(buffer));
//
// Threading: Writer is for exactly one thread at a time (the task's RT thread). Reader is for
// exactly one thread at a time (the collector). Counters are readable from any thread.
// Per-writer order is preserved: the reader sees samples in the order they were pushed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "rtloop/framework/status.h"
#include "rtloop/telemetry/sample.h"

namespace rtloop::telemetry {

struct SampleRingConfig {
  // Samples the ring holds; rounded up to a whole number of the queue's blocks. > 0.
  std::size_t capacity = 8192;
};

// The capacity a task needs: at least rate x 2 x drain period, never below `floor`, rounded up to a
// power of two. `period` and `drain_period` > 0.
std::size_t RingCapacityFor(std::chrono::nanoseconds period, std::chrono::nanoseconds drain_period,
                            std::size_t floor = 8192) noexcept;

class SampleRing {
 public:
  // The RT side.
  class alignas(64) Writer {
   public:
    // Creates the long-lived producer token on the calling thread (call it on the RT thread, e.g.
    // from CycleObserver::OnRtThreadStart). Replaces a previous token. Not RT-safe: allocates.
    void AttachToCurrentThread();
    // Pushes one sample; false (and the drop counted) when the ring is full or no token is
    // attached. RT-safe.
    [[nodiscard]] bool TryPush(const Sample& sample) noexcept;
    // Samples pushed successfully / dropped. Any thread. RT-safe.
    std::uint64_t pushed() const noexcept { return pushed_.load(std::memory_order_relaxed); }
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

   private:
    friend class SampleRing;
    explicit Writer(SampleRing& ring) noexcept : ring_(ring) {}
    SampleRing& ring_;
    void* token_ = nullptr;  // moodycamel::ProducerToken*, owned
    std::atomic<std::uint64_t> pushed_{0};
    std::atomic<std::uint64_t> dropped_{0};
  };

  // The collector side.
  class alignas(64) Reader {
   public:
    // Moves up to `max` samples into `out` in bulk; returns how many. Not RT-safe by contract (the
    // collector's side), though it does not allocate.
    std::size_t Drain(Sample* out, std::size_t max) noexcept;
    // Samples drained so far. Any thread.
    std::uint64_t drained() const noexcept { return drained_.load(std::memory_order_relaxed); }

   private:
    friend class SampleRing;
    explicit Reader(SampleRing& ring) noexcept : ring_(ring) {}
    SampleRing& ring_;
    std::atomic<std::uint64_t> drained_{0};
  };

  // Allocates and prefaults (one fill-and-drain pass) the whole ring. Not RT-safe.
  static Result<std::unique_ptr<SampleRing>> Create(const SampleRingConfig& config);
  ~SampleRing();
  SampleRing(const SampleRing&) = delete;
  SampleRing& operator=(const SampleRing&) = delete;

  Writer& writer() noexcept { return writer_; }
  Reader& reader() noexcept { return reader_; }
  const Writer& writer() const noexcept { return writer_; }
  const Reader& reader() const noexcept { return reader_; }
  // Samples the ring can hold (after rounding). Any thread.
  std::size_t capacity() const noexcept { return capacity_; }
  // Approximate number of samples queued now. Any thread.
  std::size_t ApproxSize() const noexcept;

 private:
  struct Queue;
  SampleRing(std::unique_ptr<Queue> queue, std::size_t capacity) noexcept;
  std::unique_ptr<Queue> queue_;
  std::size_t capacity_;
  Writer writer_;
  Reader reader_;
};

}  // namespace rtloop::telemetry
