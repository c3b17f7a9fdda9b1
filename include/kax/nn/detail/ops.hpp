// kax/nn/detail/ops.hpp — the elementwise ops behind kax::nn's activations (jax.nn's formulas).
//
// Same shape as expr/ops.hpp: `name`, `operand_t`/`result_t`, and `apply`.  They reuse kax's exp
// and tanh ops, so host kernels get the vectorizable math and devices get Kokkos' math.
#pragma once

#include <cmath>
#include <limits>

#include "kax/core/config.hpp"
#include "kax/expr/ops.hpp"

namespace kax::nn::detail {

// jax.nn.relu: max(x, 0), NaN propagating as jnp.maximum; integers stay integers.
struct relu_op : kax::detail::arithmetic {
  static constexpr const char* name = "kax::nn::relu";
  template <class T>
  KOKKOS_INLINE_FUNCTION static T apply(T x) { return kax::detail::maximum_op::apply(x, T(0)); }
};

// jax.nn.sigmoid (lax.logistic), written so that nothing overflows: with e = exp(-|x|) <= 1,
// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0.  The naive 1 / (1 + exp(-x))
// computes exp(1000) = inf at x = -1000 (an overflow), and e / (1 + e) keeps full relative
// accuracy for very negative x, where 1 - 1 / (1 + e) would cancel.  Both sides are computed and
// one selected, so the loop stays branch-free and vectorizes.
struct sigmoid_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::sigmoid";
  template <class T>
  KOKKOS_INLINE_FUNCTION static T apply(T x) {
    const T e = kax::detail::exp_op::apply(-(x < T(0) ? -x : x));
    const T r = T(1) / (T(1) + e);
    return x >= T(0) ? r : e * r;  // NaN: e is NaN, so either side is NaN
  }
};

// jax.nn.silu (swish): x * sigmoid(x).
struct silu_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::silu";
  template <class T>
  KOKKOS_INLINE_FUNCTION static T apply(T x) { return x * sigmoid_op::apply(x); }
};

// jax.nn.gelu.  The flag is state (a run-time argument), so this op is an object, applied by
// ParamUnaryExpr; the branch on it is the same for every element (no per-element divergence),
// and only the chosen formula is evaluated.
struct gelu_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::gelu";
  bool approximate = true;

  template <class T>
  KOKKOS_INLINE_FUNCTION T apply(T x) const {
    if (approximate) {
      // JAX: cdf = 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))); x * cdf
      const T sqrt_2_over_pi = T(0.79788456080286535588);
      const T inner = sqrt_2_over_pi * (x + T(0.044715) * (x * x * x));
      return x * (T(0.5) * (T(1) + kax::detail::tanh_op::apply(inner)));
    }
    // JAX: x * (erf(x / sqrt(2)) + 1) / 2
    return x * (erf(x / T(1.41421356237309504880)) + T(1)) / T(2);
  }

 private:
  // Scalar on the host (libm's erf does not vectorize), Kokkos' erf on devices.
  template <class T>
  KOKKOS_INLINE_FUNCTION static T erf(T v) {
    if constexpr (kax::detail::on_device()) return kmath::erf(v);
    else return std::erf(v);
  }
};

// logsumexp's shift: the max where it is finite, else 0 (JAX:
// stop_gradient(select(isfinite(amax), amax, 0))), so a row of -inf gives log(0) + 0 = -inf
// instead of -inf - -inf = NaN, and a row holding +inf gives +inf.
struct finite_or_zero_op : kax::detail::floating {
  static constexpr const char* name = "kax::nn::logsumexp";
  template <class T>
  KOKKOS_INLINE_FUNCTION static T apply(T m) {
    const T inf = std::numeric_limits<T>::infinity();
    return (m > -inf && m < inf) ? m : T(0);  // false for NaN too
  }
};

}  // namespace kax::nn::detail
