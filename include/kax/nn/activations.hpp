// kax/nn/activations.hpp — jax.nn's activation functions: relu, sigmoid, silu, gelu.
//
// Each is a lazy elementwise node, so it fuses with whatever surrounds it:
// `kax::nn::gelu(x * w + b)` is one kernel with no temporaries.
#pragma once

#include "kax/expr/as_expr.hpp"
#include "kax/expr/operators.hpp"
#include "kax/nn/detail/ops.hpp"
#include "kax/nn/detail/param_unary.hpp"

namespace kax::nn {

// jax.nn.relu(x): max(x, 0); integer inputs keep their dtype.
template <array_operand X>
auto relu(const X& x) {
  return kax::detail::make_unary<detail::relu_op>(x);
}

// jax.nn.sigmoid(x): 1 / (1 + exp(-x)), computed without overflow for any x.
template <array_operand X>
auto sigmoid(const X& x) {
  return kax::detail::make_unary<detail::sigmoid_op>(x);
}

// jax.nn.silu(x) (jax.nn.swish): x * sigmoid(x).
template <array_operand X>
auto silu(const X& x) {
  return kax::detail::make_unary<detail::silu_op>(x);
}

// jax.nn.gelu(x): the tanh approximation, JAX's default.
template <array_operand X>
auto gelu(const X& x) {
  return kax::detail::make_unary<detail::gelu_tanh_op>(x);
}

// jax.nn.gelu(x, approximate): the tanh approximation, or with approximate = false the exact
// x * (1 + erf(x / sqrt(2))) / 2.  Same values as gelu(x) for approximate = true; the flag is
// known only at run time, so on the host both forms are computed and one selected (about twice
// the work of gelu(x); see detail/ops.hpp for why not a branch).
template <array_operand X>
auto gelu(const X& x, bool approximate) {
  return detail::ParamUnaryExpr<detail::gelu_op, expr_t<X>>(as_expr(x),
                                                            detail::gelu_op(approximate));
}

}  // namespace kax::nn
