// kax/expr/operators.hpp — C++ operators on kax operands: + - * / unary -, comparisons, & | !.
// Each builds a node; nothing is computed until the expression is evaluated.
#pragma once

#include "kax/expr/as_expr.hpp"
#include "kax/expr/binary.hpp"
#include "kax/expr/ops.hpp"
#include "kax/expr/unary.hpp"

namespace kax {

namespace detail {

template <class Op, operand A, operand B>
auto make_binary(const A& a, const B& b) {
  return BinaryExpr<Op, expr_t<A>, expr_t<B>>(as_expr(a), as_expr(b));
}

template <class Op, operand A>
auto make_unary(const A& a) {
  return UnaryExpr<Op, expr_t<A>>(as_expr(a));
}

// At least one side must be an array or node: scalar-scalar stays plain C++.
template <class A, class B>
concept binary_operands = operand<A> && operand<B> && (array_operand<A> || array_operand<B>);

}  // namespace detail

template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator+(const A& a, const B& b) { return detail::make_binary<detail::add_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator-(const A& a, const B& b) { return detail::make_binary<detail::sub_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator*(const A& a, const B& b) { return detail::make_binary<detail::mul_op>(a, b); }
// True division (jnp.divide): integer operands give double.
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator/(const A& a, const B& b) { return detail::make_binary<detail::div_op>(a, b); }

template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator==(const A& a, const B& b) { return detail::make_binary<detail::equal_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator!=(const A& a, const B& b) { return detail::make_binary<detail::not_equal_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator<(const A& a, const B& b) { return detail::make_binary<detail::less_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator<=(const A& a, const B& b) { return detail::make_binary<detail::less_equal_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator>(const A& a, const B& b) { return detail::make_binary<detail::greater_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator>=(const A& a, const B& b) {
  return detail::make_binary<detail::greater_equal_op>(a, b);
}

// Elementwise logical and/or/not on truth values (NumPy's & | ~ on bool arrays).
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator&(const A& a, const B& b) { return detail::make_binary<detail::logical_and_op>(a, b); }
template <class A, class B>
  requires detail::binary_operands<A, B>
auto operator|(const A& a, const B& b) { return detail::make_binary<detail::logical_or_op>(a, b); }
template <array_operand A>
auto operator!(const A& a) { return detail::make_unary<detail::logical_not_op>(a); }

template <array_operand A>
auto operator-(const A& a) { return detail::make_unary<detail::negate_op>(a); }
template <array_operand A>
auto operator+(const A& a) { return as_expr(a); }

}  // namespace kax
