// SeqLockValue<T>: the latest value of a trivially copyable T, written by one thread and read by
// any number of threads. The writer never waits; a reader whose copy overlapped a write retries.
//
//   struct Setpoint { double position; double velocity; };
//   rtloop::SeqLockValue<Setpoint> setpoint;        // shared; outlives the threads that use it
//   setpoint.Store({1.0, 0.0});                     // the one writer (e.g. an RT task's Step)
//   Setpoint s = last_good;                         // an RT reader: one bounded attempt,
//   if (setpoint.TryLoad(s)) last_good = s;         //   keeps its previous value on a collision
//   Setpoint t = setpoint.Load();                   // a non-RT reader: retries until clean
//
// Use it for a whole value that one producer updates and readers want the newest of: a process
// image, a status block, setpoints from a UI. Readers may be many, unknown in number, RT or not,
// and they never slow the writer down. For exactly one reader that must never retry, use
// TripleBuffer (triple_buffer.h); for every sample in order (a log), use a queue such as the
// telemetry SampleRing.
//
// Threading contract:
//  - Store(): one writer thread at a time. Two concurrent writers corrupt the sequence (a debug
//    build catches an odd counter at the start of Store()).
//  - TryLoad(), Load(), version(): any number of threads, concurrently with Store().
//  - A reader that preempts the writer mid-Store (e.g. a higher SCHED_FIFO priority on the same
//    CPU) sees an odd counter until the writer runs again: an RT reader must therefore use
//    TryLoad() (bounded) and never spin on Load().
//  - The value lives in an array of std::atomic words (acquire loads, release stores, see
//    below), and moves in and out of T with memcpy: a copy torn by a concurrent Store() is
//    discarded, and it is never a data race under the C++ memory model (ThreadSanitizer is clean
//    without suppressions). Hence T must be trivially copyable.
//
// Memory orders, a seqlock after H.-J. Boehm ("Can seqlocks get along with programming language
// memory models?", MSPC 2012), with acquire/release on the words instead of fences:
//   writer: seq = s+1 (relaxed); words (release stores); seq = s+2 (release)
//   reader: s0 = seq (acquire); words (acquire loads); s1 = seq (relaxed)
//           the copy is good iff s0 == s1 and s0 is even
// If the reader loaded any word of a Store() that began after its acquire of s0, that word's
// release store (which comes after the writer's seq = s+1) synchronises with the reader's acquire
// load, so the later load of seq sees s+1 or more: s1 != s0 and the copy is thrown away. If s0
// came from the release store s+2 of the last completed Store(), the acquire load makes all of
// that Store()'s words visible. Why not the paper's two fences: ThreadSanitizer does not model
// std::atomic_thread_fence (gcc warns so under -fsanitize=thread), so the stress test would not
// check the orders that matter. On x86-64 both forms are plain moves; on AArch64 the words become
// stlr/ldar instead of one dmb per call, a few cycles for a process image of a few dozen words.
//
// How this compares with what robotics frameworks ship (read for the design, none of it copied):
//  - ros2_control's realtime_tools::RealtimeBuffer: a non-RT writer and one RT reader around a
//    priority-inheritance mutex and two heap-allocated T. readFromRT() try_locks and swaps
//    pointers, so the RT side does not block, but it keeps the older value while the writer holds
//    the lock, and it returns a pointer into the buffer (no copy; valid until its next call).
//    writeFromNonRT() polls try_lock with 500 us sleeps. One direction, one RT reader, any T.
//    SeqLockValue has no lock, works in either direction (RT writer or RT reader), serves any
//    number of readers and never allocates; it copies, and needs a trivially copyable T.
//  - realtime_tools::RealtimePublisher: the RT thread's try_publish() copies the message under
//    try_lock and notifies a condition variable that wakes a publishing thread (the notify can
//    enter the kernel); a message is dropped while the previous one is being published. The
//    equivalent here is Store() on the RT side and a non-RT thread that polls Load() (newest value
//    only, no wake-up), or the telemetry SampleRing when every sample matters.
//  - cactus-rt's lockless::spsc::RealtimeReadableValue (RT reader wait-free via an exchanged
//    pointer; the non-RT writer allocates a new T per write and CAS-loops) and
//    RealtimeWritableValue (RT writer wait-free into a double buffer with busy/new-data bits; the
//    non-RT reader CAS-loops). Each has one reader and one fixed direction. SeqLockValue allocates
//    nothing on either side, allows many readers, and bounds the RT reader by TryLoad()'s single
//    attempt instead of a CAS loop. Its price: readers may have to retry and can starve while the
//    writer stores back to back; TripleBuffer has neither problem, for one reader.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>

#include "rtloop/framework/check.h"

namespace rtloop {

template <typename T>
class SeqLockValue {
  static_assert(std::is_trivially_copyable_v<T>,
                "SeqLockValue<T> copies T byte-wise (memcpy); T must be trivially copyable");

 public:
  using value_type = T;

  // Holds T{} (version 0). Not RT-safe by contract (construction), though it does not allocate.
  SeqLockValue() noexcept(std::is_nothrow_default_constructible_v<T>) : SeqLockValue(T{}) {}
  explicit SeqLockValue(const T& initial) noexcept {
    WriteWords(initial, std::memory_order_relaxed);  // published by the threads' creation
  }

  SeqLockValue(const SeqLockValue&) = delete;
  SeqLockValue& operator=(const SeqLockValue&) = delete;

  // Publishes `value` as the latest. The writer thread only. RT-safe, wait-free: one memcpy into a
  // stack buffer, sizeof(T)/8 release stores, two stores of the counter.
  void Store(const T& value) noexcept {
    // Only this thread writes seq_, so a relaxed load reads our own last store.
    const Word s = seq_.load(std::memory_order_relaxed);
    RTLOOP_DCHECK((s & 1U) == 0, "SeqLockValue::Store() called by two threads at once");
    seq_.store(s + 1, std::memory_order_relaxed);  // odd: a write is in progress
    WriteWords(value, std::memory_order_release);  // each word ordered after the odd count
    seq_.store(s + 2, std::memory_order_release);  // even: words published
  }

  // One attempt to copy the latest value into `out`: true on success, false (and `out`
  // untouched) when a Store() overlapped the copy. Any thread. RT-safe, wait-free.
  [[nodiscard]] bool TryLoad(T& out) const noexcept {
    const Word s0 = seq_.load(std::memory_order_acquire);
    if ((s0 & 1U) != 0) return false;  // a Store() is in progress
    std::array<Word, kWords> buffer;
    // Acquire: a word from a newer Store() makes that Store()'s odd count visible to s1.
    for (std::size_t i = 0; i < kWords; ++i) buffer[i] = words_[i].load(std::memory_order_acquire);
    const Word s1 = seq_.load(std::memory_order_relaxed);
    if (s0 != s1) return false;  // a Store() began meanwhile: the copy may be torn
    std::memcpy(static_cast<void*>(&out), buffer.data(), sizeof(T));  // T is trivially copyable
    return true;
  }

  // Up to `max_attempts` (>= 1) attempts. Any thread. RT-safe: bounded by max_attempts.
  [[nodiscard]] bool TryLoad(T& out, int max_attempts) const noexcept {
    for (int i = 0; i < max_attempts; ++i) {
      if (TryLoad(out)) return true;
    }
    return false;
  }

  // Retries until a copy did not overlap a Store(); yields the CPU after every 64 failed attempts
  // so that a writer preempted on the same CPU can finish. Any thread. Not RT-safe: unbounded
  // (lock-free, not wait-free), and sched_yield() is a system call.
  T Load() const noexcept {
    T out{};
    for (unsigned attempt = 1; !TryLoad(out); ++attempt) {
      if (attempt % 64 == 0) std::this_thread::yield();
    }
    return out;
  }

  // Completed Store() calls. Any thread. RT-safe. A reader can compare it between two reads to
  // see whether the writer is still alive.
  std::uint64_t version() const noexcept { return seq_.load(std::memory_order_acquire) / 2; }

 private:
  // The widest word that is lock-free everywhere we run (64-bit on x86-64 and AArch64, 32-bit
  // where 64-bit atomics would fall back to a lock).
  using Word = std::conditional_t<std::atomic<std::uint64_t>::is_always_lock_free, std::uint64_t,
                                  std::uint32_t>;
  static_assert(std::atomic<Word>::is_always_lock_free);
  static constexpr std::size_t kWords = (sizeof(T) + sizeof(Word) - 1) / sizeof(Word);

  void WriteWords(const T& value, std::memory_order order) noexcept {
    std::array<Word, kWords> buffer{};  // zero the tail bytes past sizeof(T)
    std::memcpy(buffer.data(), &value, sizeof(T));
    for (std::size_t i = 0; i < kWords; ++i) words_[i].store(buffer[i], order);
  }

  // Even: stable; odd: a Store() is in progress. seq_ / 2 = completed stores. On its own cache
  // line (64 bytes: x86-64, Cortex-A55/A76) away from whatever precedes the object; the words
  // follow on the same and next lines, which every reader touches anyway.
  alignas(64) std::atomic<Word> seq_{0};
  std::array<std::atomic<Word>, kWords> words_{};
};

}  // namespace rtloop
