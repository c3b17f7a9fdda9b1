#pragma once
// Branch-free float/double transcendental functions for host SIMD loops.
//
// Kokkos host kernels evaluate fused elementwise expressions inside
// `#pragma omp simd` loops. Scalar libm calls (std::sin, std::exp, ...) block
// vectorization there unless -ffast-math lets glibc's libmvec step in, so
// these replacements are written as straight-line code: range reduction with
// exactly representable constant splits, Horner polynomials, integer exponent
// tricks through std::bit_cast and bitwise value selects instead of
// branches. g++-12 and clang++-14 vectorize all of them at
// -O3 -march=native -fopenmp-simd. They are meant for the host only; device
// code keeps using Kokkos' own math functions.
//
// Accuracy: max error against a long double reference, in ulp of the result
// type, measured over every 13th float bit pattern and 6e6 random doubles
// (tests/expr/test_vector_math.cpp asserts the bounds on its own sweeps):
//   function  domain                          float        double
//   exp       all x                           0.78 (<=1)   0.80 (<=1)
//   expm1     all x                           0.89 (<=1)   0.87 (<=1)
//   log       x > 0, denormals included       0.75 (<=1)   0.82 (<=1)
//   log1p     x > -1                          0.77 (<=1)   0.80 (<=1)
//   sin, cos  |x| <= 2^27 (float)             0.51 (<=1)
//             |x| <= 2^20 (double)                         0.78 (<=1)
//   tanh      all x                           1.19 (<=2)   1.12 (<=2)
// sin/cos of larger finite x stay finite and inside [-1, 1] but are not
// accurate: the Cody-Waite reduction used here is only exact up to the bounds
// above, and a Payne-Hanek reduction would not be branch free.
// Special values follow std::: NaN propagates, exp(+-inf) = inf / 0,
// overflow gives inf, underflow gives 0 or the correctly rounded denormal,
// log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, sin/cos(inf) = NaN,
// tanh(+-inf) = +-1, and signed zeros are preserved where std:: keeps them.
// The error-free transformations rely on IEEE semantics: do not compile the
// callers with -ffast-math / -fassociative-math (FMA contraction is harmless).
// Most polynomials use Taylor coefficients, verifiable at a glance for one or
// two extra terms; float log and float sin/cos use Chebyshev fits and double
// sin/cos fdlibm's published minimax fits for speed.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail::vmath {
namespace impl {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

[[gnu::always_inline]] inline u32 bits(float x) { return std::bit_cast<u32>(x); }
[[gnu::always_inline]] inline u64 bits(double x) { return std::bit_cast<u64>(x); }
[[gnu::always_inline]] inline float float_from(u32 b) { return std::bit_cast<float>(b); }
[[gnu::always_inline]] inline double double_from(u64 b) { return std::bit_cast<double>(b); }

// Adding 1.5 * 2^(digits-1) rounds to an integer (ties to even) without a
// conversion instruction and leaves that integer in the low mantissa bits.
inline constexpr float magic_f = 0x1.8p23f;
inline constexpr double magic_d = 0x1.8p52;

[[gnu::always_inline]] inline float abs(float x) { return float_from(bits(x) & 0x7fffffffu); }
[[gnu::always_inline]] inline double abs(double x) { return double_from(bits(x) & 0x7fffffffffffffffu); }

// The sign is or-ed into a non-negative magnitude.
[[gnu::always_inline]] inline float with_sign_of(float mag, float s) {
  return float_from(bits(mag) | (bits(s) & 0x80000000u));
}
[[gnu::always_inline]] inline double with_sign_of(double mag, double s) {
  return double_from(bits(mag) | (bits(s) & 0x8000000000000000u));
}

// Bitwise blend rather than `c ? a : b`: gcc would otherwise sink the work
// feeding one arm into a branch, and a branch stops vectorization.
template <class T>
[[gnu::always_inline]] inline T select(bool c, T a, T b) {
  using U = decltype(bits(a));
  const U m = U(0) - static_cast<U>(c);
  return std::bit_cast<T>((bits(a) & m) | (bits(b) & ~m));
}

// Comparisons against NaN are false, so NaN passes through unchanged.
template <class T>
[[gnu::always_inline]] inline T clamp(T x, T lo, T hi) {
  x = select(x < lo, lo, x);
  return select(x > hi, hi, x);
}

// 2^n for an integer-valued n inside the normal exponent range.
[[gnu::always_inline]] inline float pow2(float n) {
  return float_from((bits(n + magic_f) - bits(magic_f) + 127u) << 23);
}
[[gnu::always_inline]] inline double pow2(double n) {
  return double_from((bits(n + magic_d) - bits(magic_d) + 1023u) << 52);
}

// Scaling in two steps keeps both factors normal for |k| up to ~250 (float)
// or ~2000 (double), so a denormal result is rounded exactly once.
template <class T>
[[gnu::always_inline]] inline T scale_pow2(T v, T k) {
  const T magic = sizeof(T) == 4 ? T(magic_f) : T(magic_d);
  const T k1 = (k * T(0.5) + magic) - magic;
  return (v * pow2(k1)) * pow2(k - k1);
}

template <class T>
struct pair {
  T hi;
  T lo;
};

// Knuth's branch-free TwoSum: hi + lo == a + b exactly.
template <class T>
[[gnu::always_inline]] inline pair<T> two_sum(T a, T b) {
  const T s = a + b;
  const T bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

// ---- exp family: x = k ln2 + r, |r| <= ln2/2 ------------------------------

// ln2 split so that k * ln2_hi is exact for every k the callers produce.
template <class T> inline constexpr T ln2_hi = T(0x1.62e42fefa3800p-1);
template <class T> inline constexpr T ln2_lo = T(0x1.ef35793c76730p-45);
template <> inline constexpr float ln2_hi<float> = 0x1.62e4p-1f;
template <> inline constexpr float ln2_lo<float> = 0x1.7f7d1cf79abcap-20f;

template <class T>
struct reduced_ln2 {
  T r;   // x - k ln2, rounded
  T rc;  // rounding error of r
  T k;
};

template <class T>
[[gnu::always_inline]] inline reduced_ln2<T> reduce_ln2(T x) {
  const T magic = sizeof(T) == 4 ? T(magic_f) : T(magic_d);
  const T k = (x * T(0x1.71547652b82fep+0) + magic) - magic;
  const T a = x - k * ln2_hi<T>;  // exact (Sterbenz)
  const T b = k * ln2_lo<T>;
  const T r = a - b;
  return {r, (a - r) - b, k};
}

// e^r - 1 - r on |r| <= ln2/2; Taylor terms up to r^8 give < 2^-27 relative error.
[[gnu::always_inline]] inline float expm1_tail(float r) {
  float p = 1.0f / 40320;
  p = p * r + 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  return (r * r) * p;
}

// e^r - 1 - r on |r| <= ln2/2; Taylor terms up to r^14 give < 2^-56 relative error.
[[gnu::always_inline]] inline double expm1_tail(double r) {
  double p = 1.0 / 87178291200.0;
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  return (r * r) * p;
}

// e^(r + rc) - 1 - r, folding in the reduction error rc to first order.
template <class T>
[[gnu::always_inline]] inline T expm1_tail(const reduced_ln2<T>& red) {
  return expm1_tail(red.r) + red.rc * (T(1) + red.r);
}

// e^x - 1 as an unevaluated sum hi + lo; tanh uses the extra bits.
template <class T>
[[gnu::always_inline]] inline pair<T> expm1_core(T x) {
  constexpr bool is_float = sizeof(T) == 4;
  // Below the lower bound e^x - 1 has already rounded to -1.
  const T xc = clamp(x, is_float ? T(-30) : T(-40), is_float ? T(89) : T(710));
  const reduced_ln2<T> red = reduce_ln2(xc);
  const T tail = expm1_tail(red);
  // 2^k (1 + r + tail) - 1: while k fits the mantissa, 2^k - 1 and 2^k r are
  // exact, and TwoSum keeps their sum exact too, so the cancellation for
  // k = 1, r < 0 costs nothing and only the final addition rounds.
  const T s = pow2(clamp(red.k, T(-100), T(100)));
  const auto [h, e] = two_sum(s - T(1), s * red.r);
  // Past that, 1 + r is split into hi + lo and the -1 joins the low part.
  const T one_r = T(1) + red.r;
  const T one_r_lo = ((T(1) - one_r) + red.r) + tail;
  const bool big = red.k > (is_float ? T(24) : T(53));
  const T a = select(big, scale_pow2(one_r, red.k), h);
  const T b = select(big, scale_pow2(one_r_lo, red.k) - T(1), e + s * tail);
  // |a| >= |b| in both cases, so Fast2Sum applies.
  const T sum = a + b;
  return {sum, b - (sum - a)};
}

template <class T>
[[gnu::always_inline]] inline T exp_impl(T x) {
  constexpr bool is_float = sizeof(T) == 4;
  // Past these bounds the result is already 0 or inf after rounding.
  const T xc = clamp(x, is_float ? T(-104) : T(-746), is_float ? T(89) : T(710));
  const reduced_ln2<T> red = reduce_ln2(xc);
  return scale_pow2(T(1) + (red.r + expm1_tail(red)), red.k);
}

template <class T>
[[gnu::always_inline]] inline T tanh_impl(T x) {
  const T a = abs(x);
  // With t = e^(+-2a) - 1, tanh a = 1 - 2 / (t + 2) for large a, where the
  // rounding errors land in the small subtracted term, and -t / (t + 2) with
  // t = e^(-2a) - 1 for small a, which is free of cancellation.
  const bool large = a >= T(0.75);
  // tanh rounds to 1 well before a = 20 in both precisions; capping there
  // keeps t finite for the error terms below.
  const T ac = select(a > T(20), T(20), a);
  const auto [t, tl] = expm1_core(select(large, T(2), T(-2)) * ac);
  // (n + nl) / (d + dl) ~ q + (nl - q dl) / d with q = n / d: carrying the
  // low parts of t and of t + 2 removes their rounding from the quotient.
  const T d = t + T(2);
  const T dl = ((T(2) - d) + t) + tl;
  const T n = select(large, T(2), -t);
  const T nl = select(large, T(0), -tl);
  const T q = n / d;
  const T qc = q + (nl - q * dl) / d;
  T y = select(large, T(1) - qc, qc);
  // tanh x = x - x^3/3 rounds to x here; this also keeps -0 and denormals.
  y = select(a < (sizeof(T) == 4 ? T(0x1p-12) : T(0x1p-27)), a, y);
  return with_sign_of(y, x);
}

// ---- log family: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1 -----------

// log(1+f) - f + f^2/2 for float, as f^3 P(f): P is a degree-8 Chebyshev fit
// on [sqrt(1/2)-1, sqrt(2)-1] (|error in P| < 3e-8), which spares the division
// that the atanh form below needs; float log is otherwise division bound.
[[gnu::always_inline]] inline float log1p_tail(float f) {
  float p = 0x1.1d8ea50b3f8a0p-4f;
  p = p * f - 0x1.d635bbe618494p-4f;
  p = p * f + 0x1.dea28241d30a8p-4f;
  p = p * f - 0x1.fcf4c673064efp-4f;
  p = p * f + 0x1.23d2196ef7977p-3f;
  p = p * f - 0x1.555b4994ad12bp-3f;
  p = p * f + 0x1.999d5a430bf46p-3f;
  p = p * f - 0x1.fffffbeac287ap-3f;
  p = p * f + 0x1.555553e3660dap-2f;
  return f * (f * f) * p;
}

// For double, log(1+f) = f - f^2/2 + s (f^2/2 + R) with s = f / (2 + f) and
// R = sum_i 2 s^2i / (2i+1); this returns s R (11 Taylor terms, |s| <= 0.172).
[[gnu::always_inline]] inline double atanh_tail(double s) {
  const double z = s * s;
  double r = 2.0 / 23;
  r = r * z + 2.0 / 21;
  r = r * z + 2.0 / 19;
  r = r * z + 2.0 / 17;
  r = r * z + 2.0 / 15;
  r = r * z + 2.0 / 13;
  r = r * z + 2.0 / 11;
  r = r * z + 2.0 / 9;
  r = r * z + 2.0 / 7;
  r = r * z + 2.0 / 5;
  r = r * z + 2.0 / 3;
  return s * (z * r);
}

// log(x) + corr for finite x > 0; log1p passes the rounding error of 1 + x
// as corr so it enters below the leading terms.
[[gnu::always_inline]] inline float log_core(float x, float corr) {
  const bool denormal = x < std::numeric_limits<float>::min();
  x = select(denormal, x * 0x1p23f, x);
  // Offsetting by sqrt(1/2) makes the exponent field round m into [sqrt(1/2), sqrt(2)).
  const u32 ix = bits(x) + (0x3f800000u - 0x3f3504f3u);
  const float k = static_cast<float>(static_cast<std::int32_t>(ix >> 23) - 127) -
                  select(denormal, 23.0f, 0.0f);
  const float f = float_from((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  const float hfsq = 0.5f * f * f;
  const float tail = log1p_tail(f);
  return k * ln2_hi<float> - ((hfsq - (tail + (k * ln2_lo<float> + corr))) - f);
}

[[gnu::always_inline]] inline double log_core(double x, double corr) {
  const bool denormal = x < std::numeric_limits<double>::min();
  x = select(denormal, x * 0x1p54, x);
  const u64 ix = bits(x) + (0x3ff0000000000000u - 0x3fe6a09e667f3bcdu);
  // Exponent to double without an int64 conversion (needs AVX-512DQ otherwise).
  const double k = double_from(bits(magic_d) + (ix >> 52)) - (magic_d + 1023.0) -
                   select(denormal, 54.0, 0.0);
  const double f = double_from((ix & 0x000fffffffffffffu) + 0x3fe6a09e667f3bcdu) - 1.0;
  const double hfsq = 0.5 * f * f;
  const double s = f / (2.0 + f);
  const double tail = atanh_tail(s) + s * hfsq;
  return k * ln2_hi<double> - ((hfsq - (tail + (k * ln2_lo<double> + corr))) - f);
}

// Maps the non-finite / non-positive inputs of log(u) onto std::log's results.
template <class T>
[[gnu::always_inline]] inline T log_specials(T u, T y) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  const auto ub = bits(u);
  // One unsigned compare on the bits finds every finite u > 0.
  const bool regular = ub - 1u < bits(inf) - 1u;
  T special = select(ub == bits(inf), inf, std::numeric_limits<T>::quiet_NaN());
  special = select(u == T(0), -inf, special);
  return select(regular, y, special);
}

// ---- sin / cos: x = j pi/2 + r, |r| <= pi/4 ------------------------------

// Float sin/cos reduce and evaluate in double: a 26+26+53 bit split of pi/2
// keeps j * part exact for j < 2^27, and double leaves ample slack for 1 ulp.
[[gnu::always_inline]] inline float sincos_float(float xf, u64 quadrant_shift) {
  const double x = static_cast<double>(xf);
  const double t = x * 0x1.45f306dc9c883p-1 + magic_d;
  const double j = t - magic_d;
  const u64 q = bits(t) + quadrant_shift;
  double r = ((x - j * 0x1.921fb5p+0) - j * 0x1.110b46p-26) - j * 0x1.1a62633145c07p-54;
  // A no-op inside the documented range; beyond it keeps the result in [-1, 1].
  r = clamp(r, -0.79, 0.79);
  // Chebyshev fits in z = r^2 on |r| <= 0.79, good to ~2^-35 (sin) and
  // ~2^-30 (cos) relative: plenty for a float result, and cheaper than Taylor.
  const double z = r * r;
  double ps = 0x1.6db163bbad3c1p-19;
  ps = ps * z - 0x1.a013805782bbdp-13;
  ps = ps * z + 0x1.11110dd1f41d1p-7;
  ps = ps * z - 0x1.5555555451f1cp-3;
  const double s = r + r * z * ps;
  double pc = 0x1.9bcb90eb58094p-16;
  pc = pc * z - 0x1.6c12baa4e6b32p-10;
  pc = pc * z + 0x1.5555543769e48p-5;
  const double c = 1.0 + z * (z * pc - 0.5);
  const double v = select((q & 1u) != 0, c, s);
  return static_cast<float>(double_from(bits(v) ^ ((q & 2u) << 62)));
}

// sin(hi + lo) for |hi| <= pi/4. The degree-13 minimax fit of fdlibm's
// __kernel_sin (|sin(x)/x - P| <= 2^-58) needs four fewer terms than Taylor.
[[gnu::always_inline]] inline double sin_kernel(double x, double y) {
  const double z = x * x;
  double p = 1.58969099521155010221e-10;
  p = p * z - 2.50507602534068634195e-08;
  p = p * z + 2.75573137070700676789e-06;
  p = p * z - 1.98412698298579493134e-04;
  p = p * z + 8.33333333332248946124e-03;
  const double v = z * x;
  // The tail enters through cos(hi) ~ 1 - hi^2/2.
  return x + (v * (z * p - 1.66666666666666324348e-01) + y * (1.0 - 0.5 * z));
}

// cos(hi + lo) for |hi| <= pi/4; fdlibm's __kernel_cos minimax fit (2^-58).
[[gnu::always_inline]] inline double cos_kernel(double x, double y) {
  const double z = x * x;
  double p = -1.13596475577881948265e-11;
  p = p * z + 2.08757232129817482790e-09;
  p = p * z - 2.75573143513906633035e-07;
  p = p * z + 2.48015872894767294178e-05;
  p = p * z - 1.38888888888741095749e-03;
  p = p * z + 4.16666666666666019037e-02;
  const double hz = 0.5 * z;
  const double w = 1.0 - hz;
  // Recover the rounding error of 1 - z/2, which dominates near |x| = pi/4.
  return w + (((1.0 - w) - hz) + (z * z * p - x * y));
}

// Double reduction, r = x - j pi/2 as hi + lo with pi/2 = P1 + P2 + P3. With
// hardware FMA, P1 is pi/2 rounded to double and x - j P1 is exact for
// |x| <= 2^20 (x and j P1 are multiples of 2^-53 and differ by less than 1).
// P2 has 33 bits, so j P2 is exact as well, and Fast2Sum of the two stays exact
// even when |x - j P1| < |j P2|, because x - j P1 is then a multiple of
// ulp(j P2). Values near multiples of pi/2, where r cancels down to ~2^-58,
// keep their full relative precision; exact products also make FMA
// contraction harmless. Without FMA (std::fma would be a scalar libm call) P1
// is split into 33-bit pieces too, at the price of two TwoSums.
[[gnu::always_inline]] inline double sincos_double(double x, u64 quadrant_shift) {
  const double t = x * 0x1.45f306dc9c883p-1 + magic_d;
  const double j = t - magic_d;
  const u64 q = bits(t) + quadrant_shift;
#if defined(__FMA__)
  const double r1 = std::fma(-j, 0x1.921fb54442d18p+0, x);
  const double p = j * 0x1.1a62633100000p-54;
  double hi = r1 - p;
  double lo = ((r1 - hi) - p) - j * 0x1.1701b839a2520p-88;
#else
  const double r1 = x - j * 0x1.921fb54400000p+0;
  const auto [s1, e1] = two_sum(r1, -(j * 0x1.0b4611a600000p-34));
  const auto [s2, e2] = two_sum(s1, -(j * 0x1.3198a2e000000p-69));
  const double lo0 = (e1 + e2) - j * 0x1.b839a252049c1p-104;
  double hi = s2 + lo0;
  double lo = lo0 - (hi - s2);
#endif
  // Past the exact range, hi is garbage: clamp it and drop lo so |result| <= 1.
  const bool in_range = abs(x) <= 0x1p20;
  hi = clamp(hi, -0.79, 0.79);
  lo = select(in_range, lo, 0.0);
  const double v = select((q & 1u) != 0, cos_kernel(hi, lo), sin_kernel(hi, lo));
  return double_from(bits(v) ^ ((q & 2u) << 62));
}

}  // namespace impl

// e^x for float.
[[gnu::always_inline]] inline float exp(float x) { return impl::exp_impl(x); }
// e^x for double.
[[gnu::always_inline]] inline double exp(double x) { return impl::exp_impl(x); }

// e^x - 1 for float, accurate near 0.
[[gnu::always_inline]] inline float expm1(float x) {
  const float y = impl::expm1_core(x).hi;
  // Below 2^-25, e^x - 1 rounds to x; the select also keeps -0.
  return impl::select(impl::abs(x) < 0x1p-25f, x, y);
}
// e^x - 1 for double, accurate near 0.
[[gnu::always_inline]] inline double expm1(double x) {
  const double y = impl::expm1_core(x).hi;
  return impl::select(impl::abs(x) < 0x1p-54, x, y);
}

// Natural logarithm for float.
[[gnu::always_inline]] inline float log(float x) {
  return impl::log_specials(x, impl::log_core(x, 0.0f));
}
// Natural logarithm for double.
[[gnu::always_inline]] inline double log(double x) {
  return impl::log_specials(x, impl::log_core(x, 0.0));
}

// log(1 + x) for float, accurate near 0.
[[gnu::always_inline]] inline float log1p(float x) {
  const auto [u, err] = impl::two_sum(1.0f, x);
  // log(u + err) = log(u) + err/u to first order; err is below ulp(u).
  const float y = impl::log_core(u, err / u);
  return impl::select(impl::abs(x) < 0x1p-25f, x, impl::log_specials(u, y));
}
// log(1 + x) for double, accurate near 0.
[[gnu::always_inline]] inline double log1p(double x) {
  const auto [u, err] = impl::two_sum(1.0, x);
  const double y = impl::log_core(u, err / u);
  return impl::select(impl::abs(x) < 0x1p-54, x, impl::log_specials(u, y));
}

// Sine for float (accurate for |x| <= 2^27).
[[gnu::always_inline]] inline float sin(float x) {
  const float y = impl::sincos_float(x, 0);
  // sin x rounds to x below 2^-12; also keeps -0.
  return impl::select(impl::abs(x) < 0x1p-12f, x, y);
}
// Sine for double (accurate for |x| <= 2^20).
[[gnu::always_inline]] inline double sin(double x) {
  const double y = impl::sincos_double(x, 0);
  return impl::select(impl::abs(x) < 0x1p-26, x, y);
}

// Cosine for float (accurate for |x| <= 2^27).
[[gnu::always_inline]] inline float cos(float x) { return impl::sincos_float(x, 1); }
// Cosine for double (accurate for |x| <= 2^20).
[[gnu::always_inline]] inline double cos(double x) { return impl::sincos_double(x, 1); }

// Hyperbolic tangent for float.
[[gnu::always_inline]] inline float tanh(float x) { return impl::tanh_impl(x); }
// Hyperbolic tangent for double.
[[gnu::always_inline]] inline double tanh(double x) { return impl::tanh_impl(x); }

}  // namespace kax::detail::vmath

#include "kax/core/detail/simd_warnings_on.hpp"
