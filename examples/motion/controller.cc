#include "controller.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>

namespace motion {

rtloop::Result<Controller> Controller::Design(const PlantParams& plant,
                                              std::chrono::nanoseconds period,
                                              const LqrWeights& w) {
  if (period.count() <= 0) return rtloop::InvalidArgumentError("control period must be > 0");
  for (double v : {w.motor_angle_rad, w.motor_speed_rad_per_s, w.load_angle_rad,
                   w.load_speed_rad_per_s, w.integral_rad_s, w.torque_nm}) {
    if (!(v > 0.0)) return rtloop::InvalidArgumentError("every LQR weight must be > 0");
  }
  const double t = static_cast<double>(period.count()) * 1e-9;
  const Discrete d = Discretize(ContinuousModel(plant), period);

  using Matrix5 = Eigen::Matrix<double, 5, 5>;
  using Vector5 = Eigen::Matrix<double, 5, 1>;
  Matrix5 a = Matrix5::Zero();
  a.topLeftCorner<4, 4>() = d.ad;
  a(4, kLoadAngle) = t;  // z[k+1] = z[k] + T e_load[k]
  a(4, 4) = 1.0;
  Vector5 b = Vector5::Zero();
  b.head<4>() = d.bd;

  auto inv_sq = [](double v) { return 1.0 / (v * v); };
  Vector5 q_diag;
  q_diag << inv_sq(w.motor_angle_rad), inv_sq(w.motor_speed_rad_per_s), inv_sq(w.load_angle_rad),
      inv_sq(w.load_speed_rad_per_s), inv_sq(w.integral_rad_s);
  const Matrix5 q = q_diag.asDiagonal();
  const double r = inv_sq(w.torque_nm);

  // P = Q + Aᵀ P A - Aᵀ P B (R + Bᵀ P B)^-1 Bᵀ P A, iterated from P = Q.
  Matrix5 p = q;
  bool converged = false;
  for (int i = 0; i < 200'000 && !converged; ++i) {
    const double s = r + (b.transpose() * p * b)(0, 0);
    const Eigen::Matrix<double, 1, 5> bpa = b.transpose() * p * a;
    const Matrix5 next = q + a.transpose() * p * a - bpa.transpose() * bpa / s;
    converged = (next - p).norm() <= 1e-10 * next.norm();
    p = next;
  }
  if (!converged || !p.allFinite()) {
    return rtloop::InvalidArgumentError(
        "LQR design did not converge: check the plant parameters and the weights");
  }
  Controller c;
  c.plant_ = plant;
  c.period_s_ = t;
  c.k_ = (b.transpose() * p * a) / (r + (b.transpose() * p * b)(0, 0));
  const Matrix5 closed = a - b * c.k_;
  c.spectral_radius_ = closed.eigenvalues().cwiseAbs().maxCoeff();
  if (!(c.spectral_radius_ < 1.0)) {
    return rtloop::InvalidArgumentError("LQR closed loop is not stable at this period");
  }
  return c;
}

double Controller::Update(const Vector4& x, const Setpoint& r) noexcept {
  const PlantParams& p = plant_;
  const double twist =
      (p.load_inertia * r.acceleration + p.load_friction * r.velocity) / p.stiffness;
  Vector4 x_ref;
  x_ref << r.position + twist, r.velocity, r.position, r.velocity;
  const Vector4 e = x - x_ref;
  const double feed_forward = (p.motor_inertia + p.load_inertia) * r.acceleration +
                              (p.motor_friction + p.load_friction) * r.velocity;
  const double u = feed_forward - k_.head<4>().dot(e) - k_(4) * integral_;
  const double limited = std::clamp(u, -p.torque_limit, p.torque_limit);
  saturated_ = limited != u;
  if (!saturated_) integral_ += period_s_ * e(kLoadAngle);  // z[k+1], as in the design model
  return limited;
}

}  // namespace motion
