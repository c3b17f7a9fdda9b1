// Eigen interop: read Eigen matrices in place, evaluate kax expressions into Eigen objects.
//
//   kax::from_eigen(m)  zero-copy leaf over m (m must outlive the expression, like Eigen::Ref)
//   kax::to_eigen(e)    a new Eigen::MatrixX<T> / VectorX<T>, written by one fused kernel
//   kax::assign(m, e)   evaluates e into an existing Eigen object (Matrix, Map, Ref, Block)
#include <cmath>
#include <cstdio>

#include "kax/interop/eigen.hpp"

int main(int argc, char* argv[]) {
  kax::ScopeGuard guard(argc, argv);

  Eigen::MatrixXd a = Eigen::MatrixXd::Random(4, 3);  // column-major, Eigen's default
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> b(4, 3);
  b.setConstant(0.5);

  // Leaves read Eigen's storage in place; storage order and strides come from Eigen.
  const auto x = kax::from_eigen(a);
  const auto y = kax::from_eigen(b);
  const auto e = x * y + kax::sin(x);  // lazy: nothing computed yet

  // One kernel writes straight into a new Eigen matrix.
  const Eigen::MatrixXd c = kax::to_eigen(e);
  const Eigen::MatrixXd check = (a.array() * b.array() + a.array().sin()).matrix();
  std::printf("to_eigen: c(0,0) = %.6f  (Eigen says %.6f), max |c - Eigen| = %.2e\n", c(0, 0),
              check(0, 0), (c - check).cwiseAbs().maxCoeff());

  // Zero-copy: changing `a` after building `e` changes what `e` evaluates to.
  a(0, 0) = 1.0;
  std::printf("after a(0,0) = 1: e(0,0) = %.6f  (0.5 + sin(1) = %.6f)\n", kax::to_eigen(e)(0, 0),
              0.5 + std::sin(1.0));

  // assign evaluates into existing Eigen storage: here one column of a bigger matrix...
  Eigen::MatrixXd big = Eigen::MatrixXd::Zero(4, 5);
  Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(4, 1.0, 4.0);
  kax::assign(big.col(2), kax::sqrt(kax::from_eigen(v)) * 10.0);
  std::printf("assign into big.col(2): [%.3f %.3f %.3f %.3f], big(0,0) untouched = %.1f\n",
              big(0, 2), big(1, 2), big(2, 2), big(3, 2), big(0, 0));

  // ...and in place, even when the expression reads the destination (transpose in place).
  Eigen::Matrix3d s;
  s << 1, 2, 3, 4, 5, 6, 7, 8, 9;
  kax::assign(s, kax::transpose(kax::from_eigen(s)));
  std::printf("in-place transpose: first row = [%.0f %.0f %.0f]\n", s(0, 0), s(0, 1), s(0, 2));

  // Shapes are checked at run time (kax::shape_error) and ranks at compile time.
  try {
    kax::assign(big, x);
  } catch (const kax::shape_error& err) {
    std::printf("error, as expected: %s\n", err.what());
  }
  return 0;
}
