// A DC servo motor driving a load through a flexible coupling, as a 4-state linear model, and a
// simulator that advances it by any elapsed time exactly (zero-order hold on the torque).
//
//   motor (Jm, bm) --- shaft: stiffness k, damping c --- load (Jl, bl)
//   x = [motor angle, motor speed, load angle, load speed]   (rad, rad/s)    u = motor torque (N m)
//   Jm dωm/dt = u - k (θm - θl) - c (ωm - ωl) - bm ωm
//   Jl dωl/dt =     k (θm - θl) + c (ωm - ωl) - bl ωl
//
//   motion::PlantParams p;                                   // defaults: a small servo, 130 Hz
//   motion::Discrete d = motion::Discretize(p, std::chrono::microseconds(500));   // set-up
//   motion::PlantSimulator sim(p);                           // set-up: builds its tables
//   sim.SetTorque(0.1);
//   sim.AdvanceTo(std::chrono::microseconds(1234));          // RT-safe, exact for any time
//
// Discretisation: x(t+h) = Ad x(t) + Bd u with Ad = e^{A h} and Bd = ∫0^h e^{A s} ds B, both read
// from the matrix exponential of the augmented matrix [[A, B], [0, 0]] h (Eigen's unsupported
// MatrixFunctions; set-up only). The simulator keeps e^{A h} and its Bd for h = 2^i µs,
// i = 0..kLevels-1, and advances n µs in popcount(n) fixed-size matrix-vector products: a late
// control cycle makes the torque act longer, exactly as on a real drive.
//
// Threading: value types; one thread at a time per object. Construction and Discretize() are not
// RT-safe (matrix exponentials); AdvanceTo(), SetTorque() and the getters are RT-safe (fixed-size
// Eigen arithmetic, no allocation, bounded loops).
#pragma once

#include <Eigen/Core>
#include <array>
#include <chrono>
#include <cstdint>

namespace motion {

using Matrix4 = Eigen::Matrix<double, 4, 4>;
using Vector4 = Eigen::Matrix<double, 4, 1>;

// State indices.
inline constexpr int kMotorAngle = 0;
inline constexpr int kMotorSpeed = 1;
inline constexpr int kLoadAngle = 2;
inline constexpr int kLoadSpeed = 3;

struct PlantParams {
  double motor_inertia = 1.2e-4;  // Jm, kg m^2 (rotor + encoder)
  double load_inertia = 3.6e-4;   // Jl, kg m^2
  double stiffness = 60.0;        // k, N m/rad (coupling and shaft)
  double damping = 4e-3;          // c, N m s/rad (in the coupling)
  double motor_friction = 1e-3;   // bm, N m s/rad (viscous, bearings)
  double load_friction = 2e-3;    // bl, N m s/rad
  double torque_limit = 2.0;      // |u| the drive can give, N m

  // The two-mass resonance sqrt(k (1/Jm + 1/Jl)) of the coupling, rad/s (defaults: 816 = 130 Hz).
  double resonance_rad_per_s() const noexcept;
};

// Continuous-time model dx/dt = A x + B u.
struct Continuous {
  Matrix4 a;
  Vector4 b;
};
Continuous ContinuousModel(const PlantParams& p) noexcept;

// Zero-order-hold discretisation x[k+1] = ad x[k] + bd u[k] for step h. Not RT-safe.
struct Discrete {
  Matrix4 ad;
  Vector4 bd;
};
Discrete Discretize(const Continuous& model, std::chrono::nanoseconds h);

class PlantSimulator {
 public:
  static constexpr int kLevels = 20;  // steps of 1 µs .. 2^19 µs (0.52 s)
  static constexpr std::int64_t kResolutionNs = 1000;
  // The longest single advance; a longer gap (a stalled process) is clamped to it and counted.
  static constexpr std::int64_t kMaxAdvanceUs = (std::int64_t{1} << kLevels) - 1;

  explicit PlantSimulator(const PlantParams& params);

  // Holds u (clamped to ±torque_limit) from the current time on. RT-safe.
  void SetTorque(double u) noexcept;
  // Moves the plant to time t (since the simulation began), rounded to 1 µs, under the held
  // torque. Times before the current one are ignored. RT-safe.
  void AdvanceTo(std::chrono::nanoseconds t) noexcept;

  const Vector4& state() const noexcept { return x_; }
  void set_state(const Vector4& x) noexcept { x_ = x; }
  double torque() const noexcept { return u_; }
  std::chrono::nanoseconds now() const noexcept {
    return std::chrono::nanoseconds(now_us_ * kResolutionNs);
  }
  std::uint64_t clamped_advances() const noexcept { return clamped_; }

 private:
  double torque_limit_;
  std::array<Discrete, kLevels> levels_;  // levels_[i]: a step of 2^i µs
  Vector4 x_ = Vector4::Zero();
  double u_ = 0.0;
  std::int64_t now_us_ = 0;
  std::uint64_t clamped_ = 0;
};

}  // namespace motion
