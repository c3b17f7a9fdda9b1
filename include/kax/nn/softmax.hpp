// kax/nn/softmax.hpp — jax.nn.softmax, jax.nn.log_softmax, jax.nn.logsumexp.
//
// All three subtract the maximum along the reduced axes before exponentiating, as JAX does, so
// no input overflows exp (x = 1000 gives softmax 1, not inf/inf = NaN).  Each is three kernels:
// the max, the sum (which fuses exp(x - max) and reads the max's buffer), and the output (which
// fuses the rest and reads both buffers).  The max node is built once and copied into both of
// its uses; copies share its stage buffer, so it is computed once per evaluation.
#pragma once

#include <tuple>

#include "kax/expr/layout/reshape.hpp"
#include "kax/expr/math.hpp"
#include "kax/expr/operators.hpp"
#include "kax/expr/reductions.hpp"
#include "kax/nn/detail/ops.hpp"
#include "kax/nn/detail/reductions.hpp"

namespace kax::nn {

// jax.nn.softmax(x, axis=-1): exp(x - max) / sum(exp(x - max)) along one axis (negative ok).
// Integer inputs compute in float64.  A row of all -inf gives NaN, as in JAX.
template <array_operand X>
auto softmax(const X& x, long axis = -1) {
  static_assert(rank_of<expr_t<X>> >= 1, "kax::nn::softmax: the operand must have rank 1 or more");
  const auto e = detail::inexact(x);
  const auto m = kax::detail::make_reduce<detail::max_initial_reducer>("kax::nn::softmax", e, axis,
                                                                       kax::keepdims);
  const auto unnormalized = kax::exp(e - m);
  return unnormalized / kax::sum(unnormalized, axis, kax::keepdims);
}

// jax.nn.log_softmax(x, axis=-1): (x - max) - log(sum(exp(x - max))) along one axis.
template <array_operand X>
auto log_softmax(const X& x, long axis = -1) {
  static_assert(rank_of<expr_t<X>> >= 1,
                "kax::nn::log_softmax: the operand must have rank 1 or more");
  const auto e = detail::inexact(x);
  const auto m = kax::detail::make_reduce<detail::max_initial_reducer>("kax::nn::log_softmax", e,
                                                                       axis, kax::keepdims);
  const auto shifted = e - m;
  return shifted - kax::log(kax::sum(kax::exp(shifted), axis, kax::keepdims));
}

// jax.nn.logsumexp(x, axis, keepdims) (jax.scipy.special.logsumexp without b/return_sign):
// log(sum(exp(x))) over every axis by default, or the listed ones:
//   kax::nn::logsumexp(x)   kax::nn::logsumexp(x, 1)   kax::nn::logsumexp(x, 0, -1, kax::keepdims)
// The shift is the max where finite, else 0 (JAX's rule): all -inf gives -inf, +inf gives +inf.
template <array_operand X, class... A>
  requires kax::detail::reduction_args<A...>
auto logsumexp(const X& x, A... axes) {
  const auto e = detail::inexact(x);
  const auto m = std::apply(
      [&e](auto... ax) {
        return kax::detail::make_reduce<detail::max_initial_reducer>("kax::nn::logsumexp", e, ax...,
                                                                     kax::keepdims);
      },
      detail::axes_only(axes...));
  const auto shift = kax::detail::make_unary<detail::finite_or_zero_op>(m);
  const auto total = kax::sum(kax::exp(e - shift), axes...);
  if constexpr (kax::detail::ends_with_keepdims<A...>) {
    return kax::log(total) + shift;
  } else {
    // The shift has the reduced axes as extent 1; dropping them is free (fused into the output).
    return kax::log(total) + kax::reshape(shift, detail::signed_shape(total.extents()));
  }
}

}  // namespace kax::nn
