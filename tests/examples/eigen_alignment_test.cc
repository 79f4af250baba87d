// Eigen's fixed-size types in the examples sit where the target needs them: the motion example's
// plant, controller and axis and rtloop-two-tasks' control task hold 16-byte-aligned Eigen
// members (EIGEN_MAX_STATIC_ALIGN_BYTES is 16 on amd64, arm64 and armhf), and armhf's malloc and
// plain operator new give only 8 (__STDCPP_DEFAULT_NEW_ALIGNMENT__). Every way the examples hold
// them (behind new/make_unique, in a std::vector, on the stacks of the main thread, a thread and
// an RT thread) is exercised here with Eigen's own run-time assertions on (this executable is
// built without NDEBUG: tests/examples/CMakeLists.txt), and the addresses are checked directly.
// cmake/README.md ("32-bit targets and alignment") has the audit; `cmake/dev.sh test
// --arch=armhf` with TEST_TARGETS=rtloop_example_cores_tests runs this under qemu-arm.
#include <gtest/gtest.h>
#include <pthread.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "axis.h"
#include "control_task.h"
#include "controller.h"
#include "plant.h"
#include "rtloop/framework/task_config.h"

namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

constexpr std::size_t kEigenAlign = EIGEN_MAX_STATIC_ALIGN_BYTES;

// Whether `p` is a multiple of `alignment`, read at run time through a volatile: the compiler may
// assume that any T* is aligned for T and fold a plain test to true.
bool IsAligned(const void* p, std::size_t alignment) {
  const volatile std::uintptr_t address = reinterpret_cast<std::uintptr_t>(p);
  return address % alignment == 0;
}

// One axis cycle on time at cycle k (the loop's own timeline, as MotionTask::Step() gives it).
motion::AxisSample UpdateOnTime(motion::Axis& axis, std::int64_t k) {
  const nanoseconds t = microseconds(500) * k;
  return axis.Update(t, t);
}

rtloop::CycleContext Cycle(std::uint64_t k) {
  rtloop::CycleContext ctx;
  ctx.cycle = ctx.release_index = k;
  ctx.period = std::chrono::milliseconds(1);
  ctx.release = ctx.wake = rtloop::TimePoint(std::chrono::milliseconds(k));
  return ctx;
}

TEST(EigenAlignmentTest, TheExamplesTypesNeedSixteenBytesAndEigenChecksThem) {
#ifdef EIGEN_NO_DEBUG
  ADD_FAILURE() << "built with EIGEN_NO_DEBUG (NDEBUG): Eigen's alignment assertions are off, so "
                   "this executable checks nothing of Eigen's; see tests/examples/CMakeLists.txt";
#endif
  // The audit's figures (cmake/README.md): a compiler, flag or Eigen version that changes them
  // changes which of the examples' types need more than malloc gives.
  EXPECT_EQ(kEigenAlign, 16u) << "EIGEN_MAX_STATIC_ALIGN_BYTES";
  EXPECT_EQ(alignof(motion::Vector4), kEigenAlign);
  EXPECT_EQ(alignof(motion::Matrix4), kEigenAlign);
  EXPECT_EQ(alignof(two_tasks::Matrix6), kEigenAlign);
  EXPECT_EQ(alignof(motion::Axis), kEigenAlign);
  EXPECT_EQ(alignof(motion::PlantSimulator), kEigenAlign);
  EXPECT_EQ(alignof(two_tasks::ControlTask), kEigenAlign);
  // 1x5 doubles (40 bytes) is not a multiple of 16: Eigen does not align it.
  EXPECT_EQ(alignof(motion::Controller::Gain), alignof(double));
  RecordProperty("eigen_max_static_align_bytes", static_cast<int>(kEigenAlign));
  RecordProperty("default_new_alignment", static_cast<int>(__STDCPP_DEFAULT_NEW_ALIGNMENT__));
  RecordProperty("eigen_simd", Eigen::SimdInstructionSetsInUse());
}

// The check this executable relies on is armed: a fixed-size vector constructed 8 bytes off a
// 16-byte boundary (what an armhf malloc block can be) stops the program, by Eigen's unaligned
// array assertion, or UBSan's misaligned-address check in the sanitizer build.
TEST(EigenAlignmentDeathTest, AVectorOffTheSixteenByteBoundaryStopsTheProgram) {
  EXPECT_DEATH(
      {
        alignas(16) static unsigned char storage[sizeof(motion::Vector4) + 8];
        auto* v = ::new (static_cast<void*>(storage + 8)) motion::Vector4();
        v->setZero();
      },
      "TopicUnalignedArrayAssert|misaligned address");
}

// Axis::Create() returns the axis behind new: C++17's aligned new (alignof(Axis) = 16 > armhf's
// default 8). Blocks of 24 bytes in between shift where malloc puts the next block, so a plain
// allocation would land 8 bytes off on armhf about every other time.
TEST(EigenAlignmentTest, AxesBehindNewAreAlignedAndRunWithEigensChecks) {
  std::vector<std::unique_ptr<motion::Axis>> axes;
  std::vector<std::unique_ptr<char[]>> shifts;
  std::size_t plain_off_boundary = 0;  // plain new of the same size, off the 16-byte boundary
  for (int i = 0; i < 8; ++i) {
    shifts.push_back(std::make_unique<char[]>(24));
    const auto plain = std::make_unique<char[]>(sizeof(motion::Axis));
    if (!IsAligned(plain.get(), kEigenAlign)) ++plain_off_boundary;
    rtloop::Result<std::unique_ptr<motion::Axis>> axis = motion::Axis::Create({});
    ASSERT_TRUE(axis.ok()) << axis.status().message();
    ASSERT_TRUE(IsAligned(axis->get(), alignof(motion::Axis))) << "axis " << i;
    ASSERT_TRUE(IsAligned(&(*axis)->plant().state(), kEigenAlign)) << "axis " << i;
    axes.push_back(std::move(*axis));
  }
  RecordProperty("plain_new_off_16_byte_boundary_of_8", static_cast<int>(plain_off_boundary));
  for (std::int64_t k = 0; k < 2000; ++k) {
    for (auto& axis : axes) UpdateOnTime(*axis, k);
  }
  // The same computation everywhere: identical results, and the loop tracked (finite, small).
  const motion::TrackingStats& first = axes.front()->tracking();
  EXPECT_EQ(first.count(), 2000u);
  EXPECT_TRUE(std::isfinite(first.rms()));
  EXPECT_LT(first.max_abs(), 1e-3);  // rad: the on-time loop follows the S-curve closely
  for (const auto& axis : axes) {
    EXPECT_EQ(axis->tracking().rms(), first.rms());
    EXPECT_EQ(axis->plant().state(), axes.front()->plant().state());
  }
}

// A std::vector's storage (std::allocator: aligned new for over-aligned types) and make_unique.
TEST(EigenAlignmentTest, PlantsInAVectorAndBehindMakeUniqueAreAligned) {
  const motion::PlantParams params;
  std::vector<motion::PlantSimulator> plants;
  for (int i = 0; i < 5; ++i) {  // growing: each reallocation moves every element
    plants.emplace_back(params);
    for (const motion::PlantSimulator& p : plants) ASSERT_TRUE(IsAligned(&p, kEigenAlign));
  }
  std::vector<motion::Discrete> steps(
      3, motion::Discretize(motion::ContinuousModel(params), microseconds(500)));
  for (const motion::Discrete& d : steps) EXPECT_TRUE(IsAligned(&d.ad, kEigenAlign));
  const auto single = std::make_unique<motion::PlantSimulator>(params);
  ASSERT_TRUE(IsAligned(single.get(), kEigenAlign));
  single->SetTorque(0.1);
  single->AdvanceTo(microseconds(1234));
  for (motion::PlantSimulator& p : plants) {
    p.SetTorque(0.1);
    p.AdvanceTo(microseconds(1234));
    EXPECT_EQ(p.state(), single->state());
  }
  EXPECT_GT(single->state()(motion::kMotorSpeed), 0.0);
}

// Fixed-size locals below frames of other sizes: the compiler must realign where the ABI's stack
// alignment (8 bytes on armhf) is less than the type's. Returns how many were off the boundary.
template <std::size_t kDepth>
int MisalignedLocals(const motion::Discrete& d) {
  volatile unsigned char pad[kDepth * 12 + 4] = {};  // shifts the frames below
  motion::Vector4 x = motion::Vector4::Constant(static_cast<double>(pad[0]) + 1.0);
  x = d.ad * x + d.bd * 0.5;  // Eigen arithmetic on the local, with its checks
  int off = IsAligned(&x, kEigenAlign) ? 0 : 1;
  if constexpr (kDepth > 0) off += MisalignedLocals<kDepth - 1>(d);
  return off + (std::isfinite(x(0)) ? 0 : 1);
}

int MisalignedLocalsAnywhere() {
  const motion::Discrete d =
      motion::Discretize(motion::ContinuousModel(motion::PlantParams{}), microseconds(500));
  two_tasks::ControlTask control;  // as rtloop-two-tasks' main() holds it
  int off = IsAligned(&control, kEigenAlign) ? 0 : 1;
  if (!control.OnStart().ok()) ++off;
  for (std::uint64_t k = 0; k < 100; ++k) control.Step(Cycle(k));
  return off + MisalignedLocals<5>(d);
}

TEST(EigenAlignmentTest, FixedSizeLocalsAreAlignedOnEveryKindOfStack) {
  EXPECT_EQ(MisalignedLocalsAnywhere(), 0) << "the main thread";
  int on_thread = -1;
  std::thread([&] { on_thread = MisalignedLocalsAnywhere(); }).join();
  EXPECT_EQ(on_thread, 0) << "a std::thread";
  // A stack of an explicit size, as the executor gives a task's RT thread (TaskConfig::stack_size:
  // its default, 256 KiB; glibc's minimum is 128 KiB on arm64).
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, rtloop::TaskConfig{}.stack_size), 0);
  int on_pthread = -1;
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* out) -> void* {
                  *static_cast<int*>(out) = MisalignedLocalsAnywhere();
                  return nullptr;
                },
                &on_pthread),
            0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  EXPECT_EQ(on_pthread, 0) << "a pthread with an explicit stack size";
}

// rtloop-two-tasks' control task behind make_unique and in a vector, run as the executor runs it.
TEST(EigenAlignmentTest, ControlTasksAreAlignedWhereverTheyAreHeld) {
  std::vector<std::unique_ptr<char[]>> shifts;
  std::vector<std::unique_ptr<two_tasks::ControlTask>> tasks;
  for (int i = 0; i < 6; ++i) {
    shifts.push_back(std::make_unique<char[]>(24));
    tasks.push_back(std::make_unique<two_tasks::ControlTask>());
    ASSERT_TRUE(IsAligned(tasks.back().get(), kEigenAlign)) << "task " << i;
    ASSERT_TRUE(tasks.back()->OnStart().ok());
  }
  for (std::uint64_t k = 0; k < 1000; ++k) {
    for (auto& t : tasks) ASSERT_EQ(t->Step(Cycle(k)), rtloop::StepResult::kContinue);
  }
  const double y = tasks.front()->output();
  EXPECT_TRUE(std::isfinite(y));
  EXPECT_EQ(y, tasks.front()->state()(0));
  for (const auto& t : tasks) EXPECT_EQ(t->state(), tasks.front()->state());
}

}  // namespace
