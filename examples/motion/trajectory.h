// A jerk-limited ("S-curve", seven-segment) point-to-point move, and the demo's repeating
// profile: out by `distance`, dwell, back, dwell.
//
//   motion::MotionLimits limits{.velocity = 20, .acceleration = 400, .jerk = 20000};
//   rtloop::Result<motion::SCurveMove> move = motion::SCurveMove::Plan(6.283, limits);  // set-up
//   motion::Setpoint s = move->At(0.1);         // RT-safe: position, velocity, acceleration
//
// Segments: jerk +j, 0, -j (accelerate), cruise, -j, 0, +j (decelerate), symmetric. Plan() picks
// the highest cruise velocity <= the limit that covers the distance (a short move never reaches
// full speed, and maybe not full acceleration either). Limited jerk keeps the acceleration, and so
// the feed-forward torque, free of steps that would ring the coupling's resonance.
//
// Threading: immutable values after Plan(); At() from any thread. Plan() is not RT-safe (it may
// iterate); At() is RT-safe (at most 7 segments, closed-form polynomials).
#pragma once

#include <array>
#include <chrono>

#include "rtloop/framework/status.h"

namespace motion {

struct MotionLimits {
  double velocity = 20.0;       // rad/s, > 0
  double acceleration = 400.0;  // rad/s^2, > 0
  double jerk = 20'000.0;       // rad/s^3, > 0
};

struct Setpoint {
  double position = 0.0;      // rad
  double velocity = 0.0;      // rad/s
  double acceleration = 0.0;  // rad/s^2
};

class SCurveMove {
 public:
  // A rest-to-rest move over `distance` (may be negative) from position 0. InvalidArgument for a
  // limit <= 0 or a non-finite distance.
  static rtloop::Result<SCurveMove> Plan(double distance, const MotionLimits& limits);

  // The setpoint t seconds after the start (clamped to [0, duration()]). RT-safe.
  Setpoint At(double t) const noexcept;
  double duration() const noexcept { return duration_; }
  double peak_velocity() const noexcept { return peak_velocity_; }

 private:
  SCurveMove() = default;
  struct Segment {
    double start = 0.0;  // s from the move's start
    double jerk = 0.0;
    Setpoint state;  // at `start`
  };
  std::array<Segment, 7> segments_{};
  double duration_ = 0.0;
  double peak_velocity_ = 0.0;
  Setpoint end_;
};

// Out and back for ever: [move +distance][dwell][move -distance][dwell], repeated.
class BackAndForth {
 public:
  static rtloop::Result<BackAndForth> Plan(double distance, std::chrono::nanoseconds dwell,
                                           const MotionLimits& limits);
  // The setpoint at time t since the start. RT-safe.
  Setpoint At(std::chrono::nanoseconds t) const noexcept;
  // One out-and-back cycle.
  std::chrono::nanoseconds cycle() const noexcept { return cycle_; }
  double peak_velocity() const noexcept { return out_.peak_velocity(); }
  double distance() const noexcept { return distance_; }

 private:
  BackAndForth(SCurveMove move, double distance, std::chrono::nanoseconds dwell) noexcept;
  SCurveMove out_;
  double distance_;
  std::chrono::nanoseconds move_;
  std::chrono::nanoseconds dwell_;
  std::chrono::nanoseconds cycle_;
};

}  // namespace motion
