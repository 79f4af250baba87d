// TripleBuffer under real concurrency (label `stress`, also run under TSan): a writer publishes
// self-checking values, filled in place, as fast as it can while a reader takes them. Every value
// the reader takes must be whole and newer than the previous one, and after the writer stops the
// reader must get the last one.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "rtloop/framework/triple_buffer.h"

namespace rtloop {
namespace {

struct Frame {
  std::uint64_t seq = 0;
  std::array<std::uint64_t, 31> words{};
};

TEST(TripleBufferStressTest, ReaderTakesOnlyWholeAndNewerValues) {
  constexpr std::uint64_t kPublishes = 300'000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  TripleBuffer<Frame> buffer;
  std::atomic<bool> done{false};

  std::uint64_t taken = 0;
  std::uint64_t torn = 0;
  std::uint64_t not_newer = 0;
  std::uint64_t last = 0;
  std::thread reader([&] {
    auto check = [&] {
      const Frame& f = buffer.ReadSlot();
      ++taken;
      for (std::size_t i = 0; i < f.words.size(); ++i) {
        if (f.words[i] != f.seq + i) {
          ++torn;
          break;
        }
      }
      if (f.seq <= last) ++not_newer;
      last = f.seq;
    };
    while (!done.load(std::memory_order_acquire)) {
      if (buffer.Update()) check();
    }
    if (buffer.Update()) check();  // the value published last, if not taken yet
  });

  std::uint64_t published = 0;
  for (std::uint64_t seq = 1; seq <= kPublishes; ++seq) {
    Frame& f = buffer.WriteSlot();  // in place: every field, as the contract asks
    f.seq = seq;
    for (std::size_t i = 0; i < f.words.size(); ++i) f.words[i] = seq + i;
    buffer.Publish();
    published = seq;
    if ((seq & 0xFFF) == 0 && std::chrono::steady_clock::now() > deadline) break;
  }
  done.store(true, std::memory_order_release);
  reader.join();

  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(not_newer, 0u);
  EXPECT_EQ(last, published);
  EXPECT_GT(taken, 0u);
  EXPECT_EQ(buffer.published(), published);
  std::printf("published %llu, reader took %llu\n", static_cast<unsigned long long>(published),
              static_cast<unsigned long long>(taken));
}

// Both directions at once, as an I/O scan and a logic task use them: each thread is the writer of
// one buffer and the reader of the other, echoing what it reads.
TEST(TripleBufferStressTest, TwoBuffersInOppositeDirectionsStayConsistent) {
  constexpr std::uint64_t kRounds = 100'000;
  TripleBuffer<Frame> forward;
  TripleBuffer<Frame> back;
  std::atomic<bool> done{false};
  std::uint64_t echo_errors = 0;
  std::thread echo([&] {
    std::uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      if (!forward.Update()) continue;
      const Frame& in = forward.ReadSlot();
      if (in.seq <= last || in.words[30] != in.seq + 30) ++echo_errors;
      last = in.seq;
      back.Write(in);
    }
  });
  std::uint64_t back_errors = 0;
  std::uint64_t last_back = 0;
  for (std::uint64_t seq = 1; seq <= kRounds; ++seq) {
    Frame f;
    f.seq = seq;
    for (std::size_t i = 0; i < f.words.size(); ++i) f.words[i] = seq + i;
    forward.Write(f);
    if (back.Update()) {
      const Frame& b = back.ReadSlot();
      if (b.seq < last_back || b.seq > seq || b.words[30] != b.seq + 30) ++back_errors;
      last_back = b.seq;
    }
  }
  done.store(true, std::memory_order_release);
  echo.join();
  EXPECT_EQ(echo_errors, 0u);
  EXPECT_EQ(back_errors, 0u);
}

}  // namespace
}  // namespace rtloop
