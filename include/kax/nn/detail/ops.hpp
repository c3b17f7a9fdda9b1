// kax/nn/detail/ops.hpp — the elementwise ops behind kax::nn's activations (jax.nn's formulas).
//
// Same shape as expr/ops.hpp: `name`, `operand_t`/`result_t`, and `apply`.  They reuse kax's exp
// and tanh ops, so host kernels get the vectorizable math and devices get Kokkos' math.  `apply`
// is force-inlined: an op that GCC leaves as a call inside a kernel's loop (gelu's two forms
// are big enough for that) keeps the whole loop from vectorizing.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kax/core/config.hpp"
#include "kax/expr/ops.hpp"
#include "kax/nn/detail/erf.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::nn::detail {

// jax.nn.relu: max(x, 0), NaN propagating as jnp.maximum; integers stay integers.
struct relu_op : kax::detail::arithmetic {
  static constexpr const char* name = "kax::nn::relu";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x) {
    return kax::detail::maximum_op::apply(x, T(0));
  }
};

// jax.nn.sigmoid (lax.logistic), written so that nothing overflows: with e = exp(-|x|) <= 1,
// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0.  The naive 1 / (1 + exp(-x))
// computes exp(1000) = inf at x = -1000 (an overflow), and e / (1 + e) keeps full relative
// accuracy for very negative x, where 1 - 1 / (1 + e) would cancel.  Both sides are computed and
// one selected; on the host with vmath's bitwise select, as `c ? a : b` lets GCC sink `e * r`
// into a branch, which stops the loop from vectorizing.
struct sigmoid_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::sigmoid";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x) {
    if constexpr (kax::detail::on_device()) {
      const T e = kmath::exp(-kmath::fabs(x));
      const T r = T(1) / (T(1) + e);
      return x >= T(0) ? r : e * r;
    } else {
      namespace vm = kax::detail::vmath::impl;
      const T e = kax::detail::exp_op::apply(-vm::abs(x));
      const T r = T(1) / (T(1) + e);
      return vm::select(x >= T(0), r, e * r);  // NaN: e is NaN, so both sides are NaN
    }
  }
};

// jax.nn.silu (swish): x * sigmoid(x).
struct silu_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::silu";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x) { return x * sigmoid_op::apply(x); }
};

// jax.nn.gelu(x, approximate=True): x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))).
struct gelu_tanh_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::gelu";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x) {
    const T sqrt_2_over_pi = T(0.79788456080286535588);
    const T inner = sqrt_2_over_pi * (x + T(0.044715) * (x * x * x));
    return x * (T(0.5) * (T(1) + kax::detail::tanh_op::apply(inner)));
  }
};

// jax.nn.gelu(x, approximate=False): x * (erf(x / sqrt(2)) + 1) / 2, with a vectorizable erf on
// the host (detail/erf.hpp) and Kokkos' erf on devices.
struct gelu_erf_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::gelu";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T x) {
    const T v = x / T(1.41421356237309504880);
    T e;
    if constexpr (kax::detail::on_device()) e = kmath::erf(v);
    else e = erf_host(v);
    return x * (e + T(1)) / T(2);
  }
};

// gelu with the flag known only at run time (state, applied by ParamUnaryExpr).  On devices a
// branch on it is uniform across threads, so only the chosen form is computed.  On the host a
// branch, or even `flag ? a : b`, makes GCC unswitch the kernel's `omp simd` loop and then
// vectorize neither copy (measured: over 10x slower); both forms are computed instead (each
// vectorized) and one is picked with a bit mask, which the compiler cannot turn into a branch.
struct gelu_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::gelu";
  bool approximate = true;
  std::uint64_t keep_tanh = ~std::uint64_t{0};  // all ones when approximate, else 0

  explicit gelu_op(bool approx) : approximate(approx), keep_tanh(approx ? ~std::uint64_t{0} : 0) {}

  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION T apply(T x) const {
    if constexpr (kax::detail::on_device()) {
      return approximate ? gelu_tanh_op::apply(x) : gelu_erf_op::apply(x);
    } else {
      using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      const bits m = static_cast<bits>(keep_tanh);
      const bits a = std::bit_cast<bits>(gelu_tanh_op::apply(x));
      const bits b = std::bit_cast<bits>(gelu_erf_op::apply(x));
      return std::bit_cast<T>((a & m) | (b & ~m));
    }
  }
};

// logsumexp's shift: the max where it is finite, else 0 (JAX:
// stop_gradient(select(isfinite(amax), amax, 0))), so a row of -inf gives log(0) + 0 = -inf
// instead of -inf - -inf = NaN, and a row holding +inf gives +inf.
struct finite_or_zero_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::logsumexp";
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION static T apply(T m) {
    const T inf = std::numeric_limits<T>::infinity();
    return (m > -inf && m < inf) ? m : T(0);  // false for NaN too
  }
};

}  // namespace kax::nn::detail

#include "kax/core/detail/simd_warnings_on.hpp"
