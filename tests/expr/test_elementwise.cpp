// Elementwise operators and math functions against naive std:: loops, JAX's dtype promotion,
// and NumPy broadcasting against data files made by scripts/gen_test_data.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "data_file.hpp"
#include "kax/kax.hpp"

namespace {

using i32 = std::int32_t;
using i64 = std::int64_t;

// Deterministic values in [lo, hi] (integers for integral T).
template <class T>
std::vector<T> values(std::size_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {  // indexed: vector<bool> has no T& elements
    const double d = dist(gen);
    if constexpr (std::is_integral_v<T>) v[i] = static_cast<T>(std::lround(d));
    else v[i] = static_cast<T>(d);
  }
  return v;
}

template <class T>
kax::Array<T, 2> array_of(const std::vector<T>& v, std::size_t rows) {
  return kax::from<T, 2>(v, {rows, v.size() / rows});
}

// Relative tolerance for the vectorized transcendentals (a few ulp), by result dtype.
template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 1e-6 : 1e-14;
}
template <class T>
constexpr double abs_tol() {
  return std::is_same_v<T, float> ? 1e-7 : 1e-15;
}

// Checks that y(i) equals f(i) for every flat index i.
template <class T, std::size_t R, class F>
void require_each(const kax::Array<T, R>& y, std::size_t n, F f) {
  const std::vector<T> got = kax::to_vector(y);
  REQUIRE(got.size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("index " << i);
    REQUIRE(got[i] == f(i));
  }
}

template <class T, std::size_t R, class F>
void require_close(const kax::Array<T, R>& y, std::size_t n, F f) {
  const std::vector<T> got = kax::to_vector(y);
  REQUIRE(got.size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("index " << i);
    REQUIRE(static_cast<double>(got[i]) ==
            Approx(static_cast<double>(f(i))).epsilon(tol<T>()).margin(abs_tol<T>()));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("+ - * and unary - match a naive loop for every numeric dtype", "[expr]", float,
                   double, i32, i64) {
  using T = TestType;
  const std::size_t n = 5000;
  const auto va = values<T>(n, -100, 100, 1);
  const auto vb = values<T>(n, -100, 100, 2);
  const auto a = array_of(va, 50);
  const auto b = array_of(vb, 50);
  kax::Array<T, 2> s = a + b;
  require_each(s, n, [&](std::size_t i) { return static_cast<T>(va[i] + vb[i]); });
  kax::Array<T, 2> d = a - b;
  require_each(d, n, [&](std::size_t i) { return static_cast<T>(va[i] - vb[i]); });
  kax::Array<T, 2> p = a * b;
  require_each(p, n, [&](std::size_t i) { return static_cast<T>(va[i] * vb[i]); });
  kax::Array<T, 2> m = -a;
  require_each(m, n, [&](std::size_t i) { return static_cast<T>(-va[i]); });
  kax::Array<T, 2> sq = kax::square(a);
  require_each(sq, n, [&](std::size_t i) { return static_cast<T>(va[i] * va[i]); });
  kax::Array<T, 2> ab = kax::abs(a);
  require_each(ab, n, [&](std::size_t i) { return static_cast<T>(va[i] < 0 ? -va[i] : va[i]); });
  // Scalars on either side keep T (weak typing) and compute like the naive expression.
  kax::Array<T, 2> sc = T(3) - a * 2;
  require_each(sc, n, [&](std::size_t i) { return static_cast<T>(T(3) - va[i] * T(2)); });
}

TEMPLATE_TEST_CASE("true division matches a naive loop; integers divide in double", "[expr]", float,
                   double, i32, i64) {
  using T = TestType;
  using F = kax::float_of_t<T>;
  const std::size_t n = 3000;
  const auto va = values<T>(n, -100, 100, 3);
  auto vb = values<T>(n, 1, 50, 4);
  const auto a = array_of(va, 30);
  const auto b = array_of(vb, 30);
  auto e = a / b;
  static_assert(std::is_same_v<kax::value_type_of<decltype(e)>, F>);
  kax::Array<F, 2> q = e;
  require_each(q, n, [&](std::size_t i) { return static_cast<F>(va[i]) / static_cast<F>(vb[i]); });
}

TEMPLATE_TEST_CASE("comparisons give bool arrays equal to the naive comparisons", "[expr]", float,
                   double, i32, i64, bool) {
  using T = TestType;
  const std::size_t n = 2000;
  const auto va = values<T>(n, -3, 3, 5);  // small range: many ties
  const auto vb = values<T>(n, -3, 3, 6);
  const auto a = array_of(va, 20);
  const auto b = array_of(vb, 20);
  static_assert(std::is_same_v<kax::value_type_of<decltype(a < b)>, bool>);
  kax::Array<bool, 2> eq = a == b, ne = a != b, lt = a < b, le = a <= b, gt = a > b, ge = a >= b;
  require_each(eq, n, [&](std::size_t i) { return va[i] == vb[i]; });
  require_each(ne, n, [&](std::size_t i) { return va[i] != vb[i]; });
  require_each(lt, n, [&](std::size_t i) { return va[i] < vb[i]; });
  require_each(le, n, [&](std::size_t i) { return va[i] <= vb[i]; });
  require_each(gt, n, [&](std::size_t i) { return va[i] > vb[i]; });
  require_each(ge, n, [&](std::size_t i) { return va[i] >= vb[i]; });
}

TEST_CASE("& | ! combine truth values elementwise", "[expr]") {
  const std::size_t n = 1000;
  const auto va = values<bool>(n, 0, 1, 7);
  const auto vb = values<bool>(n, 0, 1, 8);
  const auto a = array_of(va, 10);
  const auto b = array_of(vb, 10);
  kax::Array<bool, 2> x = a & b, o = a | b, na = !a, mixed = (a & !b) | (!a & b);
  require_each(x, n, [&](std::size_t i) { return va[i] && vb[i]; });
  require_each(o, n, [&](std::size_t i) { return va[i] || vb[i]; });
  require_each(na, n, [&](std::size_t i) { return !va[i]; });
  require_each(mixed, n, [&](std::size_t i) { return va[i] != vb[i]; });
  // Numbers are truth values by `!= 0`, as NumPy's logical_and.
  const auto vi = values<i32>(n, -1, 1, 9);
  const auto ai = array_of(vi, 10);
  kax::Array<bool, 2> li = kax::logical_and(ai, a);
  require_each(li, n, [&](std::size_t i) { return vi[i] != 0 && va[i]; });
  kax::Array<bool, 2> ni = kax::logical_not(ai);
  require_each(ni, n, [&](std::size_t i) { return vi[i] == 0; });
}

TEMPLATE_TEST_CASE("where picks from x where the condition holds, else from y", "[expr]", float,
                   double, i32, i64) {
  using T = TestType;
  const std::size_t n = 2000;
  const auto va = values<T>(n, -10, 10, 10);
  const auto vb = values<T>(n, -10, 10, 11);
  const auto a = array_of(va, 40);
  const auto b = array_of(vb, 40);
  kax::Array<T, 2> w = kax::where(a > b, a, b * 2);
  require_each(w, n, [&](std::size_t i) { return va[i] > vb[i] ? va[i] : static_cast<T>(vb[i] * 2); });
  kax::Array<T, 2> z = kax::where(a < 0, T(0), a);  // relu
  require_each(z, n, [&](std::size_t i) { return va[i] < 0 ? T(0) : va[i]; });
}

TEMPLATE_TEST_CASE("transcendental functions match std:: within a few ulp", "[expr][math]", float,
                   double) {
  using T = TestType;
  const std::size_t n = 4096 + 77;  // not a multiple of the SIMD width: exercises the tail
  const auto vt = values<T>(n, -10, 10, 12);
  const auto vx = values<T>(n, -20, 20, 13);
  const auto vp = values<T>(n, 1e-3, 1e3, 14);
  const auto vh = values<T>(n, -5, 5, 15);
  const auto t = array_of(vt, 1), x = array_of(vx, 1), p = array_of(vp, 1), h = array_of(vh, 1);
  auto d = [](T v) { return static_cast<double>(v); };
  kax::Array<T, 2> s = kax::sin(t), c = kax::cos(t), e = kax::exp(x), l = kax::log(p),
                   q = kax::sqrt(p), th = kax::tanh(h);
  require_close(s, n, [&](std::size_t i) { return static_cast<T>(std::sin(d(vt[i]))); });
  require_close(c, n, [&](std::size_t i) { return static_cast<T>(std::cos(d(vt[i]))); });
  require_close(e, n, [&](std::size_t i) { return static_cast<T>(std::exp(d(vx[i]))); });
  require_close(l, n, [&](std::size_t i) { return static_cast<T>(std::log(d(vp[i]))); });
  require_close(q, n, [&](std::size_t i) { return static_cast<T>(std::sqrt(d(vp[i]))); });
  require_close(th, n, [&](std::size_t i) { return static_cast<T>(std::tanh(d(vh[i]))); });
  kax::Array<T, 2> pw = kax::pow(p, h);
  require_close(pw, n, [&](std::size_t i) { return static_cast<T>(std::pow(d(vp[i]), d(vh[i]))); });
  kax::Array<T, 2> pw2 = kax::pow(p, 2.5);
  require_close(pw2, n, [&](std::size_t i) { return static_cast<T>(std::pow(d(vp[i]), 2.5)); });
}

TEMPLATE_TEST_CASE("floor, ceil and abs of floating arrays match std::", "[expr][math]", float,
                   double) {
  using T = TestType;
  const std::size_t n = 1000;
  const auto v = values<T>(n, -50, 50, 16);
  const auto a = array_of(v, 10);
  kax::Array<T, 2> f = kax::floor(a), c = kax::ceil(a), ab = kax::abs(a);
  require_each(f, n, [&](std::size_t i) { return std::floor(v[i]); });
  require_each(c, n, [&](std::size_t i) { return std::ceil(v[i]); });
  require_each(ab, n, [&](std::size_t i) { return std::fabs(v[i]); });
}

TEMPLATE_TEST_CASE("math functions of integers compute in double", "[expr][math]", i32, i64) {
  using T = TestType;
  const std::size_t n = 500;
  const auto v = values<T>(n, 1, 1000, 17);
  const auto a = array_of(v, 5);
  static_assert(std::is_same_v<kax::value_type_of<decltype(kax::sin(a))>, double>);
  static_assert(std::is_same_v<kax::value_type_of<decltype(kax::sqrt(a))>, double>);
  static_assert(std::is_same_v<kax::value_type_of<decltype(kax::pow(a, a))>, double>);
  static_assert(std::is_same_v<kax::value_type_of<decltype(kax::floor(a))>, double>);
  kax::Array<double, 2> s = kax::sin(a), l = kax::log(a), q = kax::sqrt(a), f = kax::floor(a);
  require_close(s, n, [&](std::size_t i) { return std::sin(static_cast<double>(v[i])); });
  require_close(l, n, [&](std::size_t i) { return std::log(static_cast<double>(v[i])); });
  require_close(q, n, [&](std::size_t i) { return std::sqrt(static_cast<double>(v[i])); });
  require_each(f, n, [&](std::size_t i) { return static_cast<double>(v[i]); });
  kax::Array<double, 2> p = kax::pow(a, 2);
  require_close(p, n, [&](std::size_t i) { return std::pow(static_cast<double>(v[i]), 2.0); });
}

TEMPLATE_TEST_CASE("maximum and minimum match a naive loop", "[expr][math]", float, double, i32,
                   i64) {
  using T = TestType;
  const std::size_t n = 2000;
  const auto va = values<T>(n, -100, 100, 18);
  const auto vb = values<T>(n, -100, 100, 19);
  const auto a = array_of(va, 20);
  const auto b = array_of(vb, 20);
  kax::Array<T, 2> mx = kax::maximum(a, b), mn = kax::minimum(a, b);
  require_each(mx, n, [&](std::size_t i) { return va[i] > vb[i] ? va[i] : vb[i]; });
  require_each(mn, n, [&](std::size_t i) { return va[i] < vb[i] ? va[i] : vb[i]; });
  kax::Array<T, 2> clip = kax::minimum(kax::maximum(a, -10), 10);
  require_each(clip, n, [&](std::size_t i) { return std::min<T>(std::max<T>(va[i], -10), 10); });
}

TEMPLATE_TEST_CASE("maximum and minimum propagate NaN from either operand", "[expr][math]", float,
                   double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const auto a = kax::from<T, 1>({nan, 1, nan, 3, -1}, {5});
  const auto b = kax::from<T, 1>({2, nan, nan, 1, 4}, {5});
  const auto mx = kax::to_vector(kax::eval(kax::maximum(a, b)));
  const auto mn = kax::to_vector(kax::eval(kax::minimum(a, b)));
  for (int i = 0; i < 3; ++i) {
    REQUIRE(std::isnan(mx[i]));
    REQUIRE(std::isnan(mn[i]));
  }
  REQUIRE(mx[3] == 3);
  REQUIRE(mn[3] == 1);
  REQUIRE(mx[4] == 4);
  REQUIRE(mn[4] == -1);
}

TEST_CASE("astype converts like static_cast, and to bool by != 0", "[expr]") {
  const auto d = kax::from<double, 1>({-2.7, -0.5, 0.0, 0.4, 3.9, 1e10}, {6});
  kax::Array<i32, 1> i = kax::astype<i32>(kax::minimum(d, 1e6));
  REQUIRE(kax::to_vector(i) == std::vector<i32>{-2, 0, 0, 0, 3, 1000000});
  kax::Array<i64, 1> l = kax::astype<i64>(d);
  REQUIRE(kax::to_vector(l) == std::vector<i64>{-2, 0, 0, 0, 3, 10000000000LL});
  kax::Array<bool, 1> b = kax::astype<bool>(d);
  REQUIRE(kax::to_vector(b) == std::vector<bool>{true, true, false, true, true, true});
  kax::Array<float, 1> f = kax::astype<float>(d);
  REQUIRE(kax::to_vector(f) == std::vector<float>{-2.7f, -0.5f, 0.0f, 0.4f, 3.9f, 1e10f});
  const auto flags = kax::from<bool, 1>(std::vector<bool>{true, false, true}, {3});
  kax::Array<i32, 1> fi = kax::astype<i32>(flags) * 5;
  REQUIRE(kax::to_vector(fi) == std::vector<i32>{5, 0, 5});
}

TEST_CASE("dtype promotion follows JAX's lattice with weakly typed scalars", "[expr][dtype]") {
  const auto f = kax::zeros<float>(2);
  const auto d = kax::zeros<double>(2);
  const auto i = kax::zeros<i32>(2);
  const auto l = kax::zeros<i64>(2);
  const auto b = kax::zeros<bool>(2);
  using kax::value_type_of;
  static_assert(std::is_same_v<value_type_of<decltype(i + f)>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(l + f)>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(i + l)>, i64>);
  static_assert(std::is_same_v<value_type_of<decltype(f + d)>, double>);
  static_assert(std::is_same_v<value_type_of<decltype(b + i)>, i32>);
  static_assert(std::is_same_v<value_type_of<decltype(f * 2.5)>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(f * 2)>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(2.5 * f)>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(i * 2.5)>, double>);
  static_assert(std::is_same_v<value_type_of<decltype(i * 2)>, i32>);
  static_assert(std::is_same_v<value_type_of<decltype(l * 2)>, i64>);
  static_assert(std::is_same_v<value_type_of<decltype(b * 2)>, i32>);
  static_assert(std::is_same_v<value_type_of<decltype(i / i)>, double>);
  static_assert(std::is_same_v<value_type_of<decltype(i / 2)>, double>);
  static_assert(std::is_same_v<value_type_of<decltype(f / 2)>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(kax::sin(i))>, double>);
  static_assert(std::is_same_v<value_type_of<decltype(kax::sin(f))>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(f < 1.0)>, bool>);
  static_assert(std::is_same_v<value_type_of<decltype(kax::where(b, i, f))>, float>);
  static_assert(std::is_same_v<value_type_of<decltype(kax::where(b, i, 1.5))>, double>);
  // A weak double scalar must not widen float arithmetic: 0.1 is rounded to float first.
  const auto one = kax::ones<float>(1);
  kax::Array<float, 1> r = one * 0.1;
  REQUIRE(r(0) == 0.1f);
  // int32 * 2.5 really computes in double.
  const auto three = kax::full<i32>(kax::shape<1>{1}, 3);
  REQUIRE(kax::eval(three * 2.5)(0) == 7.5);
  REQUIRE(kax::eval(three / 2)(0) == 1.5);
}

TEST_CASE("broadcasting (3,1)+(1,4) and (4,)*(3,4) matches NumPy", "[expr][broadcast]") {
  const auto a31 = kax_test::load<double, 2>("bcast_a31");
  const auto b14 = kax_test::load<double, 2>("bcast_b14");
  const auto c4 = kax_test::load<double, 1>("bcast_c4");
  const auto d34 = kax_test::load<double, 2>("bcast_d34");
  kax::Array<double, 2> s = a31 + b14;
  kax_test::require_matches(s, "bcast_a31_plus_b14");
  kax::Array<double, 2> m = c4 * d34 - a31;
  kax_test::require_matches(m, "bcast_c4_times_d34_minus_a31");
}

TEST_CASE("a rank-0 array broadcasts against any shape", "[expr][broadcast]") {
  const auto s0 = kax_test::load<double, 0>("bcast_s0");
  const auto c4 = kax_test::load<double, 1>("bcast_c4");
  const auto d34 = kax_test::load<double, 2>("bcast_d34");
  kax::Array<double, 2> y = d34 * s0 + c4;
  kax_test::require_matches(y, "bcast_d34_times_s0_plus_c4");
  // The flat traversal (every operand contiguous, no other broadcast) must read element 0 of the
  // rank-0 array for every output element.
  const auto big = kax::arange<double>(10000.0);
  const auto two = kax::full<double>(kax::shape<0>{}, 2.0);
  kax::Array<double, 1> z = big * two;
  require_each(z, 10000, [](std::size_t i) { return 2.0 * static_cast<double>(i); });
  kax::Array<double, 1> w = big + kax::sin(two);
  require_close(w, 10000, [](std::size_t i) { return static_cast<double>(i) + std::sin(2.0); });
}

TEST_CASE("scalars broadcast in every position", "[expr][broadcast]") {
  const auto d34 = kax_test::load<double, 2>("bcast_d34");
  const auto v = kax::to_vector(d34);
  kax::Array<double, 2> y = 1.5 - d34 / 4.0 + kax::maximum(d34, 0.0);
  require_close(y, 12, [&](std::size_t i) { return 1.5 - v[i] / 4.0 + std::max(v[i], 0.0); });
}

TEST_CASE("where broadcasts condition, x and y like NumPy", "[expr][broadcast]") {
  const auto cond = kax::astype<bool>(kax_test::load<double, 2>("where_cond"));
  const auto d34 = kax_test::load<double, 2>("bcast_d34");
  const auto c4 = kax_test::load<double, 1>("bcast_c4");
  const auto a31 = kax_test::load<double, 2>("bcast_a31");
  const auto b14 = kax_test::load<double, 2>("bcast_b14");
  kax::Array<double, 2> w = kax::where(cond, d34, c4);
  kax_test::require_matches(w, "where_d34_c4");
  kax::Array<double, 2> w2 = kax::where(a31 > 0.0, b14, -1.5);
  kax_test::require_matches(w2, "where_a31_b14_scalar");
}

TEST_CASE("a*b + sin(c)*2 - d/e with mixed broadcasting matches NumPy", "[expr][broadcast]") {
  const auto a = kax_test::load<double, 2>("compound_a");
  const auto b = kax_test::load<double, 1>("compound_b");
  const auto c = kax_test::load<double, 2>("compound_c");
  const auto d = kax_test::load<double, 2>("compound_d");
  const auto e = kax_test::load<double, 2>("compound_e");
  kax::Array<double, 2> y = a * b + kax::sin(c) * 2 - d / e;
  kax_test::require_matches(y, "compound_result", 1e-14);
  // The same in float, against the float64 reference (float rounding only).
  const auto af = kax::eval(kax::astype<float>(a));
  kax::Array<float, 2> yf = af * kax::astype<float>(b) + kax::sin(kax::astype<float>(c)) * 2 -
                            kax::astype<float>(d) / kax::astype<float>(e);
  kax_test::require_matches(yf, "compound_result", 1e-5);
}

TEST_CASE("incompatible broadcast shapes throw shape_error", "[expr][broadcast]") {
  const auto a = kax::zeros<double>(3, 4);
  const auto b = kax::zeros<double>(3);
  REQUIRE_THROWS_AS(a + b, kax::shape_error);
  REQUIRE_THROWS_AS(kax::where(a > 0.0, a, kax::zeros<double>(2, 1)), kax::shape_error);
}

// The host's strided kernel runs several rows per work item, stepping the index from row to
// row across the leading axes, and splits long rows into pieces when there are few of them:
// shapes with short rows, row counts that are not a multiple of a work item's rows, carries
// across the first axis, and few long rows, against a naive loop over multi-indices.
TEST_CASE("broadcasting over many short rows and few long ones matches a naive loop", "[expr][broadcast]") {
  const std::size_t shapes[][3] = {{7, 129, 1}, {3, 1000, 3}, {5, 77, 16}, {2, 3, 700}, {1, 2, 3000}, {33, 31, 5}};
  for (const auto& s : shapes) {
    const std::size_t p = s[0], q = s[1], r = s[2];
    CAPTURE(p, q, r);
    // x (p, q, r); u (q, 1) broadcasts along the rows; v (r,) broadcasts across them; t is read
    // through a transpose, (r, q, p) -> (p, q, r), so none of its rows is contiguous.
    const auto xv = values<double>(p * q * r, -2, 2, 11), uv = values<double>(q, -1, 1, 12),
               vv = values<double>(r, -1, 1, 13), tv = values<double>(r * q * p, -3, 3, 14);
    const auto x = kax::from<double, 3>(xv, {p, q, r});
    const auto u = kax::from<double, 2>(uv, {q, 1});
    const auto v = kax::from<double, 1>(vv, {r});
    const auto t = kax::from<double, 3>(tv, {r, q, p});
    kax::Array<double, 3> y = x * u + kax::sin(v) - kax::transpose(t);
    REQUIRE(y.extents() == kax::shape<3>{p, q, r});
    const auto got = kax::to_vector(y);
    for (std::size_t i = 0; i < p; ++i)
      for (std::size_t j = 0; j < q; ++j)
        for (std::size_t k = 0; k < r; ++k) {
          const double want = xv[(i * q + j) * r + k] * uv[j] + std::sin(vv[k]) - tv[(k * q + j) * p + i];
          REQUIRE(got[(i * q + j) * r + k] == Approx(want).epsilon(1e-14).margin(1e-14));
        }
  }
}

TEST_CASE("fused kernels give the naive loop's values whether their rows walk, are held or are split",
          "[expr][broadcast]") {
  // Host kernels read a row through a dense evaluator when every operand walks it with stride 1
  // (a bias added to a matrix), else through one that may hold an operand (expr/detail/row.hpp).
  const std::size_t shapes[][3] = {{3, 5, 7}, {2, 4, 33}, {1, 3, 1000}, {4, 9, 16}};
  for (const auto& s : shapes) {
    const std::size_t p = s[0], q = s[1], r = s[2];
    CAPTURE(p, q, r);
    const auto xv = values<double>(p * q * r, -2, 2, 21), vv = values<double>(r, -1, 1, 22),
               wv = values<double>(q * r, -1, 1, 23), uv = values<double>(q, -1, 1, 24);
    const auto x = kax::from<double, 3>(xv, {p, q, r});
    const auto v = kax::from<double, 1>(vv, {r});
    const auto w = kax::from<double, 2>(wv, {q, r});
    const auto u = kax::from<double, 2>(uv, {q, 1});
    auto at = [&](std::size_t i, std::size_t j, std::size_t k) { return (i * q + j) * r + k; };
    auto check = [&](const kax::Array<double, 3>& y, auto&& want) {
      REQUIRE(y.extents() == kax::shape<3>{p, q, r});
      const auto got = kax::to_vector(y);
      for (std::size_t i = 0; i < p; ++i)
        for (std::size_t j = 0; j < q; ++j)
          for (std::size_t k = 0; k < r; ++k)
            REQUIRE(got[at(i, j, k)] == Approx(want(i, j, k)).epsilon(1e-14).margin(1e-14));
    };
    SECTION("every operand walks: dense rows") {
      check(kax::tanh(x + v) * w, [&](auto i, auto j, auto k) { return std::tanh(xv[at(i, j, k)] + vv[k]) * wv[j * r + k]; });
      check(kax::where(x > 0.0, x + v, x * w), [&](auto i, auto j, auto k) {
        const double e = xv[at(i, j, k)];
        return e > 0 ? e + vv[k] : e * wv[j * r + k];
      });
    }
    SECTION("one operand held along the row") {
      check(x * u + v, [&](auto i, auto j, auto k) { return xv[at(i, j, k)] * uv[j] + vv[k]; });
      check(kax::where(x > 0.0, x + v, u + 0.0 * x),
            [&](auto i, auto j, auto k) { return xv[at(i, j, k)] > 0 ? xv[at(i, j, k)] + vv[k] : uv[j]; });
    }
    SECTION("concatenations: rows from one operand, and rows split between operands") {
      const auto whole = kax::concatenate(std::make_tuple(kax::slice(x, {kax::range(0, 1)}), kax::slice(x, {kax::range(1, static_cast<long>(p))})), 0);
      check(whole + v, [&](auto i, auto j, auto k) { return xv[at(i, j, k)] + vv[k]; });
      if (r > 1) {
        const auto split = kax::concatenate(std::make_tuple(kax::slice(x, {kax::colon, kax::colon, kax::range(0, 1)}),
                                                            kax::slice(x, {kax::colon, kax::colon, kax::range(1, static_cast<long>(r))})),
                                            2);
        check(split * v, [&](auto i, auto j, auto k) { return xv[at(i, j, k)] * vv[k]; });
      }
    }
    SECTION("random numbers fused with a walking operand") {
      const auto key = kax::random::key(5);
      const kax::Array<double, 3> noise = kax::random::uniform<double>(key, kax::shape<3>{p, q, r});
      const auto nv = kax::to_vector(noise);
      check(kax::random::uniform<double>(key, kax::shape<3>{p, q, r}) + v,
            [&](auto i, auto j, auto k) { return nv[at(i, j, k)] + vv[k]; });
    }
  }
}
