// TripleBuffer<T>: hands the latest value of T from one writer thread to one reader thread. Both
// sides are wait-free (one atomic exchange each), neither ever sees a torn value, and neither
// ever waits for or retries because of the other.
//
//   struct Inputs { bool entry_eye; bool exit_eye; std::int16_t speed; };
//   rtloop::TripleBuffer<Inputs> inputs;            // shared by exactly two threads
//   // writer thread (e.g. a 1 ms I/O scan task):
//   Inputs& in = inputs.WriteSlot();                // fill every field: the slot holds an old
//   value in = ReadDevice(); inputs.Publish();
//   // reader thread (e.g. a 10 ms logic task):
//   inputs.Update();                                // takes the newest published value, if any
//   const Inputs& latest = inputs.ReadSlot();       // stable until this thread's next Update()
//
// Three slots: the writer owns one (the back slot), the reader owns one (the front slot), and the
// third (the middle) is in flight, with a "fresh" bit saying whether it holds a value the reader
// has not taken yet. Publish() swaps the back slot with the middle and sets fresh; Update() swaps
// the front slot with the middle when fresh is set. A value the reader never took is overwritten:
// this is "latest value" exchange, not a queue (use the telemetry SampleRing to keep every one).
//
// Threading contract:
//  - WriteSlot(), Publish(), Write(): one writer thread at a time.
//  - Update(), ReadSlot(), Read(): one reader thread at a time.
//  - Exactly one writer and one reader; for several readers use SeqLockValue (seqlock_value.h).
//  - Slots are plain T, owned by one side at a time; ownership moves through the exchange of
//    middle_, which is acq_rel on both sides: its release half publishes what the side did with
//    the slot it gives away (the writer's writes, the reader's reads), its acquire half makes the
//    other side's work on the slot it receives visible before it is touched. So T needs no
//    atomics and may be any nothrow-copy-assignable type (RT-safe if its copy does not allocate).
//
// Compared with SeqLockValue: the reader never retries and can never starve, and T need not be
// trivially copyable, but there is one reader only and it costs three slots of memory. Compared
// with ros2_control's realtime_tools::RealtimeBuffer (mutex + try_lock + pointer swap, the writer
// polls with sleeps) and cactus-rt's lockless::spsc::RealtimeWritableValue (wait-free writer, the
// reader CAS-loops on a double buffer), both sides here are wait-free and neither holds the other
// up; see seqlock_value.h for the longer comparison.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <type_traits>

namespace rtloop {

template <typename T>
class TripleBuffer {
  static_assert(std::is_nothrow_copy_assignable_v<T>,
                "TripleBuffer<T>::Write() copies T on the RT path: T's copy must be noexcept");

 public:
  using value_type = T;

  // Every slot holds T{}. Not RT-safe by contract (construction copies T three times).
  TripleBuffer() : TripleBuffer(T{}) {}
  explicit TripleBuffer(const T& initial) : slots_{Slot{initial}, Slot{initial}, Slot{initial}} {}

  TripleBuffer(const TripleBuffer&) = delete;
  TripleBuffer& operator=(const TripleBuffer&) = delete;

  // --- Writer side -------------------------------------------------------------------------------

  // The slot only the writer may touch until Publish(). It holds an older value (the initial one
  // or one published two or more Publish() calls ago), not the last one written: fill every field.
  // Writer thread. RT-safe.
  T& WriteSlot() noexcept { return slots_[writer_.back].value; }

  // Makes WriteSlot()'s content the latest value and gives the writer another slot. Writer thread.
  // RT-safe, wait-free: one atomic exchange.
  void Publish() noexcept {
    // release: the reader that takes this slot sees what we wrote into it.
    // acquire: the slot we get back may be the one the reader just released; its reads of it
    // happen before our next writes.
    const std::uint8_t previous = middle_.exchange(static_cast<std::uint8_t>(writer_.back | kFresh),
                                                   std::memory_order_acq_rel);
    writer_.back = static_cast<std::uint8_t>(previous & kIndexMask);
    writer_.published += 1;
  }

  // WriteSlot() = value; Publish(). Writer thread. RT-safe when T's copy assignment is (no
  // allocation), wait-free.
  void Write(const T& value) noexcept {
    WriteSlot() = value;
    Publish();
  }

  // Publish() calls so far. Writer thread only (plain counter). RT-safe.
  std::uint64_t published() const noexcept { return writer_.published; }

  // --- Reader side -------------------------------------------------------------------------------

  // Takes the newest published value if the writer published since the last Update(): true, and
  // ReadSlot() now refers to it. False: nothing new, ReadSlot() is unchanged. Reader thread.
  // RT-safe, wait-free: a relaxed load, and one atomic exchange when there is something new.
  bool Update() noexcept {
    // Only the reader clears kFresh, so once seen set it stays set until our exchange below; a
    // relaxed peek is enough to skip the exchange (and its cache-line traffic) when nothing is new.
    if ((middle_.load(std::memory_order_relaxed) & kFresh) == 0) return false;
    // acquire: see the writer's writes into the slot we take. release: our reads of the slot we
    // give back happen before the writer reuses it.
    const std::uint8_t previous = middle_.exchange(reader_.front, std::memory_order_acq_rel);
    reader_.front = static_cast<std::uint8_t>(previous & kIndexMask);
    reader_.taken += 1;
    return true;
  }

  // The value taken by the last Update() (the initial value before any). Stable until this
  // thread's next Update(). Reader thread. RT-safe.
  const T& ReadSlot() const noexcept { return slots_[reader_.front].value; }

  // Update(), then a copy of ReadSlot(). Reader thread. RT-safe when T's copy is.
  T Read() noexcept {
    Update();
    return ReadSlot();
  }

  // Values taken by Update() so far. Reader thread only (plain counter). RT-safe.
  std::uint64_t taken() const noexcept { return reader_.taken; }

 private:
  static constexpr std::uint8_t kIndexMask = 0x3;  // slot index 0..2 in the low two bits
  static constexpr std::uint8_t kFresh = 0x4;      // the middle slot holds an untaken value

  // Each slot on its own cache lines (64 bytes: x86-64, Cortex-A55/A76), so the writer filling its
  // slot does not invalidate the line the reader is reading.
  struct alignas(64) Slot {
    T value;
  };
  // Side-private state, each on its own line: touched by one thread only, never shared.
  struct alignas(64) WriterState {
    std::uint8_t back = 2;
    std::uint64_t published = 0;
  };
  struct alignas(64) ReaderState {
    std::uint8_t front = 0;
    std::uint64_t taken = 0;
  };

  std::array<Slot, 3> slots_;
  WriterState writer_;
  ReaderState reader_;
  // The one shared word: the middle slot's index | kFresh. Starts at slot 1, not fresh.
  alignas(64) std::atomic<std::uint8_t> middle_{1};
  static_assert(std::atomic<std::uint8_t>::is_always_lock_free);
};

}  // namespace rtloop
