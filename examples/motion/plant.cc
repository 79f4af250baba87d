#include "plant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unsupported/Eigen/MatrixFunctions>

namespace motion {

double PlantParams::resonance_rad_per_s() const noexcept {
  return std::sqrt(stiffness * (1.0 / motor_inertia + 1.0 / load_inertia));
}

Continuous ContinuousModel(const PlantParams& p) noexcept {
  const double jm = p.motor_inertia;
  const double jl = p.load_inertia;
  const double k = p.stiffness;
  const double c = p.damping;
  Continuous m;
  // clang-format off
  m.a << 0.0,     1.0,                         0.0,     0.0,
         -k / jm, -(c + p.motor_friction) / jm, k / jm,  c / jm,
         0.0,     0.0,                         0.0,     1.0,
         k / jl,  c / jl,                      -k / jl, -(c + p.load_friction) / jl;
  // clang-format on
  m.b << 0.0, 1.0 / jm, 0.0, 0.0;
  return m;
}

Discrete Discretize(const Continuous& model, std::chrono::nanoseconds h) {
  // exp([[A, B], [0, 0]] h) = [[Ad, Bd], [0, 1]]: both ZOH matrices from one exponential.
  Eigen::Matrix<double, 5, 5> m = Eigen::Matrix<double, 5, 5>::Zero();
  m.topLeftCorner<4, 4>() = model.a;
  m.topRightCorner<4, 1>() = model.b;
  const Eigen::Matrix<double, 5, 5> e = (m * (static_cast<double>(h.count()) * 1e-9)).exp();
  Discrete d;
  d.ad = e.topLeftCorner<4, 4>();
  d.bd = e.topRightCorner<4, 1>();
  return d;
}

PlantSimulator::PlantSimulator(const PlantParams& params) : torque_limit_(params.torque_limit) {
  const Continuous model = ContinuousModel(params);
  for (int i = 0; i < kLevels; ++i) {
    levels_[static_cast<std::size_t>(i)] =
        Discretize(model, std::chrono::nanoseconds((std::int64_t{1} << i) * kResolutionNs));
  }
}

void PlantSimulator::SetTorque(double u) noexcept {
  u_ = std::clamp(u, -torque_limit_, torque_limit_);
}

void PlantSimulator::AdvanceTo(std::chrono::nanoseconds t) noexcept {
  const std::int64_t target_us = (t.count() + kResolutionNs / 2) / kResolutionNs;
  std::int64_t n = target_us - now_us_;
  if (n <= 0) return;
  if (n > kMaxAdvanceUs) {
    n = kMaxAdvanceUs;
    ++clamped_;
  }
  now_us_ = target_us;
  // n µs = the sum of its set bits' steps; each applies the ZOH over its length (u constant).
  auto bits = static_cast<std::uint64_t>(n);
  while (bits != 0) {
    const int i = std::countr_zero(bits);
    bits &= bits - 1;
    const Discrete& d = levels_[static_cast<std::size_t>(i)];
    x_ = d.ad * x_ + d.bd * u_;
  }
}

}  // namespace motion
