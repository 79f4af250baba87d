// The motion example's core: the plant's exact discretisation, the S-curve, the LQR design, and
// the axis in a simulated loop whose wake-up times follow the executor's kSkip rule, so latency
// can be injected deterministically and its cost compared A/B (no real time involved).
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <chrono>
#include <cmath>
#include <memory>

#include "alloc_counter.h"
#include "axis.h"
#include "controller.h"
#include "plant.h"
#include "trajectory.h"

namespace motion {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// --- plant --------------------------------------------------------------------------------------

TEST(PlantTest, ManySmallAdvancesEqualOneLargeOne) {
  PlantSimulator a{PlantParams{}};
  PlantSimulator b{PlantParams{}};
  a.SetTorque(0.3);
  b.SetTorque(0.3);
  for (int us = 1; us <= 3000; ++us) a.AdvanceTo(microseconds(us));
  b.AdvanceTo(microseconds(3000));
  EXPECT_EQ(a.now(), b.now());
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(a.state()(i), b.state()(i), 1e-9 * (1 + std::abs(b.state()(i))));
}

TEST(PlantTest, ZeroOrderHoldMatchesTheTableForAnyLength) {
  const PlantParams p;
  const Discrete d = Discretize(ContinuousModel(p), microseconds(777));
  PlantSimulator sim(p);
  Vector4 x0;
  x0 << 0.1, -2.0, 0.05, 1.0;
  sim.set_state(x0);
  sim.SetTorque(-0.5);
  sim.AdvanceTo(microseconds(777));
  const Vector4 expect = d.ad * x0 + d.bd * -0.5;
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(sim.state()(i), expect(i), 1e-9 * (1 + std::abs(expect(i))));
}

TEST(PlantTest, ConstantTorqueAcceleratesBothMassesTogether) {
  PlantParams p;
  p.motor_friction = p.load_friction = 0.0;
  PlantSimulator sim(p);
  sim.SetTorque(0.48);  // (Jm + Jl) = 4.8e-4: 1000 rad/s^2 for the rigid body
  sim.AdvanceTo(milliseconds(100));
  // θ = a t² / 2 = 5 rad for the centre of mass; the coupling's twist is tiny (Jl a / k = 6 mrad)
  // and its ringing is damped.
  const double centre =
      (p.motor_inertia * sim.state()(kMotorAngle) + p.load_inertia * sim.state()(kLoadAngle)) /
      (p.motor_inertia + p.load_inertia);
  EXPECT_NEAR(centre, 5.0, 1e-3);
  EXPECT_NEAR(sim.state()(kMotorAngle) - sim.state()(kLoadAngle), 0.006, 0.003);
}

TEST(PlantTest, TorqueIsClampedAndTimeNeverGoesBack) {
  PlantSimulator sim{PlantParams{}};
  sim.SetTorque(100.0);
  EXPECT_EQ(sim.torque(), 2.0);
  sim.SetTorque(-100.0);
  EXPECT_EQ(sim.torque(), -2.0);
  sim.AdvanceTo(milliseconds(5));
  const Vector4 x = sim.state();
  sim.AdvanceTo(milliseconds(4));
  EXPECT_EQ(sim.now(), milliseconds(5));
  EXPECT_EQ(sim.state(), x);
}

TEST(PlantTest, ResonanceIsTheOscillatoryEigenvalue) {
  const PlantParams p;
  const Eigen::EigenSolver<Matrix4> es(ContinuousModel(p).a);
  double max_imag = 0.0;
  for (int i = 0; i < 4; ++i) max_imag = std::max(max_imag, es.eigenvalues()(i).imag());
  EXPECT_NEAR(max_imag, p.resonance_rad_per_s(), 0.01 * p.resonance_rad_per_s());
}

// --- trajectory ---------------------------------------------------------------------------------

TEST(SCurveTest, RespectsTheLimitsAndEndsAtRestAtTheDistance) {
  const MotionLimits l{20.0, 400.0, 20'000.0};
  rtloop::Result<SCurveMove> m = SCurveMove::Plan(6.0, l);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Setpoint prev = m->At(0.0);
  const double dt = 1e-5;
  for (double t = dt; t <= m->duration() + 0.01; t += dt) {
    const Setpoint s = m->At(t);
    EXPECT_LE(std::abs(s.velocity), l.velocity * (1 + 1e-9));
    EXPECT_LE(std::abs(s.acceleration), l.acceleration * (1 + 1e-9));
    EXPECT_LE(std::abs(s.acceleration - prev.acceleration), l.jerk * dt * 1.001 + 1e-9);
    EXPECT_NEAR(s.position - prev.position, (s.velocity + prev.velocity) / 2 * dt, 1e-6);
    prev = s;
  }
  const Setpoint end = m->At(m->duration());
  EXPECT_NEAR(end.position, 6.0, 1e-9);
  EXPECT_EQ(end.velocity, 0.0);
  EXPECT_NEAR(m->At(m->duration() - 1e-9).position, 6.0, 1e-6);  // continuous into the end
  EXPECT_NEAR(m->peak_velocity(), 20.0, 1e-9);
}

TEST(SCurveTest, ShortMovesNeverReachFullSpeedAndNegativeOnesMirror) {
  const MotionLimits l{20.0, 400.0, 20'000.0};
  rtloop::Result<SCurveMove> short_move = SCurveMove::Plan(0.1, l);
  ASSERT_TRUE(short_move.ok());
  EXPECT_LT(short_move->peak_velocity(), 20.0);
  EXPECT_NEAR(short_move->At(short_move->duration() * 0.999).position, 0.1, 1e-4);
  rtloop::Result<SCurveMove> back = SCurveMove::Plan(-0.1, l);
  ASSERT_TRUE(back.ok());
  EXPECT_NEAR(back->At(0.02).position, -short_move->At(0.02).position, 1e-12);
}

TEST(SCurveTest, BadLimitsAreRefused) {
  EXPECT_FALSE(SCurveMove::Plan(1.0, MotionLimits{0.0, 1.0, 1.0}).ok());
  EXPECT_FALSE(SCurveMove::Plan(1.0, MotionLimits{1.0, -1.0, 1.0}).ok());
  EXPECT_FALSE(SCurveMove::Plan(NAN, MotionLimits{}).ok());
  EXPECT_FALSE(BackAndForth::Plan(1.0, milliseconds(-1), MotionLimits{}).ok());
}

TEST(BackAndForthTest, GoesOutAndBackAndRepeats) {
  rtloop::Result<BackAndForth> p = BackAndForth::Plan(3.0, milliseconds(100), MotionLimits{});
  ASSERT_TRUE(p.ok());
  const nanoseconds half = p->cycle() / 2;
  EXPECT_NEAR(p->At(half - milliseconds(50)).position, 3.0, 1e-9);        // dwelling out
  EXPECT_NEAR(p->At(p->cycle() - milliseconds(50)).position, 0.0, 1e-9);  // dwelling home
  EXPECT_LT(p->At(half + milliseconds(50)).velocity, 0.0);                // on the way back
  for (nanoseconds t :
       {nanoseconds(milliseconds(10)), nanoseconds(milliseconds(300)), half + milliseconds(7)}) {
    EXPECT_NEAR(p->At(t).position, p->At(t + 3 * p->cycle()).position, 1e-9);
  }
}

// --- controller and axis ------------------------------------------------------------------------

TEST(ControllerTest, DesignIsStableAndRefusesBadInput) {
  rtloop::Result<Controller> c = Controller::Design(PlantParams{}, microseconds(500), LqrWeights{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_LT(c->spectral_radius(), 1.0);
  EXPECT_GT(c->gain()(kLoadAngle), 0.0);
  EXPECT_FALSE(Controller::Design(PlantParams{}, nanoseconds(0), LqrWeights{}).ok());
  LqrWeights bad;
  bad.torque_nm = 0.0;
  EXPECT_FALSE(Controller::Design(PlantParams{}, microseconds(500), bad).ok());
}

TEST(AxisTest, BadConfigurationIsRefusedWithAReason) {
  AxisConfig c;
  c.period = nanoseconds(0);
  rtloop::Result<std::unique_ptr<Axis>> a = Axis::Create(c);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("period"), std::string::npos);
  c = AxisConfig{};
  c.plant.stiffness = -1.0;
  EXPECT_FALSE(Axis::Create(c).ok());
}

// A loop with the executor's kSkip rule: cycle n wakes `latency(n)` after its release; the next
// release is the first one on the grid after this cycle ends (1 µs of work).
struct LoopResult {
  double rms_mrad;
  double max_mrad;
  int skipped;
};

template <typename LatencyFn>
LoopResult RunLoop(Axis& axis, nanoseconds duration, LatencyFn latency) {
  const std::int64_t t = axis.config().period.count();
  std::int64_t k = 0;
  int skipped = 0;
  for (int n = 0; k * t < duration.count(); ++n) {
    const nanoseconds release(k * t);
    const nanoseconds wake = release + latency(n);
    axis.Update(release, wake);
    const std::int64_t done = (wake + microseconds(1)).count();
    ++k;
    while (k * t < done) {
      ++k;
      ++skipped;
    }
  }
  return {axis.tracking().rms() * 1e3, axis.tracking().max_abs() * 1e3, skipped};
}

std::unique_ptr<Axis> MakeAxis(SetpointAt at) {
  AxisConfig c;
  c.setpoint_at = at;
  rtloop::Result<std::unique_ptr<Axis>> a = Axis::Create(c);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(*a) : nullptr;
}

TEST(AxisTest, OnTimeLoopTracksTheProfileClosely) {
  std::unique_ptr<Axis> axis = MakeAxis(SetpointAt::kWake);
  ASSERT_NE(axis, nullptr);
  const LoopResult r = RunLoop(*axis, milliseconds(3000), [](int) { return nanoseconds(0); });
  // 20 rad/s peak: a 0.5 mrad bound is ~25 µs of travel at full speed.
  EXPECT_LT(r.max_mrad, 0.5);
  EXPECT_LT(r.rms_mrad, 0.1);
  EXPECT_EQ(axis->tracking().count(), 6000u);
  EXPECT_EQ(axis->plant().clamped_advances(), 0u);
}

TEST(AxisTest, ConstantLatencyCostsVelocityTimesLatencyOnlyWhenTheSetpointIgnoresIt) {
  std::unique_ptr<Axis> on_time = MakeAxis(SetpointAt::kRelease);
  std::unique_ptr<Axis> naive = MakeAxis(SetpointAt::kRelease);
  std::unique_ptr<Axis> stamped = MakeAxis(SetpointAt::kWake);
  ASSERT_TRUE(on_time && naive && stamped);
  const auto late = [](int) { return microseconds(100); };
  const LoopResult base = RunLoop(*on_time, milliseconds(3000), [](int) { return nanoseconds(0); });
  const LoopResult n = RunLoop(*naive, milliseconds(3000), late);
  const LoopResult s = RunLoop(*stamped, milliseconds(3000), late);
  // 100 µs at 20 rad/s is 2 mrad of lag for the loop that assumes it ran on time.
  EXPECT_GT(n.max_mrad, base.max_mrad + 1.5);
  EXPECT_LT(n.max_mrad, base.max_mrad + 2.5);
  // The timestamped loop just runs 100 µs later on the same profile: no extra error.
  EXPECT_NEAR(s.max_mrad, base.max_mrad, 0.05);
}

TEST(AxisTest, StallsSkipReleasesAndCostMoreWhenTheSetpointIgnoresTheWakeTime) {
  std::unique_ptr<Axis> naive = MakeAxis(SetpointAt::kRelease);
  std::unique_ptr<Axis> stamped = MakeAxis(SetpointAt::kWake);
  ASSERT_TRUE(naive && stamped);
  // A 2 ms stall every 2000 cycles, 20 µs otherwise: a VM's or an unisolated core's profile.
  const auto stalls = [](int n) {
    return n % 2000 == 1999 ? microseconds(2000) : microseconds(20);
  };
  const LoopResult n = RunLoop(*naive, milliseconds(6000), stalls);
  const LoopResult s = RunLoop(*stamped, milliseconds(6000), stalls);
  EXPECT_GT(n.skipped, 0);
  EXPECT_EQ(n.skipped, s.skipped);
  EXPECT_GT(n.max_mrad, 2.0 * s.max_mrad);
  EXPECT_GT(n.rms_mrad, s.rms_mrad);
}

TEST(AxisTest, UpdateAndTheTaskStepDoNotAllocate) {
  if (!rtloop::testing::AllocationCountingEnabled()) {
    GTEST_SKIP() << "allocation counting is compiled out";
  }
  std::unique_ptr<Axis> axis = MakeAxis(SetpointAt::kWake);
  std::unique_ptr<Axis> shadow = MakeAxis(SetpointAt::kRelease);
  ASSERT_TRUE(axis && shadow);
  MotionTask task(*axis, shadow.get(), 0);
  rtloop::CycleContext ctx;
  ctx.period = microseconds(500);
  auto step = [&](std::uint64_t k) {
    ctx.cycle = ctx.release_index = k;
    ctx.release = rtloop::TimePoint(nanoseconds(static_cast<std::int64_t>(k) * 500'000));
    ctx.wake = ctx.release + microseconds(static_cast<std::int64_t>(k % 7) * 10);
    return task.Step(ctx);
  };
  for (std::uint64_t k = 0; k < 100; ++k) step(k);
  rtloop::testing::AllocationCounter counter;
  for (std::uint64_t k = 100; k < 10'100; ++k) ASSERT_EQ(step(k), rtloop::StepResult::kContinue);
  EXPECT_EQ(counter.Allocations(), 0u);
  EXPECT_EQ(counter.Deallocations(), 0u);
  const AxisStatus st = task.status();
  EXPECT_EQ(st.cycle, 10'099u);
  EXPECT_GT(st.shadow_max_error_rad, st.max_error_rad);  // the shadow ignores the 0..60 µs latency
}

TEST(MotionTaskTest, StopsAfterTheGivenCycles) {
  std::unique_ptr<Axis> axis = MakeAxis(SetpointAt::kWake);
  ASSERT_NE(axis, nullptr);
  MotionTask task(*axis, nullptr, 3);
  rtloop::CycleContext ctx;
  for (std::uint64_t k = 0; k < 3; ++k) {
    ctx.cycle = k;
    ctx.release = ctx.wake = rtloop::TimePoint(microseconds(500 * static_cast<std::int64_t>(k)));
    EXPECT_EQ(task.Step(ctx), k < 2 ? rtloop::StepResult::kContinue : rtloop::StepResult::kStop);
  }
  EXPECT_EQ(task.status().cycle, 2u);
}

}  // namespace
}  // namespace motion
