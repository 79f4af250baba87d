#include "axis.h"

#include <string>
#include <utility>

namespace motion {

const char* SetpointAtName(SetpointAt at) noexcept {
  return at == SetpointAt::kRelease ? "release" : "wake";
}

rtloop::Result<std::unique_ptr<Axis>> Axis::Create(const AxisConfig& config) {
  if (config.period.count() <= 0) {
    return rtloop::InvalidArgumentError("motion period must be > 0, e.g. 500 us for 2 kHz");
  }
  const PlantParams& p = config.plant;
  for (double v : {p.motor_inertia, p.load_inertia, p.stiffness, p.torque_limit}) {
    if (!(v > 0.0)) {
      return rtloop::InvalidArgumentError("plant inertias, stiffness and torque limit must be > 0");
    }
  }
  if (p.damping < 0.0 || p.motor_friction < 0.0 || p.load_friction < 0.0) {
    return rtloop::InvalidArgumentError("plant damping and friction must be >= 0");
  }
  rtloop::Result<Controller> controller = Controller::Design(p, config.period, config.weights);
  if (!controller.ok()) return controller.status();
  rtloop::Result<BackAndForth> profile =
      BackAndForth::Plan(config.distance_rad, config.dwell, config.limits);
  if (!profile.ok()) return profile.status();
  return std::unique_ptr<Axis>(new Axis(config, *controller, *profile));
}

Axis::Axis(const AxisConfig& config, Controller controller, BackAndForth profile)
    : config_(config),
      plant_(config.plant),
      controller_(std::move(controller)),
      profile_(profile) {}

AxisSample Axis::Update(std::chrono::nanoseconds release, std::chrono::nanoseconds wake) noexcept {
  plant_.AdvanceTo(wake);             // the world ran on while we slept
  const Vector4& x = plant_.state();  // both encoders, sampled now (W_k)
  const auto at = config_.setpoint_at == SetpointAt::kWake ? wake : release;
  const Setpoint r = profile_.At(at);          // the setpoint for this cycle
  plant_.SetTorque(controller_.Update(x, r));  // held until the next cycle's wake-up
  AxisSample s;
  s.setpoint_rad = profile_.At(wake).position;
  s.load_rad = x(kLoadAngle);
  s.motor_rad = x(kMotorAngle);
  s.torque_nm = plant_.torque();
  s.error_rad = s.setpoint_rad - s.load_rad;
  tracking_.Add(s.error_rad);
  return s;
}

}  // namespace motion
