// kax/expr/layout/broadcast_to.hpp — BroadcastToExpr: jnp.broadcast_to(x, shape), no copy.
#pragma once

#include <array>

#include "kax/expr/as_expr.hpp"
#include "kax/expr/broadcast.hpp"

namespace kax {

template <expression E, std::size_t R2>
struct BroadcastToExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = R2;
  static_assert(rank_of<E> <= R2, "kax::broadcast_to: the target rank is lower than the operand's");
  E arg;
  shape<R2> ext{};
  multi_index<rank_of<E>> keep{};

  BroadcastToExpr(E a, const shape<R2>& target) : arg(std::move(a)), ext(target) {
    const auto in = arg.extents();
    constexpr std::size_t R = rank_of<E>;
    for (std::size_t k = 0; k < R; ++k)
      if (in[k] != 1 && in[k] != target[k + R2 - R])
        throw shape_error("kax::broadcast_to: cannot broadcast an array of shape " +
                          shape_string(in) + " to shape " + shape_string(target));
    keep = detail::broadcast_keep(in);
  }

  shape<R2> extents() const { return ext; }
  bool is_flat() const {
    if constexpr (rank_of<E> == R2) return arg.is_flat() && arg.extents() == ext;
    else return false;
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<R2>& i) const {
    return arg.evaluate(detail::project_index(i, keep));
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return arg.evaluate_flat(R2 == 0 ? 0 : n);
  }
  auto row(const multi_index<R2>& i) const {
    return detail::operand_row(detail::row_of(arg, detail::project_index(i, keep)), keep);
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise && is_flat());
  }
};

// jnp.broadcast_to(x, shape).
template <array_operand X, std::size_t R2>
auto broadcast_to(const X& x, const shape<R2>& target) {
  return BroadcastToExpr<expr_t<X>, R2>(as_expr(x), target);
}

// jnp.broadcast_to(x, {4, 3}).
template <array_operand X, std::size_t R2>
auto broadcast_to(const X& x, const std::size_t (&target)[R2]) {
  shape<R2> s{};
  for (std::size_t k = 0; k < R2; ++k) s[k] = target[k];
  return broadcast_to(x, s);
}

}  // namespace kax
