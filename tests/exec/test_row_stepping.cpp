// Host kernels step row evaluators from one output row to the next (expr/detail/row.hpp,
// row_stepper) instead of rebuilding them through the expression tree.  These tests compare fused
// expressions whose rows are strided, held (broadcast), sliced, transposed, selected and read
// through generic rows with naive loops, at shapes where work items start in the middle of the
// stepping axis and where that axis wraps; and a concatenation, whose rows must not step (its
// segment changes from row to row), still gives the right values.  Random arrays, whose rows do
// not step either (a key per row), are checked against their reference in tests/random.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <vector>

#include "kax/kax.hpp"

namespace {

// Equal up to rounding (the kernel may contract a * b + c where the loop does not).
bool close(double got, double want) { return std::abs(got - want) <= 1e-13 * std::max(1.0, std::abs(want)); }

std::vector<double> values(std::size_t n, double seed) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = std::sin(seed + 0.731 * static_cast<double>(k));
  return v;
}

// Shapes: P planes of Q rows of C columns; 2107 rows of 29 split into several work items whose
// boundaries fall inside the 301-row axis, which wraps six times.
constexpr std::size_t P = 7, Q = 301, C = 29;

struct operands {
  std::vector<double> x = values(P * Q * C, 0.1);      // (P, Q, C)
  std::vector<double> t = values(C * Q * P, 0.2);      // (C, Q, P), read transposed
  std::vector<double> b = values(Q, 0.3);              // (Q, 1), held along each row
  std::vector<double> c = values(C, 0.4);              // (C,), the same row everywhere
  std::vector<double> big = values(P * 2 * Q * 31, 0.5);  // (P, 2Q, 31), sliced to (P, Q, C)
  std::vector<double> v = values(P * Q * C, 0.6);      // reshaped from (P * Q * C,)

  double xe(std::size_t i, std::size_t j, std::size_t k) const { return x[(i * Q + j) * C + k]; }
  double te(std::size_t i, std::size_t j, std::size_t k) const { return t[(k * Q + j) * P + i]; }
  double bige(std::size_t i, std::size_t j, std::size_t k) const { return big[(i * 2 * Q + 2 * j) * 31 + k + 1]; }
  double ve(std::size_t i, std::size_t j, std::size_t k) const { return v[(i * Q + j) * C + k]; }
  // where(x > 0, x * b + transpose(t), slice(big) - c * 2.5) + reshape(v)
  double expected(std::size_t i, std::size_t j, std::size_t k) const {
    const double on = xe(i, j, k) * b[j] + te(i, j, k);
    const double off = bige(i, j, k) - c[k] * 2.5;
    return (xe(i, j, k) > 0 ? on : off) + ve(i, j, k);
  }
};

auto fused(const operands& o) {
  const auto x = kax::from<double, 3>(o.x, {P, Q, C});
  const auto t = kax::from<double, 3>(o.t, {C, Q, P});
  const auto b = kax::from<double, 2>(o.b, {Q, 1});
  const auto c = kax::from<double, 1>(o.c, {C});
  const auto big = kax::from<double, 3>(o.big, {P, 2 * Q, 31});
  const auto v = kax::from<double, 1>(o.v, {P * Q * C});
  const auto sliced = kax::slice(big, {kax::colon, kax::range(0, {}, 2), kax::range(1, 30)});
  return kax::eval(kax::where(x > 0.0, x * b + kax::transpose(t), sliced - c * 2.5) +
                   kax::reshape(v, {long(P), long(Q), long(C)}));
}

}  // namespace

TEST_CASE("row types step where their nodes build them affinely, and only there", "[exec][rows]") {
  using kax::detail::steppable_row;
  using strided = kax::detail::strided_row<double>;
  using held = kax::detail::constant_row<double>;
  STATIC_REQUIRE(steppable_row<strided>);
  STATIC_REQUIRE(steppable_row<kax::detail::contiguous_row<double>>);
  STATIC_REQUIRE(steppable_row<kax::detail::binary_row<kax::detail::add_op, double, strided, held>>);
  STATIC_REQUIRE(steppable_row<kax::detail::affine_row<strided>>);
  using concat = kax::detail::concat_row<strided, 2>;
  STATIC_REQUIRE_FALSE(steppable_row<concat>);
  STATIC_REQUIRE_FALSE(steppable_row<kax::detail::binary_row<kax::detail::add_op, double, strided, concat>>);
  STATIC_REQUIRE_FALSE(steppable_row<kax::detail::unary_row<kax::detail::sin_op, double, concat>>);
}

TEST_CASE("a fused rank-3 expression matches naive loops with its rows stepped", "[exec][rows]") {
  const operands o;
  const kax::Array<double, 3> y = fused(o);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < P; ++i)
    for (std::size_t j = 0; j < Q; ++j)
      for (std::size_t k = 0; k < C; ++k) wrong += !close(y.data()[(i * Q + j) * C + k], o.expected(i, j, k));
  REQUIRE(wrong == 0);
}

TEST_CASE("long rows split into pieces step correctly (one row per piece)", "[exec][rows]") {
  const std::size_t n = 20000;
  const auto x = kax::from<double, 2>(values(3 * n, 0.7), {3, n});
  const auto s = kax::from<double, 2>(values(3, 0.8), {3, 1});
  const kax::Array<double, 2> y = x * x * s + 1.0;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < n; ++k)
      wrong += !close(y.data()[i * n + k], x.data()[i * n + k] * x.data()[i * n + k] * s.data()[i] + 1.0);
  REQUIRE(wrong == 0);
}

TEST_CASE("row reductions step their operand's rows over two kept axes", "[exec][rows]") {
  const operands o;
  const auto x = kax::from<double, 3>(o.x, {P, Q, C});
  const auto t = kax::from<double, 3>(o.t, {C, Q, P});
  const auto b = kax::from<double, 2>(o.b, {Q, 1});
  const kax::Array<double, 2> s = kax::sum(x * b + kax::transpose(t), -1);
  const kax::Array<double, 2> m = kax::max(kax::transpose(t) - b, -1);
  for (std::size_t i = 0; i < P; ++i) {
    for (std::size_t j = 0; j < Q; ++j) {
      double sum = 0, mx = -INFINITY;
      for (std::size_t k = 0; k < C; ++k) {
        sum += o.xe(i, j, k) * o.b[j] + o.te(i, j, k);
        mx = std::max(mx, o.te(i, j, k) - o.b[j]);
      }
      REQUIRE(s.data()[i * Q + j] == Approx(sum).epsilon(1e-12).margin(1e-12));
      REQUIRE(m.data()[i * Q + j] == mx);
    }
  }
}

TEST_CASE("rows that do not step (concatenation segments) are rebuilt and stay right", "[exec][rows]") {
  const auto a = kax::from<double, 3>(values(P * 150 * C, 0.9), {P, 150, C});
  const auto c = kax::from<double, 3>(values(P * 151 * C, 1.0), {P, 151, C});
  const auto b = kax::from<double, 2>(values(Q, 1.1), {Q, 1});
  const kax::Array<double, 3> y = kax::concatenate(std::tuple{a, c}, 1) * b;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < P; ++i)
    for (std::size_t j = 0; j < Q; ++j)
      for (std::size_t k = 0; k < C; ++k) {
        const double in = j < 150 ? a.data()[(i * 150 + j) * C + k] : c.data()[(i * 151 + j - 150) * C + k];
        wrong += !close(y.data()[(i * Q + j) * C + k], in * b.data()[j]);
      }
  REQUIRE(wrong == 0);
}
