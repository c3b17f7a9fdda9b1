// kax/random/detail/erfinv.hpp — the inverse error function as XLA computes it (jax.random.normal
// is sqrt(2) * lax.erf_inv(u)).
//
// XLA's ErfInv (xla/hlo/builder/lib/math.cc) evaluates M. Giles' approximations ("Approximating
// the erfinv function", GPU Computing Gems, 2011): w = -log1p(-x*x), a polynomial in a shifted w
// (or sqrt(w) in the tails) chosen branch-free by w, times x; x = +-1 gives +-inf.  The same
// coefficients, evaluation order and fused multiply-adds are used here, so results differ from
// JAX's only through log1p, whose last bit differs between implementations (XLA's CPU, CUDA's
// libdevice, kax's vector math): a few ulp at most, see docs/random.md.
// Branch-free (selects), so host kernels vectorize it.
#pragma once

#include <cmath>
#include <limits>
#include <math.h>
#include <type_traits>
#include <utility>

#include "kax/core/config.hpp"
#include "kax/expr/ops.hpp"

namespace kax::random::detail {

template <class T>
KOKKOS_FORCEINLINE_FUNCTION T log1p_(T x) {
  if constexpr (kax::detail::on_device()) return kmath::log1p(x);
  else return kax::detail::vmath::log1p(x);
}

template <class T>
KOKKOS_FORCEINLINE_FUNCTION T sqrt_(T x) {
  if constexpr (kax::detail::on_device()) return kmath::sqrt(x);
  else return std::sqrt(x);
}

// a * b + c rounded once, as XLA computes `a * b + c` (its CPU code generator always allows
// fused multiply-add, and GPU code contracts too).  An explicit fma rather than the compiler's
// contraction, so that every compiler and optimization level gives the same bits.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T mul_add(T a, T b, T c) {
  // C's fmaf/fma: host builtins (vectorized) and CUDA/HIP device functions alike.
  if constexpr (std::is_same_v<T, float>) return ::fmaf(a, b, c);
  else return ::fma(a, b, c);
}

// Horner's rule over coefficients c[0] (highest degree) .. c[N-1], as XLA's loop runs it,
// unrolled at compile time: GCC does not vectorize a kernel whose inner `omp simd` loop contains
// this loop ("two or more consecutive inner loops"), and every sample of normal() runs it.
template <class T, int N, int... I>
KOKKOS_FORCEINLINE_FUNCTION T horner_steps(const T (&c)[N], T w, std::integer_sequence<int, I...>) {
  T p = c[0];
  ((p = mul_add(p, w, c[I + 1])), ...);
  return p;
}
template <class T, int N>
KOKKOS_FORCEINLINE_FUNCTION T horner(const T (&c)[N], T w) {
  return horner_steps(c, w, std::make_integer_sequence<int, N - 1>{});
}

KOKKOS_FORCEINLINE_FUNCTION float erfinv(float x) {
  constexpr float small[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
                              -0.00125372503f, -0.00417768164f, 0.246640727f,     1.50140941f};
  constexpr float large[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f,
                              -0.0076224613f,   0.00943887047f,  1.00167406f,    2.83297682f};
  const float w = -log1p_(-x * x);
  const bool lt = w < 5.0f;
  const float p = lt ? horner(small, w - 2.5f) : horner(large, sqrt_(w) - 3.0f);
  const float result = p * x;
  return (x == 1.0f || x == -1.0f) ? x * std::numeric_limits<float>::infinity() : result;
}

KOKKOS_FORCEINLINE_FUNCTION double erfinv(double x) {
  constexpr double lt_6_25[23] = {
      -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18, 1.115787767802518096e-17,
      -1.333171662854620906e-16,  2.0972767875968561637e-17,  6.6376381343583238325e-15, -4.0545662729752068639e-14,
      -8.1519341976054721522e-14, 2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
      1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
      -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352,  -0.00074070253416626697512,
      -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
  constexpr double lt_16[19] = {
      2.2137376921775787049e-09,  9.0756561938885390979e-08,  -2.7517406297064545428e-07, 1.8239629214389227755e-08,
      1.5027403968909827627e-06,  -4.013867526981545969e-06,  2.9234449089955446044e-06,  1.2475304481671778723e-05,
      -4.7318229009055733981e-05, 6.8284851459573175448e-05,  2.4031110387097893999e-05,  -0.0003550375203628474796,
      0.00095328937973738049703,  -0.0016882755560235047313,  0.0024914420961078508066,   -0.0037512085075692412107,
      0.005370914553590063617,    1.0052589676941592334,      3.0838856104922207635};
  constexpr double ge_16[17] = {
      -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,  -3.7894654401267369937e-09,
      7.6157012080783393804e-09,  -1.4960026627149240478e-08, 2.9147953450901080826e-08,  -6.7711997758452339498e-08,
      2.2900482228026654717e-07,  -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
      7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
      4.8499064014085844221};
  const double w = -log1p_(-x * x);
  double p;
  if (w < 6.25) p = horner(lt_6_25, w - 3.125);
  else if (w < 16.0) p = horner(lt_16, sqrt_(w) - 3.25);
  else p = horner(ge_16, sqrt_(w) - 5.0);
  const double result = p * x;
  return (x == 1.0 || x == -1.0) ? x * std::numeric_limits<double>::infinity() : result;
}

}  // namespace kax::random::detail
