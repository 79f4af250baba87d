#include "trajectory.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace motion {
namespace {

// Acceleration-phase duration and the acceleration it reaches, for cruise velocity v.
struct AccelPhase {
  double jerk_time = 0.0;  // Tj
  double total = 0.0;      // Ta (jerk up, constant, jerk down)
};

AccelPhase AccelPhaseFor(double v, const MotionLimits& l) noexcept {
  AccelPhase p;
  if (v * l.jerk < l.acceleration * l.acceleration) {  // full acceleration never reached
    p.jerk_time = std::sqrt(v / l.jerk);
    p.total = 2.0 * p.jerk_time;
  } else {
    p.jerk_time = l.acceleration / l.jerk;
    p.total = p.jerk_time + v / l.acceleration;
  }
  return p;
}

Setpoint Integrate(const Setpoint& s, double jerk, double t) noexcept {
  Setpoint out;
  out.acceleration = s.acceleration + jerk * t;
  out.velocity = s.velocity + s.acceleration * t + jerk * t * t / 2.0;
  out.position =
      s.position + s.velocity * t + s.acceleration * t * t / 2.0 + jerk * t * t * t / 6.0;
  return out;
}

}  // namespace

rtloop::Result<SCurveMove> SCurveMove::Plan(double distance, const MotionLimits& l) {
  if (!(l.velocity > 0.0) || !(l.acceleration > 0.0) || !(l.jerk > 0.0) ||
      !std::isfinite(l.velocity + l.acceleration + l.jerk)) {
    return rtloop::InvalidArgumentError(
        "motion limits must be positive and finite (velocity, acceleration, jerk)");
  }
  if (!std::isfinite(distance)) {
    return rtloop::InvalidArgumentError("move distance must be finite");
  }
  const double d = std::abs(distance);
  const double sign = distance < 0.0 ? -1.0 : 1.0;
  // Distance covered accelerating to v and back to rest, with no cruise: v * Ta(v). It grows with
  // v, so the cruise velocity for a short move is found by bisection (set-up only).
  double v = l.velocity;
  if (v * AccelPhaseFor(v, l).total > d) {
    double lo = 0.0;
    double hi = v;
    for (int i = 0; i < 100; ++i) {
      const double mid = (lo + hi) / 2.0;
      if (mid * AccelPhaseFor(mid, l).total > d) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    v = lo;
  }
  const AccelPhase a = AccelPhaseFor(v, l);
  const double cruise = v > 0.0 ? std::max(0.0, d / v - a.total) : 0.0;
  const double jerk = sign * l.jerk;
  const double durations[7] = {a.jerk_time, a.total - 2.0 * a.jerk_time, a.jerk_time, cruise,
                               a.jerk_time, a.total - 2.0 * a.jerk_time, a.jerk_time};
  const double jerks[7] = {jerk, 0.0, -jerk, 0.0, -jerk, 0.0, jerk};

  SCurveMove move;
  Setpoint s;
  double t = 0.0;
  for (int i = 0; i < 7; ++i) {
    Segment& seg = move.segments_[static_cast<std::size_t>(i)];
    seg.start = t;
    seg.jerk = jerks[i];
    seg.state = s;
    s = Integrate(s, jerks[i], durations[i]);
    t += durations[i];
  }
  move.duration_ = t;
  move.peak_velocity_ = sign * v;
  // Round-off leaves the end a hair off rest at `distance`; the end state is exact by definition.
  move.end_ = Setpoint{distance, 0.0, 0.0};
  return move;
}

Setpoint SCurveMove::At(double t) const noexcept {
  if (t <= 0.0) return Setpoint{};
  if (t >= duration_) return end_;
  std::size_t i = segments_.size() - 1;
  while (i > 0 && segments_[i].start > t) --i;
  const Segment& seg = segments_[i];
  return Integrate(seg.state, seg.jerk, t - seg.start);
}

BackAndForth::BackAndForth(SCurveMove move, double distance,
                           std::chrono::nanoseconds dwell) noexcept
    : out_(move),
      distance_(distance),
      move_(std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(move.duration() * 1e9)))),
      dwell_(dwell),
      cycle_(2 * (move_ + dwell_)) {}

rtloop::Result<BackAndForth> BackAndForth::Plan(double distance, std::chrono::nanoseconds dwell,
                                                const MotionLimits& limits) {
  if (dwell.count() < 0) return rtloop::InvalidArgumentError("dwell must be >= 0");
  rtloop::Result<SCurveMove> move = SCurveMove::Plan(distance, limits);
  if (!move.ok()) return move.status();
  return BackAndForth(*move, distance, dwell);
}

Setpoint BackAndForth::At(std::chrono::nanoseconds t) const noexcept {
  if (t.count() < 0) return Setpoint{};
  const std::chrono::nanoseconds in_cycle = t % cycle_;
  const std::chrono::nanoseconds half = move_ + dwell_;
  const bool back = in_cycle >= half;
  const double s = static_cast<double>((back ? in_cycle - half : in_cycle).count()) * 1e-9;
  const Setpoint p = out_.At(s);
  if (!back) return p;
  return Setpoint{distance_ - p.position, -p.velocity, -p.acceleration};
}

}  // namespace motion
