#include <kax/expr/detail/vector_math.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace vm = kax::detail::vmath;

namespace {

template <class T>
using uint_of = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

// Size of one unit in the last place of T at the magnitude of `ref`.
template <class T>
long double ulp_at(long double ref) {
  ref = std::fabs(ref);
  if (ref < static_cast<long double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::denorm_min();
  }
  int e = 0;
  std::frexp(ref, &e);
  return std::ldexp(1.0L, e - std::numeric_limits<T>::digits);
}

template <class T>
struct worst_case {
  double ulps = 0;
  T x = 0;
  T got = 0;
  long double want = 0;
};

// Error is taken against the unrounded long double value, so it is at least
// 0.5 ulp larger than the error against the correctly rounded result can be.
template <class T, class F, class R>
worst_case<T> max_ulp_error(const std::vector<T>& xs, F f, R ref) {
  worst_case<T> w;
  for (T x : xs) {
    const T got = f(x);
    const long double want = ref(static_cast<long double>(x));
    double err = 0;
    if (std::isinf(want) || std::isinf(got)) {
      // An overflowing reference must be matched exactly; the reference may
      // be finite just above max() yet round to inf in T.
      const T rounded = static_cast<T>(want);
      err = got == rounded ? 0.0 : 1e9;
    } else if (std::isnan(want) || std::isnan(got)) {
      err = std::isnan(want) && std::isnan(got) ? 0.0 : 1e9;
    } else {
      err = static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp_at<T>(want));
    }
    if (err > w.ulps) w = {err, x, got, want};
  }
  return w;
}

// Deterministic points: every `stride`-th bit pattern between lo and hi (same
// sign), which samples each binade evenly, plus an even linear sweep.
template <class T>
std::vector<T> sample(T lo, T hi, std::size_t n_bits, std::size_t n_linear) {
  std::vector<T> xs;
  auto add_bit_sweep = [&](T a, T b) {  // 0 <= a < b
    const auto ua = std::bit_cast<uint_of<T>>(a);
    const auto ub = std::bit_cast<uint_of<T>>(b);
    const uint_of<T> stride = std::max<uint_of<T>>(1, (ub - ua) / n_bits);
    for (uint_of<T> u = ua; u <= ub && u >= ua; u += stride) xs.push_back(std::bit_cast<T>(u));
    xs.push_back(b);
  };
  if (n_bits > 0 && hi > 0) add_bit_sweep(std::max(lo, T(0)), hi);
  if (n_bits > 0 && lo < 0) {
    const std::size_t start = xs.size();
    add_bit_sweep(std::max(-hi, T(0)), -lo);
    for (std::size_t i = start; i < xs.size(); ++i) xs[i] = -xs[i];
  }
  for (std::size_t i = 0; n_linear > 0 && i <= n_linear; ++i) {
    xs.push_back(static_cast<T>(lo + (static_cast<long double>(hi) - lo) * i / n_linear));
  }
  return xs;
}

// Representable values nearest to j * pi/2, where sin or cos cancels hardest.
template <class T>
std::vector<T> near_multiples_of_half_pi(long double max_x, long double stride) {
  const long double half_pi = 1.570796326794896619231321691639751442L;
  std::vector<T> xs;
  for (long double j = 1; j * half_pi <= max_x; j += stride) {
    const T x = static_cast<T>(j * half_pi);
    for (T v : {x, std::nextafter(x, T(0)), std::nextafter(x, std::numeric_limits<T>::max())}) {
      if (v <= max_x) {
        xs.push_back(v);
        xs.push_back(-v);
      }
    }
  }
  return xs;
}

template <class T>
void check_max_ulp(const worst_case<T>& w, double bound) {
  INFO("max error " << w.ulps << " ulp at x = " << static_cast<double>(w.x) << " (got "
                    << static_cast<double>(w.got) << ", want " << static_cast<double>(w.want)
                    << ")");
  CHECK(w.ulps <= bound);
}

template <class T> constexpr T pinf = std::numeric_limits<T>::infinity();
template <class T> constexpr T qnan = std::numeric_limits<T>::quiet_NaN();

template <class T>
bool is_neg_zero(T x) {
  return x == 0 && std::signbit(x);
}
template <class T>
bool is_pos_zero(T x) {
  return x == 0 && !std::signbit(x);
}

auto ref_exp = [](long double x) { return std::exp(x); };
auto ref_expm1 = [](long double x) { return std::expm1(x); };
auto ref_log = [](long double x) { return std::log(x); };
auto ref_log1p = [](long double x) { return std::log1p(x); };
auto ref_sin = [](long double x) { return std::sin(x); };
auto ref_cos = [](long double x) { return std::cos(x); };
auto ref_tanh = [](long double x) { return std::tanh(x); };

constexpr std::size_t n_bits = 400000;
constexpr std::size_t n_linear = 200000;

}  // namespace

TEMPLATE_TEST_CASE("vmath::exp stays within 1 ulp of the long double reference over its whole finite domain",
                   "[vmath]", float, double) {
  using T = TestType;
  const T hi = sizeof(T) == 4 ? T(89) : T(710);
  const T lo = sizeof(T) == 4 ? T(-104) : T(-746);
  const auto w = max_ulp_error(sample<T>(lo, hi, n_bits, n_linear), [](T x) { return vm::exp(x); }, ref_exp);
  check_max_ulp(w, 1.0);
}

TEMPLATE_TEST_CASE("vmath::exp matches std::exp on special and boundary values", "[vmath]", float,
                   double) {
  using T = TestType;
  // Largest argument whose exponential is still finite.
  T max_arg = std::log(std::numeric_limits<T>::max());
  while (std::isinf(std::exp(max_arg))) max_arg = std::nextafter(max_arg, T(0));
  CHECK(std::isnan(vm::exp(qnan<T>)));
  CHECK(vm::exp(pinf<T>) == pinf<T>);
  CHECK(is_pos_zero(vm::exp(-pinf<T>)));
  CHECK(vm::exp(T(0)) == T(1));
  CHECK(vm::exp(-T(0)) == T(1));
  CHECK(vm::exp(std::nextafter(max_arg, T(1000))) == std::exp(std::nextafter(max_arg, T(1000))));
  CHECK(std::isfinite(vm::exp(max_arg)));
  CHECK(vm::exp(T(1000)) == pinf<T>);
  CHECK(vm::exp(std::numeric_limits<T>::max()) == pinf<T>);
  CHECK(is_pos_zero(vm::exp(T(-1000))));
  CHECK(is_pos_zero(vm::exp(std::numeric_limits<T>::lowest())));
  // Denormal results are rounded once, like std::exp.
  const T denormal_arg = sizeof(T) == 4 ? T(-100) : T(-740);
  CHECK(vm::exp(denormal_arg) == std::exp(denormal_arg));
  CHECK(vm::exp(denormal_arg) < std::numeric_limits<T>::min());
  const T smallest_arg = std::log(std::numeric_limits<T>::denorm_min());
  CHECK(vm::exp(smallest_arg) == std::exp(smallest_arg));
}

TEMPLATE_TEST_CASE("vmath::expm1 stays within 1 ulp of the long double reference, tiny arguments included",
                   "[vmath]", float, double) {
  using T = TestType;
  const T hi = sizeof(T) == 4 ? T(89) : T(710);
  const auto w = max_ulp_error(sample<T>(T(-60), hi, n_bits, n_linear), [](T x) { return vm::expm1(x); },
                               ref_expm1);
  check_max_ulp(w, 1.0);
}

TEMPLATE_TEST_CASE("vmath::expm1 matches std::expm1 on special values", "[vmath]", float, double) {
  using T = TestType;
  CHECK(std::isnan(vm::expm1(qnan<T>)));
  CHECK(vm::expm1(pinf<T>) == pinf<T>);
  CHECK(vm::expm1(-pinf<T>) == T(-1));
  CHECK(vm::expm1(T(1000)) == pinf<T>);
  CHECK(vm::expm1(T(-1000)) == T(-1));
  CHECK(is_pos_zero(vm::expm1(T(0))));
  CHECK(is_neg_zero(vm::expm1(-T(0))));
  CHECK(vm::expm1(std::numeric_limits<T>::denorm_min()) == std::numeric_limits<T>::denorm_min());
  CHECK(vm::expm1(T(1e-30)) == T(1e-30));
}

TEMPLATE_TEST_CASE("vmath::log stays within 1 ulp of the long double reference on all positive values, denormals included",
                   "[vmath]", float, double) {
  using T = TestType;
  auto xs = sample<T>(std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max(), n_bits, 0);
  const auto near_one = sample<T>(T(0.5), T(2), n_bits / 4, n_linear);
  xs.insert(xs.end(), near_one.begin(), near_one.end());
  const auto w = max_ulp_error(xs, [](T x) { return vm::log(x); }, ref_log);
  check_max_ulp(w, 1.0);
}

TEMPLATE_TEST_CASE("vmath::log matches std::log on special values", "[vmath]", float, double) {
  using T = TestType;
  CHECK(std::isnan(vm::log(qnan<T>)));
  CHECK(vm::log(T(0)) == -pinf<T>);
  CHECK(vm::log(-T(0)) == -pinf<T>);
  CHECK(std::isnan(vm::log(T(-1))));
  CHECK(std::isnan(vm::log(-std::numeric_limits<T>::denorm_min())));
  CHECK(std::isnan(vm::log(-pinf<T>)));
  CHECK(vm::log(pinf<T>) == pinf<T>);
  CHECK(is_pos_zero(vm::log(T(1))));
  CHECK(vm::log(std::numeric_limits<T>::max()) == std::log(std::numeric_limits<T>::max()));
  CHECK(vm::log(std::numeric_limits<T>::min()) == std::log(std::numeric_limits<T>::min()));
  CHECK(vm::log(std::numeric_limits<T>::denorm_min()) ==
        std::log(std::numeric_limits<T>::denorm_min()));
}

TEMPLATE_TEST_CASE("vmath::log1p stays within 1 ulp of the long double reference on (-1, max]", "[vmath]",
                   float, double) {
  using T = TestType;
  auto xs = sample<T>(std::nextafter(T(-1), T(0)), std::numeric_limits<T>::max(), n_bits, 0);
  const auto mid = sample<T>(T(-1), T(4), 0, n_linear);
  xs.insert(xs.end(), mid.begin() + 1, mid.end());
  const auto w = max_ulp_error(xs, [](T x) { return vm::log1p(x); }, ref_log1p);
  check_max_ulp(w, 1.0);
}

TEMPLATE_TEST_CASE("vmath::log1p matches std::log1p on special values", "[vmath]", float, double) {
  using T = TestType;
  CHECK(std::isnan(vm::log1p(qnan<T>)));
  CHECK(vm::log1p(T(-1)) == -pinf<T>);
  CHECK(std::isnan(vm::log1p(T(-2))));
  CHECK(std::isnan(vm::log1p(-pinf<T>)));
  CHECK(vm::log1p(pinf<T>) == pinf<T>);
  CHECK(is_pos_zero(vm::log1p(T(0))));
  CHECK(is_neg_zero(vm::log1p(-T(0))));
  CHECK(vm::log1p(std::numeric_limits<T>::denorm_min()) == std::numeric_limits<T>::denorm_min());
  CHECK(vm::log1p(std::numeric_limits<T>::max()) == std::log1p(std::numeric_limits<T>::max()));
}

TEMPLATE_TEST_CASE("vmath::sin and vmath::cos stay within 1 ulp of the long double reference inside the documented range",
                   "[vmath]", float, double) {
  using T = TestType;
  // The documented bound: 2^27 for float, 2^20 for double.
  const T bound = sizeof(T) == 4 ? T(0x1p27) : T(0x1p20);
  auto xs = sample<T>(-bound, bound, n_bits, n_linear);
  const auto small = sample<T>(T(-1e4), T(1e4), 0, n_linear);
  xs.insert(xs.end(), small.begin(), small.end());
  // Every multiple of pi/2 for double, an evenly strided subset for float.
  const auto hard = near_multiples_of_half_pi<T>(bound, sizeof(T) == 4 ? 97.0L : 1.0L);
  xs.insert(xs.end(), hard.begin(), hard.end());
  SECTION("sin") { check_max_ulp(max_ulp_error(xs, [](T x) { return vm::sin(x); }, ref_sin), 1.0); }
  SECTION("cos") { check_max_ulp(max_ulp_error(xs, [](T x) { return vm::cos(x); }, ref_cos), 1.0); }
}

TEMPLATE_TEST_CASE("vmath::sin and vmath::cos stay finite and inside [-1, 1] beyond the accurate range",
                   "[vmath]", float, double) {
  using T = TestType;
  const auto xs = sample<T>(-std::numeric_limits<T>::max(), std::numeric_limits<T>::max(), n_bits, 1000);
  bool all_bounded = true;
  for (T x : xs) {
    const T s = vm::sin(x);
    const T c = vm::cos(x);
    all_bounded = all_bounded && std::isfinite(s) && std::isfinite(c) && std::fabs(s) <= 1 &&
                  std::fabs(c) <= 1;
  }
  CHECK(all_bounded);
}

TEMPLATE_TEST_CASE("vmath::sin and vmath::cos match std:: on special values", "[vmath]", float, double) {
  using T = TestType;
  CHECK(std::isnan(vm::sin(qnan<T>)));
  CHECK(std::isnan(vm::cos(qnan<T>)));
  CHECK(std::isnan(vm::sin(pinf<T>)));
  CHECK(std::isnan(vm::sin(-pinf<T>)));
  CHECK(std::isnan(vm::cos(pinf<T>)));
  CHECK(std::isnan(vm::cos(-pinf<T>)));
  CHECK(is_pos_zero(vm::sin(T(0))));
  CHECK(is_neg_zero(vm::sin(-T(0))));
  CHECK(vm::cos(T(0)) == T(1));
  CHECK(vm::cos(-T(0)) == T(1));
  CHECK(vm::sin(std::numeric_limits<T>::denorm_min()) == std::numeric_limits<T>::denorm_min());
  CHECK(vm::sin(-std::numeric_limits<T>::min()) == -std::numeric_limits<T>::min());
  CHECK(vm::cos(std::numeric_limits<T>::denorm_min()) == T(1));
}

TEMPLATE_TEST_CASE("vmath::tanh stays within 2 ulp of the long double reference over all finite values",
                   "[vmath]", float, double) {
  using T = TestType;
  auto xs = sample<T>(-std::numeric_limits<T>::max(), std::numeric_limits<T>::max(), n_bits, 0);
  const auto mid = sample<T>(T(-25), T(25), 0, n_linear);
  xs.insert(xs.end(), mid.begin(), mid.end());
  const auto w = max_ulp_error(xs, [](T x) { return vm::tanh(x); }, ref_tanh);
  check_max_ulp(w, 2.0);
}

TEMPLATE_TEST_CASE("vmath::tanh matches std::tanh on special values and saturates to +-1", "[vmath]", float,
                   double) {
  using T = TestType;
  CHECK(std::isnan(vm::tanh(qnan<T>)));
  CHECK(vm::tanh(pinf<T>) == T(1));
  CHECK(vm::tanh(-pinf<T>) == T(-1));
  CHECK(vm::tanh(T(50)) == T(1));
  CHECK(vm::tanh(T(-50)) == T(-1));
  CHECK(vm::tanh(std::numeric_limits<T>::max()) == T(1));
  CHECK(is_pos_zero(vm::tanh(T(0))));
  CHECK(is_neg_zero(vm::tanh(-T(0))));
  CHECK(vm::tanh(T(1e-8)) == T(1e-8));
  CHECK(vm::tanh(T(-1e-8)) == T(-1e-8));
  CHECK(vm::tanh(std::numeric_limits<T>::denorm_min()) == std::numeric_limits<T>::denorm_min());
}
