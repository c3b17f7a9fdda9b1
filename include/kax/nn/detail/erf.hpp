// kax/nn/detail/erf.hpp — erf for host SIMD loops (gelu's exact form): erf_host.
//
// libm's erf is a scalar call, and a call in a kernel's `omp simd` loop stops the whole fused
// expression from vectorizing.  With GCC on x86-64 glibc >= 2.35, erf_host calls glibc's libmvec
// vector variants (as expr/detail/libmvec.hpp does for sin/exp/...; measured here: erff <= 1 ulp,
// erf <= 2.4 ulp, and 1.6x / 3.5x faster than the code below).  Elsewhere (clang, other C
// libraries) it uses erf_simd, straight-line code like expr/detail/vector_math.hpp:
//   |v| <= 1:  erf(v) = v * P(v^2)
//   |v| >  1:  erf(v) = sign(v) * (1 - exp(-v^2) * w * R(s)),  w = 1/|v|, s = (w - c) / h
// where w * R = exp(v^2) * erfc(v) on 1 <= |v| <= 6 (float: 4), beyond which erf rounds to +-1
// (w is clamped there, so R stays on its interval and exp(-v^2) makes the term vanish).  Both
// sides are computed and one selected.  P and R are Chebyshev fits computed with mpmath (50
// digits; scripts/gen_nn_data.py --erf-fit repeats the fit), then rounded to the dtype.
// Measured against long double erfl (1e7 doubles on [-7, 7], every 5th float bit pattern below 5):
// at most 1.6 ulp (double) and 2.5 ulp (float); tests/nn/test_nn.cpp checks it on [-7, 7].
// Rounding v^2 inside exp costs < 0.2 ulp of erf, since erf ~ 1 where that term matters.
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "kax/expr/detail/libmvec.hpp"
#include "kax/expr/detail/vector_math.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::nn::detail {
namespace libmvec_erf = kax::detail::libmvec;
}  // namespace kax::nn::detail

namespace kax::nn::detail::erf_impl {

// Highest degree first.
inline constexpr double p_double[] = {
    5.9571761477489113e-11, -1.1372848856791674e-09, 1.4659775274047436e-08,
    -1.6350312701054695e-07, 1.6461000484121368e-06, -1.4925595266831182e-05,
    0.0001205533111164271, -0.000854832698083379, 0.0052239776248180145,
    -0.026866170645076792, 0.11283791670954879, -0.37612638903183748,
    1.1283791670955126};
inline constexpr double r_double[] = {
    1.8093707798951779e-10, -6.3176459780268281e-10, 3.1962287767941871e-10,
    1.3585276448388284e-09, -2.6310272228576594e-09, 3.98876275474005e-09,
    -9.4327461749284445e-09, 1.6781181895787818e-08, -1.2921699522117595e-08,
    -2.7366752109675391e-08, 1.5445560826158182e-07, -4.4486002437437973e-07,
    9.2408462710414355e-07, -1.2890533852448178e-06, 2.1350280357493344e-07,
    5.8999303624047461e-06, -2.3855588357042368e-05, 5.9516326839922318e-05,
    -9.3034705282170547e-05, -2.4390208133704662e-06, 0.00064086774972263178,
    -0.0026693430316706416, 0.0062197175875530388, -0.0019368880676843741,
    -0.071282877925473997, 0.49666648512593864};
inline constexpr float p_float[] = {
    -9.66704465e-06f, 0.000112659589f, -0.000848408032f, 0.00522103161f,
    -0.0268654302f, 0.112837821f, -0.376126379f, 1.12837923f};
inline constexpr float r_float[] = {
    1.28044076e-06f, -6.95770314e-06f, 1.82559797e-05f, -2.57798292e-05f,
    -2.83950467e-05f, 0.000368000881f, -0.00154317764f, 0.00380222686f,
    -0.000182047734f, -0.0643446147f, 0.489524782f};

template <class T, std::size_t N>
[[gnu::always_inline]] inline T horner(const T (&c)[N], T x) {
  T r = c[0];
  for (std::size_t k = 1; k < N; ++k) r = r * x + c[k];
  return r;
}

// The interval of R: w = 1/|v| in [1/6, 1] (double) or [1/4, 1] (float), as c +- h.
template <class T>
struct tail;
template <>
struct tail<double> {
  static constexpr double w_min = 1.0 / 6.0, c = 7.0 / 12.0, inv_h = 12.0 / 5.0;
  [[gnu::always_inline]] static double r(double s) { return horner(r_double, s); }
  [[gnu::always_inline]] static double p(double t) { return horner(p_double, t); }
};
template <>
struct tail<float> {
  static constexpr float w_min = 0.25f, c = 0.625f, inv_h = 8.0f / 3.0f;
  [[gnu::always_inline]] static float r(float s) { return horner(r_float, s); }
  [[gnu::always_inline]] static float p(float t) { return horner(p_float, t); }
};

}  // namespace kax::nn::detail::erf_impl

namespace kax::nn::detail {

// erf(v) for float or double, vectorizable (host only: device code calls Kokkos' erf).
template <class T>
[[gnu::always_inline]] inline T erf_simd(T v) {
  using tail = erf_impl::tail<T>;
  namespace vm = kax::detail::vmath::impl;
  const T a = vm::abs(v);
  const T t = a * a;
  // vmath's bitwise select and clamp, not `c ? x : y`: gcc would sink each arm's work into a
  // branch, and a branch stops the loop from vectorizing.
  const T small = v * tail::p(vm::select(t < T(1), t, T(1)));  // P stays on its interval
  // 1/max(a, 1) never divides by 0; w is clamped to R's interval (|v| = inf gives w_min).
  const T w = vm::clamp(T(1) / vm::select(a > T(1), a, T(1)), tail::w_min, T(1));
  const T erfc = kax::detail::vmath::exp(-t) * (w * tail::r((w - tail::c) * tail::inv_h));
  const T large = vm::with_sign_of(T(1) - erfc, v);
  return vm::select(a <= T(1), small, large);  // NaN: a <= 1 is false and `large` is NaN
}

// erf on the host: libmvec where available, else erf_simd.
template <class T>
[[gnu::always_inline]] inline T erf_host(T v) {
  if constexpr (!libmvec_erf::has_erf) return erf_simd(v);
  else if constexpr (std::is_same_v<T, float>) return libmvec_erf::kax_libmvec_erff(v);
  else return libmvec_erf::kax_libmvec_erf(v);
}

}  // namespace kax::nn::detail

#include "kax/core/detail/simd_warnings_on.hpp"
