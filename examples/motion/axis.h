// One servo axis in a control loop: the simulated plant, the trajectory and the controller, and
// the tracking error they produce; and MotionTask, the rtloop task that runs it every period.
//
//   rtloop::Result<std::unique_ptr<motion::Axis>> axis = motion::Axis::Create({});   // set-up
//   motion::MotionTask task(**axis, /*shadow=*/nullptr, /*cycles=*/20'000);
//   runtime->AddTask(task, task_config);             // 2 kHz, SCHED_FIFO, pinned
//   ... after the run:
//   std::printf("RMS %.3f mrad\n", (*axis)->tracking().rms() * 1e3);
//
// What one Update() does, and how wake-up latency turns into tracking error:
//   1. the plant moves on to W_k (the time the loop really woke) under the torque of the previous
//      cycle: a late wake-up holds that torque longer than one period;
//   2. the controller samples the state at W_k and compares it with the setpoint for a time that
//      AxisConfig::setpoint_at chooses:
//        kWake     the sample's own time W_k (the timestamped loop: the default), or
//        kRelease  the release time E_k, as a loop does that counts cycles and assumes each one
//                  runs exactly on time: a late sample then looks like the axis is ahead by
//                  velocity x latency, and the loop pushes it back by that much;
//   3. the tracking error is measured where it matters: setpoint at W_k minus load angle at W_k.
// MotionTask can run a second, "shadow" axis beside the first on the same wake-up times, so one
// run shows what the same latency costs each kind of loop (README.md has measured numbers).
//
// Threading: an Axis and its MotionTask belong to the task's RT thread while it runs; status()
// (a SeqLockValue) may be read from any thread, tracking() after the run. Create() is not
// RT-safe; Update() and Step() are RT-safe (fixed-size Eigen arithmetic, no allocation).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>

#include "controller.h"
#include "plant.h"
#include "rtloop/framework/periodic_task.h"
#include "rtloop/framework/seqlock_value.h"
#include "rtloop/framework/status.h"
#include "trajectory.h"

namespace motion {

// Which time the controller evaluates the setpoint at (see above).
enum class SetpointAt {
  kWake,     // W_k, when the state was sampled
  kRelease,  // E_k, when the cycle was due
};

// "wake", "release".
const char* SetpointAtName(SetpointAt at) noexcept;

struct AxisConfig {
  std::chrono::nanoseconds period{std::chrono::microseconds(500)};  // 2 kHz position loop
  SetpointAt setpoint_at = SetpointAt::kWake;
  PlantParams plant;
  MotionLimits limits;
  double distance_rad = 2.0 * std::numbers::pi;  // one load revolution out, then back
  std::chrono::nanoseconds dwell{std::chrono::milliseconds(200)};
  LqrWeights weights;
};

// RMS and maximum of the tracking error. RT-safe.
class TrackingStats {
 public:
  void Add(double error) noexcept {
    ++count_;
    sum_sq_ += error * error;
    if (std::abs(error) > max_abs_) max_abs_ = std::abs(error);
  }
  std::uint64_t count() const noexcept { return count_; }
  double rms() const noexcept {
    return count_ ? std::sqrt(sum_sq_ / static_cast<double>(count_)) : 0.0;
  }
  double max_abs() const noexcept { return max_abs_; }

 private:
  std::uint64_t count_ = 0;
  double sum_sq_ = 0.0;
  double max_abs_ = 0.0;
};

// One control cycle's signals.
struct AxisSample {
  double setpoint_rad = 0.0;  // where the load should be at the wake time
  double load_rad = 0.0;
  double motor_rad = 0.0;
  double torque_nm = 0.0;
  double error_rad = 0.0;  // setpoint - load at the wake time
};

class Axis {
 public:
  // Discretises the plant, designs the controller, plans the profile. Errors name what is wrong.
  static rtloop::Result<std::unique_ptr<Axis>> Create(const AxisConfig& config);

  // One control cycle: `release` = E_k and `wake` = W_k, both since the loop's first release.
  // RT-safe.
  AxisSample Update(std::chrono::nanoseconds release, std::chrono::nanoseconds wake) noexcept;

  const AxisConfig& config() const noexcept { return config_; }
  const TrackingStats& tracking() const noexcept { return tracking_; }
  const Controller& controller() const noexcept { return controller_; }
  const BackAndForth& profile() const noexcept { return profile_; }
  const PlantSimulator& plant() const noexcept { return plant_; }

 private:
  Axis(const AxisConfig& config, Controller controller, BackAndForth profile);
  AxisConfig config_;
  PlantSimulator plant_;
  Controller controller_;
  BackAndForth profile_;
  TrackingStats tracking_;
};

// What the motion task publishes every cycle for non-RT readers (a progress line, an HMI).
struct AxisStatus {
  std::uint64_t cycle = 0;
  AxisSample sample;
  double rms_error_rad = 0.0;
  double max_error_rad = 0.0;
  double shadow_rms_error_rad = 0.0;  // the shadow axis, if any
  double shadow_max_error_rad = 0.0;
};

// The rtloop task: one Axis::Update() per release, `cycles` times (0: until stopped). `shadow`
// (optional, may be nullptr) is updated with the same times, for comparison.
class MotionTask final : public rtloop::PeriodicTask {
 public:
  MotionTask(Axis& axis, Axis* shadow, std::uint64_t cycles) noexcept
      : axis_(axis), shadow_(shadow), cycles_(cycles) {}

  rtloop::StepResult Step(const rtloop::CycleContext& ctx) noexcept override {
    if (ctx.cycle == 0) start_ = ctx.release;          // t = 0 of the trajectory and the plant
    const auto release = ctx.release - start_;         // E_k: when this cycle was due
    const auto wake = ctx.wake - start_;               // W_k: when it really ran
    const AxisSample s = axis_.Update(release, wake);  // sense, control, actuate
    if (shadow_ != nullptr) shadow_->Update(release, wake);
    Publish(ctx.cycle, s);  // for non-RT readers: never blocks
    const bool more = cycles_ == 0 || ctx.cycle + 1 < cycles_;
    return more ? rtloop::StepResult::kContinue : rtloop::StepResult::kStop;
  }

  // Any thread (Load() retries: for non-RT readers).
  AxisStatus status() const noexcept { return status_.Load(); }

 private:
  void Publish(std::uint64_t cycle, const AxisSample& s) noexcept {
    AxisStatus st{cycle, s, axis_.tracking().rms(), axis_.tracking().max_abs(), 0.0, 0.0};
    if (shadow_ != nullptr) {
      st.shadow_rms_error_rad = shadow_->tracking().rms();
      st.shadow_max_error_rad = shadow_->tracking().max_abs();
    }
    status_.Store(st);
  }

  Axis& axis_;
  Axis* shadow_;
  std::uint64_t cycles_;
  rtloop::TimePoint start_;
  rtloop::SeqLockValue<AxisStatus> status_;  // writer: this task; readers: anyone
};

}  // namespace motion
