// kax dropped into small existing Eigen routines: the hot elementwise part is replaced by a kax
// expression on from_eigen leaves, assigned back into the caller's Eigen matrix.  Each routine is
// written first in plain Eigen (the reference), then with kax; both must agree.
#include <catch2/catch.hpp>

#include <cmath>

#include "kax/interop/eigen.hpp"

namespace {

// ---- routine 1: standardize the columns of a feature matrix, then a tanh activation ----------
// features: samples x features (column-major, as Eigen code usually has it).

// Plain Eigen, as it would be written before kax.
void standardize_activate_eigen(Eigen::MatrixXd& x, double gain) {
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Eigen::RowVectorXd inv_std =
      ((x.rowwise() - mean).array().square().colwise().mean() + 1e-8).sqrt().inverse().matrix();
  x = (gain * ((x.rowwise() - mean).array().rowwise() * inv_std.array())).tanh().matrix();
}

// The same routine: Eigen still computes the per-column statistics (reductions), kax runs the
// elementwise part as one fused kernel straight into x.
void standardize_activate_kax(Eigen::MatrixXd& x, double gain) {
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Eigen::RowVectorXd inv_std =
      ((x.rowwise() - mean).array().square().colwise().mean() + 1e-8).sqrt().inverse().matrix();
  // Row vectors are rank-1 leaves of length n_features; they broadcast over the sample axis.
  const auto xs = kax::from_eigen(x);
  kax::assign(x, kax::tanh(gain * ((xs - kax::from_eigen(mean)) * kax::from_eigen(inv_std))));
}

// ---- routine 2: one weighted-Jacobi sweep for -Laplace(u) = f on a square grid ---------------
// u, f: n x n, Dirichlet boundary (the border of u is kept).

void jacobi_step_eigen(Eigen::MatrixXd& u, const Eigen::MatrixXd& f, double h, double omega) {
  const Eigen::Index n = u.rows();
  const Eigen::Index m = n - 2;
  Eigen::MatrixXd next = u;
  next.block(1, 1, m, m) =
      (1.0 - omega) * u.block(1, 1, m, m).array() +
      omega * 0.25 *
          (u.block(0, 1, m, m).array() + u.block(2, 1, m, m).array() + u.block(1, 0, m, m).array() +
           u.block(1, 2, m, m).array() + h * h * f.block(1, 1, m, m).array());
  u = next;
}

// kax: the four neighbour blocks are zero-copy leaves into u itself; assigning into the interior
// block of u reads u at other elements, so kax's aliasing rule evaluates through a temporary
// (the same thing the Eigen version does by hand with `next`).
void jacobi_step_kax(Eigen::MatrixXd& u, const Eigen::MatrixXd& f, double h, double omega) {
  const Eigen::Index m = u.rows() - 2;
  const auto c = kax::from_eigen(u.block(1, 1, m, m));
  const auto up = kax::from_eigen(u.block(0, 1, m, m));
  const auto down = kax::from_eigen(u.block(2, 1, m, m));
  const auto left = kax::from_eigen(u.block(1, 0, m, m));
  const auto right = kax::from_eigen(u.block(1, 2, m, m));
  const auto rhs = kax::from_eigen(f.block(1, 1, m, m));
  kax::assign(u.block(1, 1, m, m),
              (1.0 - omega) * c + omega * 0.25 * (up + down + left + right + h * h * rhs));
}

Eigen::MatrixXd features(Eigen::Index rows, Eigen::Index cols) {
  Eigen::MatrixXd x(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j)
      x(i, j) = std::sin(0.3 * static_cast<double>(i) * static_cast<double>(j + 1)) * (j + 1) +
                0.1 * static_cast<double>(j);
  return x;
}

}  // namespace

TEST_CASE("a feature-standardization routine gives the same result with kax as in plain Eigen",
          "[interop][eigen]") {
  const Eigen::MatrixXd x0 = features(257, 19);
  Eigen::MatrixXd a = x0;
  Eigen::MatrixXd b = x0;
  const double* storage = b.data();
  standardize_activate_eigen(a, 0.8);
  standardize_activate_kax(b, 0.8);
  REQUIRE(b.data() == storage);  // the caller's matrix was written in place
  REQUIRE((a - b).cwiseAbs().maxCoeff() < 1e-13);
  // Sanity of the reference itself: tanh keeps values in (-1, 1) and the routine changed x.
  REQUIRE(a.cwiseAbs().maxCoeff() < 1.0);
  REQUIRE((a - x0).cwiseAbs().maxCoeff() > 0.1);
}

TEST_CASE("a weighted-Jacobi smoother gives the same iterates with kax as in plain Eigen",
          "[interop][eigen]") {
  const Eigen::Index n = 48;
  const double h = 1.0 / static_cast<double>(n - 1);
  Eigen::MatrixXd f(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < n; ++j) f(i, j) = std::sin(M_PI * i * h) * std::sin(M_PI * j * h);
  Eigen::MatrixXd ua = Eigen::MatrixXd::Zero(n, n);
  ua.row(0).setConstant(1.0);  // a non-zero boundary that must survive the sweeps
  Eigen::MatrixXd ub = ua;
  for (int sweep = 0; sweep < 25; ++sweep) {
    jacobi_step_eigen(ua, f, h, 0.8);
    jacobi_step_kax(ub, f, h, 0.8);
  }
  REQUIRE((ua - ub).cwiseAbs().maxCoeff() < 1e-14);
  REQUIRE(ub.row(0).isConstant(1.0));
  REQUIRE(ub(n / 2, n / 2) > 0.0);
}
