// kax::nn against NumPy references (scripts/gen_nn_data.py writes tests/data/nn_*.txt) and naive
// loops: activations, softmax / log_softmax / logsumexp, their numerical stability, and how many
// kernels each launches (counted through Kokkos Tools callbacks).
#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../expr/data_file.hpp"
#include "kax/kax.hpp"
#include "kax/nn.hpp"
#include "kax/nn/detail/erf.hpp"
#include "support/launch_counter.hpp"

namespace {

using kax_test::launch_counter;
using kax_test::starts_with;

// Relative tolerance and absolute floor per dtype: the inputs are exact in float32, so float
// results differ from the float64 references only by float arithmetic.
template <class T>
constexpr double rel_tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
template <class T>
constexpr double abs_tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;

template <class T, std::size_t R>
void require_close(const kax::Array<T, R>& got, const std::string& name) {
  const kax_test::data_file d = kax_test::read_data(name);
  INFO("reference file " << name);
  REQUIRE(d.shape.size() == R);
  for (std::size_t k = 0; k < R; ++k) REQUIRE(got.extent(k) == d.shape[k]);
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == d.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("flat index " << i << ": got " << v[i] << ", want " << d.values[i]);
    REQUIRE(std::abs(static_cast<double>(v[i]) - d.values[i]) <=
            abs_tol<T> + rel_tol<T> * std::abs(d.values[i]));
  }
}

// Whether evaluating `f` on the calling thread raises overflow, invalid or divide-by-zero.
template <class F>
bool raises_fp_exception(F&& f) {
  std::feclearexcept(FE_ALL_EXCEPT);
  f();
  return std::fetestexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO) != 0;
}

const double inf = std::numeric_limits<double>::infinity();

}  // namespace

// ---- activations --------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("relu, sigmoid, silu and both gelu variants match jax.nn's formulas",
                   "[nn][activations]", float, double) {
  using T = TestType;
  const auto x = kax_test::load<T, 1>("nn_act_x");
  require_close(kax::Array<T, 1>(kax::nn::relu(x)), "nn_relu");
  require_close(kax::Array<T, 1>(kax::nn::sigmoid(x)), "nn_sigmoid");
  require_close(kax::Array<T, 1>(kax::nn::silu(x)), "nn_silu");
  require_close(kax::Array<T, 1>(kax::nn::gelu(x)), "nn_gelu_tanh");
  require_close(kax::Array<T, 1>(kax::nn::gelu(x, true)), "nn_gelu_tanh");
  require_close(kax::Array<T, 1>(kax::nn::gelu(x, false)), "nn_gelu_erf");
}

TEMPLATE_TEST_CASE("activations of a transposed, broadcast operand match naive loops",
                   "[nn][activations]", float, double) {
  using T = TestType;
  const std::size_t R = 9, C = 13;
  std::vector<T> v(R * C);
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<T>(-6.0 + 0.1 * static_cast<double>(k));
  const auto a = kax::from<T, 2>(v, {R, C});
  const auto shift = kax::from<T>(std::vector<T>(R, T(0.25)));
  // transpose(a) + shift is (C, R) and strided: the kernels take the multi-index path.
  const kax::Array<T, 2> g_tanh = kax::nn::gelu(kax::transpose(a) + shift);
  const kax::Array<T, 2> g_erf = kax::nn::gelu(kax::transpose(a) + shift, false);
  const kax::Array<T, 2> s = kax::nn::silu(kax::transpose(a) + shift);
  const kax::Array<T, 2> r = kax::nn::relu(kax::transpose(a) + shift);
  for (std::size_t i = 0; i < C; ++i)
    for (std::size_t j = 0; j < R; ++j) {
      const long double z = static_cast<long double>(a(j, i) + shift(j));
      const long double sig = 1.0L / (1.0L + std::exp(-z));
      const long double k = std::sqrt(2.0L / 3.14159265358979323846L);
      const long double want_tanh = 0.5L * z * (1.0L + std::tanh(k * (z + 0.044715L * z * z * z)));
      const long double want_erf = 0.5L * z * (1.0L + std::erf(z / std::sqrt(2.0L)));
      INFO("x = " << static_cast<double>(z));
      REQUIRE(std::abs(g_tanh(i, j) - want_tanh) <= abs_tol<T> + rel_tol<T> * std::abs(want_tanh));
      REQUIRE(std::abs(g_erf(i, j) - want_erf) <= abs_tol<T> + rel_tol<T> * std::abs(want_erf));
      REQUIRE(std::abs(s(i, j) - z * sig) <= abs_tol<T> + rel_tol<T> * std::abs(z * sig));
      REQUIRE(r(i, j) == (z > 0 ? static_cast<T>(z) : T(0)));
    }
}

TEMPLATE_TEST_CASE("gelu's exact form tracks libm's erf to a few ulp over [-9, 9]",
                   "[nn][activations]", float, double) {
  // kax's host erf is glibc's libmvec or its own polynomial (nn/detail/erf.hpp), both within
  // 2.5 ulp.  Through gelu, an erf error of k ulp of 1 shows up as |x| * k * eps / 2, plus the
  // rounding of the product.
  using T = TestType;
  const std::size_t n = 200001;
  std::vector<T> v(n);
  for (std::size_t k = 0; k < n; ++k)
    v[k] = static_cast<T>(-9.0 + 18.0 * static_cast<double>(k) / (n - 1));
  const auto x = kax::from<T>(v);
  const std::vector<T> exact = kax::to_vector(kax::eval(kax::nn::gelu(x, false)));
  const std::vector<T> approx = kax::to_vector(kax::eval(kax::nn::gelu(x, true)));
  const std::vector<T> approx_default = kax::to_vector(kax::eval(kax::nn::gelu(x)));
  const double eps = std::numeric_limits<T>::epsilon();
  double worst = 0;  // error / (3 eps (|x| + |gelu|)), must stay <= 1
  T worst_x = 0;
  bool same_tanh_form = true;
  for (std::size_t k = 0; k < n; ++k) {
    const long double z = v[k];
    const long double want = z * (std::erf(z / std::sqrt(2.0L)) + 1.0L) / 2.0L;
    const double r = static_cast<double>(std::abs(exact[k] - want) /
                                         (3 * eps * (std::abs(z) + std::abs(want))));
    if (!(r <= worst)) worst = r, worst_x = v[k];  // NaN is recorded too
    same_tanh_form = same_tanh_form && approx[k] == approx_default[k];
  }
  INFO("worst at x = " << worst_x);
  REQUIRE(worst <= 1.0);
  REQUIRE(same_tanh_form);  // the run-time flag selects the same tanh form as gelu(x)
}

TEMPLATE_TEST_CASE("kax's branch-free erf (the fallback without libmvec) is within 2.5 ulp",
                   "[nn][activations]", float, double) {
  // erf_simd is what hosts without glibc's vector erf run (clang, other C libraries), so it is
  // checked here directly, against long double erfl, on [-7, 7] and at the special values.
  using T = TestType;
  const std::size_t n = 400001;
  double worst = 0;
  T worst_x = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const T x = static_cast<T>(-7.0 + 14.0 * static_cast<double>(k) / (n - 1));
    const long double want = std::erf(static_cast<long double>(x));
    const T w = static_cast<T>(want);
    const T ulp = w == 0 ? std::numeric_limits<T>::denorm_min()
                         : std::nextafter(std::abs(w), T(2)) - std::abs(w);
    const double err = static_cast<double>(std::abs(kax::nn::detail::erf_simd(x) - want) / ulp);
    if (!(err <= worst)) worst = err, worst_x = x;
  }
  INFO("worst at x = " << worst_x);
  REQUIRE(worst <= 2.5);
  const T i = std::numeric_limits<T>::infinity();
  REQUIRE(kax::nn::detail::erf_simd(i) == T(1));
  REQUIRE(kax::nn::detail::erf_simd(-i) == T(-1));
  REQUIRE(kax::nn::detail::erf_simd(T(30)) == T(1));
  REQUIRE(std::signbit(kax::nn::detail::erf_simd(T(-0.0))));
  REQUIRE(std::isnan(kax::nn::detail::erf_simd(std::numeric_limits<T>::quiet_NaN())));
}

TEST_CASE("gelu's tanh approximation and exact erf form differ, by less than 1e-3",
          "[nn][activations]") {
  const auto x = kax_test::load<double, 1>("nn_act_x");
  const kax::Array<double, 0> gap = kax::max(kax::abs(kax::nn::gelu(x) - kax::nn::gelu(x, false)));
  REQUIRE(gap() > 1e-5);  // the flag really selects the other formula
  REQUIRE(gap() < 1e-3);
}

TEMPLATE_TEST_CASE("sigmoid is exactly 0 and 1 at -1000 and 1000, with no overflow or NaN",
                   "[nn][activations][stability]", float, double) {
  using T = TestType;
  const auto x = kax::from<T>(std::vector<T>{T(-1000), T(-50), T(0), T(50), T(1000)});
  // On Serial the kernel runs on this thread, whose floating-point flags we can read.  Its
  // results live in host memory (also on a GPU build).
  decltype(kax::eval(Kokkos::Serial{}, kax::nn::sigmoid(x))) s, w;
  const bool raised = raises_fp_exception([&] {
    s = kax::eval(Kokkos::Serial{}, kax::nn::sigmoid(x));
    w = kax::eval(Kokkos::Serial{}, kax::nn::silu(x));
  });
  REQUIRE_FALSE(raised);
  REQUIRE(s(0) == T(0));
  REQUIRE(s(2) == T(0.5));
  REQUIRE(s(4) == T(1));
  REQUIRE(s(3) == T(1));
  // e^-50 / (1 + e^-50) keeps full relative accuracy (1 - 1 / (1 + e^-50) would round to 0).
  const double eps = std::numeric_limits<T>::epsilon();
  REQUIRE(std::abs(static_cast<double>(s(1)) - std::exp(-50.0)) <= 4 * eps * std::exp(-50.0));
  REQUIRE(w(0) == T(0));
  REQUIRE(w(4) == T(1000));
  // The check above can see an overflow: the naive formula raises one.
  volatile double big = 1000.0;
  REQUIRE(raises_fp_exception([&] { volatile double y = 1.0 / (1.0 + std::exp(big)); (void)y; }));
}

TEST_CASE("relu keeps integer dtypes and sigmoid of integers computes in float64",
          "[nn][activations]") {
  const auto i = kax::from<std::int32_t>(std::vector<std::int32_t>{-3, 0, 4});
  const auto r = kax::eval(kax::nn::relu(i));
  STATIC_REQUIRE(std::is_same_v<decltype(r), const kax::Array<std::int32_t, 1>>);
  REQUIRE(kax::to_vector(r) == std::vector<std::int32_t>{0, 0, 4});
  const auto s = kax::eval(kax::nn::sigmoid(i));
  STATIC_REQUIRE(std::is_same_v<decltype(s), const kax::Array<double, 1>>);
  REQUIRE(s(2) == Approx(1.0 / (1.0 + std::exp(-4.0))).epsilon(1e-15));
  STATIC_REQUIRE(std::is_same_v<kax::value_type_of<decltype(kax::nn::gelu(i))>, double>);
}

TEST_CASE("relu and sigmoid propagate NaN", "[nn][activations]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = kax::from<double>(std::vector<double>{nan, 1.0});
  REQUIRE(std::isnan(kax::eval(kax::nn::relu(x))(0)));
  REQUIRE(std::isnan(kax::eval(kax::nn::sigmoid(x))(0)));
  REQUIRE(std::isnan(kax::eval(kax::nn::gelu(x, false))(0)));
}

TEST_CASE("each activation, and a chain of them with arithmetic, is one fused kernel",
          "[nn][activations][fusion]") {
  const auto x = kax_test::load<float, 2>("nn_x");
  auto y = kax::zeros<float>(4, 7);
  const auto check_one_kernel = [&](const auto& expr) {
    REQUIRE_THAT(kax::plan_of(expr), Catch::StartsWith("1 kernel, 0 temporaries"));
    launch_counter count;
    y = expr;
    REQUIRE(count.kernels == 1);
    REQUIRE(count.allocations == 0);
    REQUIRE(starts_with(count.labels.at(0), "kax::eval<elementwise,"));
  };
  check_one_kernel(kax::nn::relu(x));
  check_one_kernel(kax::nn::sigmoid(x));
  check_one_kernel(kax::nn::silu(x));
  check_one_kernel(kax::nn::gelu(x));
  check_one_kernel(kax::nn::gelu(x, false));
  const auto xt = kax::transpose(kax::transpose(x));
  check_one_kernel(kax::nn::gelu(kax::nn::silu(x * 0.5f) + kax::nn::relu(xt), false));
  // The last one, checked element by element.
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 7; ++j) {
      const double v = x(i, j) * 0.5;
      const double z = v / (1.0 + std::exp(-v)) + std::max(0.0, static_cast<double>(x(i, j)));
      const double want = 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
      REQUIRE(y(i, j) == Approx(want).epsilon(1e-5).margin(1e-5));
    }
}

// ---- softmax, log_softmax -----------------------------------------------------------------------

TEMPLATE_TEST_CASE("softmax and log_softmax along axis -1 and 0 match the stable NumPy formula",
                   "[nn][softmax]", float, double) {
  using T = TestType;
  const auto x = kax_test::load<T, 2>("nn_x");  // rows near 0, +1000, -1000, and wide
  require_close(kax::Array<T, 2>(kax::nn::softmax(x)), "nn_softmax_last");
  require_close(kax::Array<T, 2>(kax::nn::softmax(x, -1)), "nn_softmax_last");
  require_close(kax::Array<T, 2>(kax::nn::softmax(x, 1)), "nn_softmax_last");
  require_close(kax::Array<T, 2>(kax::nn::softmax(x, 0)), "nn_softmax_axis0");
  require_close(kax::Array<T, 2>(kax::nn::softmax(x, -2)), "nn_softmax_axis0");
  require_close(kax::Array<T, 2>(kax::nn::log_softmax(x)), "nn_log_softmax_last");
  require_close(kax::Array<T, 2>(kax::nn::log_softmax(x, 0)), "nn_log_softmax_axis0");
}

TEMPLATE_TEST_CASE("softmax of rows near 1000, where a naive exp overflows, sums to one",
                   "[nn][softmax][stability]", float, double) {
  using T = TestType;
  const auto x = kax_test::load<T, 2>("nn_x");
  // The naive formula on row 1 (x ~ 1000) is inf / inf even in double.
  double naive_sum = 0;
  for (std::size_t j = 0; j < 7; ++j) naive_sum += std::exp(static_cast<double>(x(1, j)));
  REQUIRE(std::isnan(std::exp(static_cast<double>(x(1, 0))) / naive_sum));
  const kax::Array<T, 2> p = kax::nn::softmax(x);
  for (std::size_t i = 0; i < 4; ++i) {
    // Naive loop with the max subtracted, in long double.
    long double m = -INFINITY, sum = 0;
    for (std::size_t j = 0; j < 7; ++j) m = std::max<long double>(m, x(i, j));
    for (std::size_t j = 0; j < 7; ++j) sum += std::exp(static_cast<long double>(x(i, j)) - m);
    double total = 0;
    for (std::size_t j = 0; j < 7; ++j) {
      const long double want = std::exp(static_cast<long double>(x(i, j)) - m) / sum;
      REQUIRE(std::isfinite(p(i, j)));
      REQUIRE(std::abs(p(i, j) - want) <= abs_tol<T> + rel_tol<T> * want);
      total += p(i, j);
    }
    REQUIRE(total == Approx(1.0).epsilon(10 * rel_tol<T>));
  }
}

TEST_CASE("softmax launches three kernels (max, sum, output) and allocates nothing when reused",
          "[nn][softmax][fusion]") {
  const auto x = kax_test::load<float, 2>("nn_x");
  auto y = kax::zeros<float>(4, 7);
  for (const long axis : {-1L, 0L}) {
    // Built once: the stage buffers of max and sum are allocated here, not per evaluation.
    const auto sm = kax::nn::softmax(x * 1.0f, axis);
    REQUIRE_THAT(kax::plan_of(sm), Catch::StartsWith("3 kernels, 2 temporaries"));
    for (int round = 0; round < 2; ++round) {
      launch_counter count;
      y = sm;
      REQUIRE(count.kernels == 3);
      REQUIRE(count.allocations == 0);
      REQUIRE(starts_with(count.labels.at(0), "kax::reduce<max,"));
      REQUIRE(starts_with(count.labels.at(1), "kax::reduce<sum,"));
      REQUIRE(starts_with(count.labels.at(2), "kax::eval<elementwise,"));
    }
    require_close(y, axis == 0 ? "nn_softmax_axis0" : "nn_softmax_last");
  }
  // log_softmax and logsumexp: the same three stages.  (Built outside the counter: building a
  // reduction node initializes its stage buffer's stamp, which Kokkos may do with a kernel.)
  const auto ls = kax::nn::log_softmax(x);
  const auto lse = kax::nn::logsumexp(x);
  const auto lse1 = kax::nn::logsumexp(x, 1);
  REQUIRE_THAT(kax::plan_of(ls), Catch::StartsWith("3 kernels, 2 temporaries"));
  REQUIRE_THAT(kax::plan_of(lse), Catch::StartsWith("3 kernels, 2 temporaries"));
  REQUIRE_THAT(kax::plan_of(lse1), Catch::StartsWith("3 kernels, 2 temporaries"));
  launch_counter count;
  kax::Array<float, 2> l = ls;
  REQUIRE(count.kernels == 3);
  kax::Array<float, 0> s = lse;
  REQUIRE(count.kernels == 6);
  kax::Array<float, 1> s1 = lse1;
  REQUIRE(count.kernels == 9);
  REQUIRE(count.allocations == 3);  // the three results, nothing else
  require_close(l, "nn_log_softmax_last");
  require_close(s, "nn_logsumexp_all");
  require_close(s1, "nn_logsumexp_1");
}

TEST_CASE("softmax of rank 1 and along the middle axis of rank 3 matches a naive loop",
          "[nn][softmax]") {
  const auto v = kax::from<double>(std::vector<double>{3.0, -1.0, 0.5, 2.0});
  const kax::Array<double, 1> p1 = kax::nn::softmax(v);
  const double z = std::exp(3.0) + std::exp(-1.0) + std::exp(0.5) + std::exp(2.0);
  REQUIRE(p1(0) == Approx(std::exp(3.0) / z).epsilon(1e-14));
  REQUIRE(p1(1) == Approx(std::exp(-1.0) / z).epsilon(1e-14));
  // (2, 3, 9) along axis 1: the last axis is kept and >= 8 wide, so the reductions take the
  // column-vectorized ("outer") traversal.
  std::vector<double> d(2 * 3 * 9);
  for (std::size_t k = 0; k < d.size(); ++k) d[k] = 10.0 * std::sin(1.7 * static_cast<double>(k));
  const auto x = kax::from<double, 3>(d, {2, 3, 9});
  const kax::Array<double, 3> p = kax::nn::softmax(x, 1);
  const kax::Array<double, 3> l = kax::nn::log_softmax(x, -2);
  const kax::Array<double, 2> s = kax::nn::logsumexp(x, 1);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t k = 0; k < 9; ++k) {
      double m = -inf, sum = 0;
      for (std::size_t j = 0; j < 3; ++j) m = std::max(m, x(i, j, k));
      for (std::size_t j = 0; j < 3; ++j) sum += std::exp(x(i, j, k) - m);
      REQUIRE(s(i, k) == Approx(m + std::log(sum)).epsilon(1e-14));
      for (std::size_t j = 0; j < 3; ++j) {
        REQUIRE(p(i, j, k) == Approx(std::exp(x(i, j, k) - m) / sum).epsilon(1e-13).margin(1e-300));
        REQUIRE(l(i, j, k) == Approx(x(i, j, k) - m - std::log(sum)).epsilon(1e-13).margin(1e-14));
      }
    }
}

TEST_CASE("a softmax expression re-reads its input on every evaluation", "[nn][softmax]") {
  auto x = kax::from<double, 2>({0.0, 1.0, 2.0, 3.0}, {2, 2});
  const auto sm = kax::nn::softmax(x);
  kax::Array<double, 2> first = sm;
  REQUIRE(first(0, 1) == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-14));
  x(0, 1) = 5.0;  // a new max for row 0: the stale max would give exp(4) / ...
  kax::Array<double, 2> second = sm;
  REQUIRE(second(0, 1) == Approx(1.0 / (1.0 + std::exp(-5.0))).epsilon(1e-14));
  REQUIRE(second(1, 0) == Approx(first(1, 0)).epsilon(1e-15));
}

TEST_CASE("softmax of -inf entries gives 0 there, and of an all -inf row NaN as in JAX",
          "[nn][softmax][stability]") {
  const auto x = kax::from<double, 2>({-inf, 0.0, -inf, -inf, -inf, -inf}, {2, 3});
  const kax::Array<double, 2> p = kax::nn::softmax(x);
  REQUIRE(p(0, 0) == 0.0);
  REQUIRE(p(0, 1) == 1.0);
  REQUIRE(p(0, 2) == 0.0);
  for (std::size_t j = 0; j < 3; ++j) REQUIRE(std::isnan(p(1, j)));  // (-inf) - (-inf)
  const kax::Array<double, 2> l = kax::nn::log_softmax(x);
  REQUIRE(l(0, 0) == -inf);
  REQUIRE(l(0, 1) == 0.0);
}

TEST_CASE("softmax of integers computes in float64", "[nn][softmax]") {
  const auto i = kax::from<std::int32_t, 2>({1, 2, 3, 10, 10, 10}, {2, 3});
  const auto p = kax::eval(kax::nn::softmax(i));
  STATIC_REQUIRE(std::is_same_v<decltype(p), const kax::Array<double, 2>>);
  const double z = 1.0 + std::exp(1.0) + std::exp(2.0);
  REQUIRE(p(0, 0) == Approx(1.0 / z).epsilon(1e-15));
  REQUIRE(p(0, 2) == Approx(std::exp(2.0) / z).epsilon(1e-15));
  REQUIRE(p(1, 1) == Approx(1.0 / 3.0).epsilon(1e-15));
}

TEST_CASE("softmax over an axis of extent 0 is empty rather than an error, as in JAX",
          "[nn][softmax]") {
  const auto x = kax::zeros<float>(3, 0);
  const kax::Array<float, 2> p = kax::nn::softmax(x);
  REQUIRE(p.extents() == kax::shape<2>{3, 0});
  const kax::Array<float, 1> l = kax::nn::logsumexp(x, 1);
  REQUIRE(l.extents() == kax::shape<1>{3});
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(l(i) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("softmax and logsumexp reject bad axes with kax::axis_error naming the function",
          "[nn][softmax][errors]") {
  const auto x = kax::zeros<float>(4, 7);
  REQUIRE_THROWS_AS(kax::nn::softmax(x, 2), kax::axis_error);
  REQUIRE_THROWS_WITH(kax::nn::softmax(x, -3),
                      Catch::Contains("kax::nn::softmax") && Catch::Contains("-3"));
  REQUIRE_THROWS_WITH(kax::nn::log_softmax(x, 5), Catch::Contains("kax::nn::log_softmax"));
  REQUIRE_THROWS_WITH(kax::nn::logsumexp(x, 0, -2), Catch::Contains("kax::nn::logsumexp") &&
                                                        Catch::Contains("duplicate"));
  REQUIRE_THROWS_AS(kax::nn::logsumexp(x, 2, kax::keepdims), kax::axis_error);
}

// ---- logsumexp ----------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("logsumexp over all axes, one axis, kept axes and two axes matches NumPy",
                   "[nn][logsumexp]", float, double) {
  using T = TestType;
  const auto x = kax_test::load<T, 2>("nn_x");
  require_close(kax::Array<T, 0>(kax::nn::logsumexp(x)), "nn_logsumexp_all");
  require_close(kax::Array<T, 1>(kax::nn::logsumexp(x, 1)), "nn_logsumexp_1");
  require_close(kax::Array<T, 1>(kax::nn::logsumexp(x, -1)), "nn_logsumexp_1");
  require_close(kax::Array<T, 2>(kax::nn::logsumexp(x, 0, kax::keepdims)), "nn_logsumexp_0_keep");
  const auto x3 = kax_test::load<T, 3>("nn_x3");
  require_close(kax::Array<T, 1>(kax::nn::logsumexp(x3, 0, -1)), "nn_logsumexp_0_m1");
  require_close(kax::Array<T, 1>(kax::nn::logsumexp(x3, -1, 0)), "nn_logsumexp_0_m1");
  // keepdims over every axis: shape (1, 1), same value as the rank-0 result.
  const kax::Array<T, 2> k = kax::nn::logsumexp(x, kax::keepdims);
  REQUIRE(k.extents() == kax::shape<2>{1, 1});
  const double want = kax_test::read_data("nn_logsumexp_all").values.at(0);
  REQUIRE(std::abs(k(0, 0) - want) <= rel_tol<T> * std::abs(want));
}

TEMPLATE_TEST_CASE("logsumexp of an all -inf row is -inf, with +inf is +inf, NaN stays NaN",
                   "[nn][logsumexp][stability]", float, double) {
  using T = TestType;
  const T i = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const auto x = kax::from<T, 2>({-i, -i, -i,          // JAX: -inf (not NaN)
                                  T(1), i, T(2),       // +inf
                                  T(1), nan, T(2),     // NaN
                                  -i, T(3), T(1000)},  // -inf entries contribute 0
                                 {4, 3});
  const kax::Array<T, 1> l = kax::nn::logsumexp(x, 1);
  REQUIRE(l(0) == -i);
  REQUIRE(l(1) == i);
  REQUIRE(std::isnan(l(2)));
  REQUIRE(l(3) == Approx(1000.0 + std::log1p(std::exp(-997.0))).epsilon(rel_tol<T>));
  const kax::Array<T, 2> kept = kax::nn::logsumexp(x, -1, kax::keepdims);
  REQUIRE(kept(0, 0) == -i);
  REQUIRE(kept(1, 0) == i);
}
