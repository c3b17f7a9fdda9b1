// kax/expr/layout/transpose.hpp — TransposeExpr: a permutation of axes (jnp.transpose).
#pragma once

#include <array>
#include <string>

#include "kax/expr/as_expr.hpp"

namespace kax {

// Output axis k is input axis perm[k]: out[i] = in[c] with c[perm[k]] = i[k].
template <expression E>
struct TransposeExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = rank_of<E>;
  E arg;
  multi_index<rank> perm{};

  TransposeExpr(E a, const std::array<long, rank>& axes) : arg(std::move(a)) {
    std::array<bool, rank> seen{};
    for (std::size_t k = 0; k < rank; ++k) {
      const std::size_t ax = normalize_axis(axes[k], rank, "kax::transpose");
      if (seen[ax])
        throw axis_error("kax::transpose: axis " + std::to_string(axes[k]) +
                         " appears twice in the permutation");
      seen[ax] = true;
      perm[k] = ax;
    }
  }

  shape<rank> extents() const {
    const shape<rank> in = arg.extents();
    shape<rank> out{};
    for (std::size_t k = 0; k < rank; ++k) out[k] = in[perm[k]];
    return out;
  }
  // Only the identity permutation (or rank <= 1) keeps row-major order.
  bool is_flat() const {
    for (std::size_t k = 0; k < rank; ++k)
      if (perm[k] != k) return false;
    return arg.is_flat();
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    multi_index<rank> c{};
    for (std::size_t k = 0; k < rank; ++k) c[perm[k]] = i[k];
    return arg.evaluate(c);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return arg.evaluate_flat(n);
  }
  // A transposed array's row is a strided walk of its memory (other operands: generic rows).
  auto row(const multi_index<rank>& i) const
    requires(detail::is_array_leaf<E>::value && rank > 0)
  {
    multi_index<rank> c{};
    for (std::size_t k = 0; k < rank; ++k) c[perm[k]] = i[k];
    return arg.row_along(c, perm[rank - 1]);
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

// Reverses the axes (jnp.transpose(x)).
template <array_operand X>
auto transpose(const X& x) {
  constexpr std::size_t R = rank_of<expr_t<X>>;
  std::array<long, R> axes{};
  for (std::size_t k = 0; k < R; ++k) axes[k] = static_cast<long>(R - 1 - k);
  return TransposeExpr<expr_t<X>>(as_expr(x), axes);
}

// Permutes the axes (jnp.transpose(x, axes)); negative axes count from the end.
template <array_operand X>
auto transpose(const X& x, const std::array<long, rank_of<expr_t<X>>>& axes) {
  return TransposeExpr<expr_t<X>>(as_expr(x), axes);
}

}  // namespace kax
