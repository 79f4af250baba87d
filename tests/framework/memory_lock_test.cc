// Tests of ExecutorConfig::lock_scope = MemoryLockScope::kRealtime (framework/src/memory_lock.h):
// which libraries it leaves to MCL_ONFAULT, and that an RT thread takes no page fault, minor or
// major, on memory it had never touched before the first release (the heap the application
// allocated, the deep end of its own stack). Locked runs fork: mlockall stays in force for the
// whole process.
#include "memory_lock.h"

#include <alloca.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "alloc_counter.h"
#include "executor_test_util.h"
#include "gtest/gtest.h"

namespace rtloop {
namespace {

using executor_testing::OtherTask;
using executor_testing::RunInChild;
using executor_testing::TestExecutorConfig;
using std::chrono::microseconds;

TEST(MemoryLockTest, ServerOnlyLibrariesAreTheTelemetryServersOwn) {
  using internal::IsServerOnlyLibrary;
  EXPECT_TRUE(IsServerOnlyLibrary("/usr/lib/x86_64-linux-gnu/libgrpc.so.29.0.0"));
  EXPECT_TRUE(IsServerOnlyLibrary("/usr/lib/aarch64-linux-gnu/libgrpc++.so.1.51.1"));
  EXPECT_TRUE(IsServerOnlyLibrary("/usr/lib/x86_64-linux-gnu/libprotobuf.so.32.0.12"));
  EXPECT_TRUE(IsServerOnlyLibrary("/usr/lib/x86_64-linux-gnu/libabsl_hash.so.20220623.0.0"));
  EXPECT_TRUE(IsServerOnlyLibrary("/usr/lib/arm-linux-gnueabihf/libcrypto.so.3"));
  EXPECT_TRUE(IsServerOnlyLibrary("/usr/lib/x86_64-linux-gnu/libcivetweb.so.1.15.0"));
  // The RT path's own code: the executable, libc, libstdc++, libm, and whatever a Step calls.
  EXPECT_FALSE(IsServerOnlyLibrary("/usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_FALSE(IsServerOnlyLibrary("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"));
  EXPECT_FALSE(IsServerOnlyLibrary("/usr/lib/aarch64-linux-gnu/libgpiod.so.2.2.2"));
  EXPECT_FALSE(IsServerOnlyLibrary("/opt/app/bin/plc"));
  EXPECT_FALSE(
      IsServerOnlyLibrary("/opt/zlibs/libfieldbus.so"));  // "libz." is a prefix of the name
}

long FaultsOfThisThread() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt + ru.ru_majflt;
}

// Writes one byte per page of `buffer`, a few pages a cycle, and the deepest page of its stack
// that the prefault leaves out, counting this thread's page faults from the first Step on.
class PageToucher final : public PeriodicTask {
 public:
  static constexpr std::size_t kStack = std::size_t{256} * 1024;
  static constexpr std::size_t kPagesPerCycle = 16;
  PageToucher(char* buffer, std::size_t bytes) : buffer_(buffer), pages_(bytes / 4096) {}

  StepResult Step(const CycleContext& ctx) noexcept override {
    if (ctx.cycle == 0) faults_at_first_step = FaultsOfThisThread();
    if (ctx.cycle == 1) TouchDeepStack();
    for (std::size_t i = 0; i < kPagesPerCycle && next_ < pages_; ++i) buffer_[4096 * next_++] = 1;
    if (next_ < pages_) return StepResult::kContinue;
    faults_in_loop = FaultsOfThisThread() - faults_at_first_step;
    return StepResult::kStop;
  }
  long faults_at_first_step = 0;
  long faults_in_loop = -1;

 private:
  // 40 KiB above the stack's end: inside the 64 KiB that PrefaultStack() leaves untouched.
  __attribute__((noinline)) static void TouchDeepStack() noexcept {
    auto* p = static_cast<volatile char*>(alloca(kStack - std::size_t{40} * 1024));
    p[0] = 1;
  }
  char* buffer_;
  std::size_t pages_;
  std::size_t next_ = 0;
};

// In a child: runs PageToucher over 4 MiB allocated after Create() and never touched (heap, no
// mmap'd chunk once memory is locked). Exit 0 when the RT thread's page faults are zero
// (`expect_faults` false) or not (true); 1/2 when Create/Start failed, 3 otherwise.
int TouchPagesInChild(const ExecutorConfig& ec, bool expect_faults) {
  return RunInChild([&] {
    auto ex = Executor::Create(ec);
    if (!ex.ok()) {
      std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
      return 1;
    }
    constexpr std::size_t kBytes = 4u << 20;
    std::unique_ptr<char[]> buffer(new char[kBytes]);
    PageToucher task(buffer.get(), kBytes);
    TaskConfig tc = OtherTask("toucher", microseconds(200));
    tc.stack_size = PageToucher::kStack;
    if (!(*ex)->AddTask(task, tc).ok() || !(*ex)->Start().ok()) return 2;
    (*ex)->Wait();
    std::fprintf(stderr, "%ld page faults on the RT thread\n", task.faults_in_loop);
    return (task.faults_in_loop > 0) == expect_faults ? 0 : 3;
  });
}

// The regression test of issue 18: kRealtime locks pages only as they are touched (MCL_ONFAULT),
// and must still make the heap and the RT stack resident before the first release.
TEST(MemoryLockTest, RealtimeScopeLeavesNoPageFaultOnTheRtThread) {
  if (!testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "lock_memory is ignored in sanitizer builds";
  }
  ExecutorConfig ec = TestExecutorConfig();
  ec.lock_memory = true;
  ec.lock_scope = MemoryLockScope::kRealtime;
  if (const char* emulator = std::getenv("RTLOOP_TEST_EMULATED")) {  // cmake/dev.sh test --arch
    GTEST_SKIP()
        << "under " << emulator << ": kRealtime locks what /proc/self/maps lists, and "
        << "the emulator's rewrite of it has no [heap] and none of the emulator's own "
        << "memory (its translated code), whose first touches count as the thread's faults";
  }
  EXPECT_EQ(TouchPagesInChild(ec, /*expect_faults=*/false), 0)
      << "1: Create failed, 2: AddTask/Start failed, 3: page faults (stderr)";
}

// The classic scope (cyclictest -m's mlockall) keeps the same guarantee.
TEST(MemoryLockTest, AllScopeLeavesNoPageFaultOnTheRtThread) {
  if (!testing::AllocationCountingEnabled()) GTEST_SKIP() << "sanitizers";
  ExecutorConfig ec = TestExecutorConfig();
  ec.lock_memory = true;
  ec.lock_scope = MemoryLockScope::kAll;
  EXPECT_EQ(TouchPagesInChild(ec, /*expect_faults=*/false), 0);
}

// The probe itself: without locked memory the same touches do fault.
TEST(MemoryLockTest, UnlockedRunFaultsOnTheSameTouches) {
  if (!testing::AllocationCountingEnabled()) GTEST_SKIP() << "sanitizers";
  EXPECT_EQ(TouchPagesInChild(TestExecutorConfig(), /*expect_faults=*/true), 0);
}

}  // namespace
}  // namespace rtloop
