// SeqLockValue under real concurrency (label `stress`, also run under TSan): one writer stores
// self-checking values as fast as it can while readers copy them with Load() and TryLoad(). Every
// copy a reader accepts must be whole (no word from another Store), and each reader's versions
// must never go backwards.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "rtloop/framework/seqlock_value.h"

namespace rtloop {
namespace {

// 32 words: long enough that a reader's copy often overlaps a Store().
struct Checked {
  std::uint64_t seq = 0;
  std::array<std::uint64_t, 30> words{};
  std::uint64_t check = 0;
};

Checked Make(std::uint64_t seq) {
  Checked c;
  c.seq = seq;
  std::uint64_t sum = seq;
  for (std::size_t i = 0; i < c.words.size(); ++i) {
    c.words[i] = seq * 0x9E3779B97F4A7C15ULL + i;
    sum ^= c.words[i];
  }
  c.check = sum;
  return c;
}

bool Whole(const Checked& c) {
  std::uint64_t sum = c.seq;
  for (std::size_t i = 0; i < c.words.size(); ++i) {
    if (c.words[i] != c.seq * 0x9E3779B97F4A7C15ULL + i) return false;
    sum ^= c.words[i];
  }
  return sum == c.check;
}

struct ReaderResult {
  std::uint64_t accepted = 0;
  std::uint64_t rejected = 0;  // TryLoad() collisions
  std::uint64_t torn = 0;
  std::uint64_t backwards = 0;
  std::uint64_t last = 0;
};

TEST(SeqLockValueStressTest, ReadersNeverAcceptATornOrOlderValue) {
  constexpr std::uint64_t kStores = 200'000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  SeqLockValue<Checked> value(Make(0));
  std::atomic<bool> done{false};

  std::vector<ReaderResult> results(3);
  std::vector<std::thread> readers;
  for (std::size_t r = 0; r < results.size(); ++r) {
    readers.emplace_back([&, r] {
      ReaderResult& out = results[r];
      const bool bounded = r == 0;  // reader 0 reads like an RT task: single attempts only
      auto take = [&](const Checked& c) {
        ++out.accepted;
        if (!Whole(c)) ++out.torn;
        if (c.seq < out.last) ++out.backwards;
        out.last = c.seq;
      };
      while (!done.load(std::memory_order_acquire)) {
        if (bounded) {
          Checked c;
          if (value.TryLoad(c)) {
            take(c);
          } else {
            ++out.rejected;
          }
        } else {
          take(value.Load());
        }
      }
      take(value.Load());  // after the writer finished: must be the last value
    });
  }

  std::uint64_t stored = 0;
  for (std::uint64_t seq = 1; seq <= kStores; ++seq) {
    value.Store(Make(seq));
    stored = seq;
    if ((seq & 0xFFF) == 0 && std::chrono::steady_clock::now() > deadline) break;  // slow TSan VM
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();

  EXPECT_EQ(value.version(), stored);
  for (std::size_t r = 0; r < results.size(); ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(results[r].torn, 0u);
    EXPECT_EQ(results[r].backwards, 0u);
    EXPECT_EQ(results[r].last, stored);
    EXPECT_GT(results[r].accepted, 0u);
  }
  std::printf(
      "stored %llu; reader 0 accepted %llu, rejected %llu; readers 1-2 accepted %llu, %llu\n",
      static_cast<unsigned long long>(stored), static_cast<unsigned long long>(results[0].accepted),
      static_cast<unsigned long long>(results[0].rejected),
      static_cast<unsigned long long>(results[1].accepted),
      static_cast<unsigned long long>(results[2].accepted));
}

}  // namespace
}  // namespace rtloop
