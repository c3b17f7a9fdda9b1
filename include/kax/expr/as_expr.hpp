// kax/expr/as_expr.hpp — turns any operand (node, Array, scalar) into an expression node.
#pragma once

#include <utility>

#include "kax/expr/leaf.hpp"
#include "kax/expr/scalar.hpp"

namespace kax {

// The node for an operand: nodes are copied (they are small and hold arrays by shared
// ownership), arrays become leaves, scalars become weakly typed constants.
template <operand X>
auto as_expr(const X& x) {
  if constexpr (expression<X>) return x;
  else if constexpr (array_like<X>) return x.as_leaf();
  else return ScalarExpr<scalar_dtype_t<X>>(static_cast<scalar_dtype_t<X>>(x));
}

template <operand X>
using expr_t = decltype(as_expr(std::declval<const X&>()));

namespace detail {

template <class E>
struct weak_flag {
  static constexpr bool value = false;
};
template <class E>
  requires requires { E::weak; }
struct weak_flag<E> {
  static constexpr bool value = E::weak;
};

template <class E>
inline constexpr bool is_weak = weak_flag<E>::value;

}  // namespace detail

// The dtype two operands promote to (weak scalars per dtype.hpp).
template <expression L, expression R>
using binary_promote_t = std::conditional_t<
    detail::is_weak<L> && !detail::is_weak<R>,
    promote_weak_t<value_type_of<R>, value_type_of<L>>,
    std::conditional_t<detail::is_weak<R> && !detail::is_weak<L>,
                       promote_weak_t<value_type_of<L>, value_type_of<R>>,
                       promote_t<value_type_of<L>, value_type_of<R>>>>;

}  // namespace kax
