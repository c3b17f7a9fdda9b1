// kax/expr/math.hpp — elementwise functions (jax.numpy's names): sin cos exp log sqrt tanh abs
// pow maximum minimum where astype, and friends.  Integer inputs to floating functions compute
// in double (dtype.hpp).
#pragma once

#include "kax/expr/operators.hpp"
#include "kax/expr/where.hpp"

namespace kax {

// jnp.sin
template <array_operand X> auto sin(const X& x) { return detail::make_unary<detail::sin_op>(x); }
// jnp.cos
template <array_operand X> auto cos(const X& x) { return detail::make_unary<detail::cos_op>(x); }
// jnp.exp
template <array_operand X> auto exp(const X& x) { return detail::make_unary<detail::exp_op>(x); }
// jnp.log
template <array_operand X> auto log(const X& x) { return detail::make_unary<detail::log_op>(x); }
// jnp.tanh
template <array_operand X> auto tanh(const X& x) { return detail::make_unary<detail::tanh_op>(x); }
// jnp.sqrt
template <array_operand X> auto sqrt(const X& x) { return detail::make_unary<detail::sqrt_op>(x); }
// jnp.abs
template <array_operand X> auto abs(const X& x) { return detail::make_unary<detail::abs_op>(x); }
// jnp.square
template <array_operand X> auto square(const X& x) { return detail::make_unary<detail::square_op>(x); }
// jnp.floor
template <array_operand X> auto floor(const X& x) { return detail::make_unary<detail::floor_op>(x); }
// jnp.ceil
template <array_operand X> auto ceil(const X& x) { return detail::make_unary<detail::ceil_op>(x); }
// jnp.negative
template <array_operand X> auto negative(const X& x) { return detail::make_unary<detail::negate_op>(x); }
// jnp.logical_not
template <array_operand X> auto logical_not(const X& x) {
  return detail::make_unary<detail::logical_not_op>(x);
}

// jax.lax.stop_gradient(x): x, treated as a constant by kax::grad (transform/grad.hpp).
template <array_operand X> auto stop_gradient(const X& x) {
  return detail::make_unary<detail::stop_gradient_op>(x);
}

// jnp.power (computes in floating point).
template <class A, class B>
  requires detail::binary_operands<A, B>
auto pow(const A& a, const B& b) { return detail::make_binary<detail::pow_op>(a, b); }
// jnp.maximum (NaN-propagating).
template <class A, class B>
  requires detail::binary_operands<A, B>
auto maximum(const A& a, const B& b) { return detail::make_binary<detail::maximum_op>(a, b); }
// jnp.minimum (NaN-propagating).
template <class A, class B>
  requires detail::binary_operands<A, B>
auto minimum(const A& a, const B& b) { return detail::make_binary<detail::minimum_op>(a, b); }
// jnp.logical_and
template <class A, class B>
  requires detail::binary_operands<A, B>
auto logical_and(const A& a, const B& b) { return detail::make_binary<detail::logical_and_op>(a, b); }
// jnp.logical_or
template <class A, class B>
  requires detail::binary_operands<A, B>
auto logical_or(const A& a, const B& b) { return detail::make_binary<detail::logical_or_op>(a, b); }

// jnp.where(cond, x, y): x where cond is true, else y; all three broadcast together.
template <operand C, operand A, operand B>
  requires(array_operand<C> || array_operand<A> || array_operand<B>)
auto where(const C& c, const A& a, const B& b) {
  return WhereExpr<expr_t<C>, expr_t<A>, expr_t<B>>(as_expr(c), as_expr(a), as_expr(b));
}

// x.astype(U)
template <dtype U, array_operand X>
auto astype(const X& x) {
  return detail::make_unary<detail::cast_op<U>>(x);
}

}  // namespace kax
