// kax/expr/where.hpp — WhereExpr: jnp.where(cond, x, y), elementwise with broadcasting.
#pragma once

#include "kax/expr/as_expr.hpp"
#include "kax/expr/broadcast.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

template <expression C, expression A, expression B>
struct WhereExpr : expression_base {
  using value_type = binary_promote_t<A, B>;
  static constexpr std::size_t rank = std::max({rank_of<C>, rank_of<A>, rank_of<B>});

  C cond;
  A on_true;
  B on_false;
  multi_index<rank_of<C>> ckeep{};
  multi_index<rank_of<A>> akeep{};
  multi_index<rank_of<B>> bkeep{};
  shape<rank> ext{};

  WhereExpr(C c, A a, B b) : cond(std::move(c)), on_true(std::move(a)), on_false(std::move(b)) {
    ext = detail::broadcast_shapes(
        detail::broadcast_shapes(cond.extents(), on_true.extents(), "kax::where"), on_false.extents(),
        "kax::where");
    ckeep = detail::broadcast_keep(cond.extents());
    akeep = detail::broadcast_keep(on_true.extents());
    bkeep = detail::broadcast_keep(on_false.extents());
  }

  shape<rank> extents() const { return ext; }
  bool is_flat() const {
    return detail::flat_operand(cond, ext) && detail::flat_operand(on_true, ext) &&
           detail::flat_operand(on_false, ext);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    // Both branches are evaluated (branch-free, so the loop vectorizes), as XLA's select does.
    const value_type t = static_cast<value_type>(on_true.evaluate(detail::project_index(i, akeep)));
    const value_type f = static_cast<value_type>(on_false.evaluate(detail::project_index(i, bkeep)));
    return static_cast<bool>(cond.evaluate(detail::project_index(i, ckeep))) ? t : f;
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    const value_type t = static_cast<value_type>(on_true.evaluate_flat(n));
    const value_type f = static_cast<value_type>(on_false.evaluate_flat(n));
    return static_cast<bool>(cond.evaluate_flat(n)) ? t : f;
  }
  auto row(const multi_index<rank>& i) const {
    auto c = detail::operand_row(detail::row_of(cond, detail::project_index(i, ckeep)), ckeep);
    auto a = detail::operand_row(detail::row_of(on_true, detail::project_index(i, akeep)), akeep);
    auto b = detail::operand_row(detail::row_of(on_false, detail::project_index(i, bkeep)), bkeep);
    return detail::where_row<value_type, decltype(c), decltype(a), decltype(b)>{c, a, b};
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(cond);
    f(on_true);
    f(on_false);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return cond.conflicts(out, pointwise && detail::reads_pointwise(cond, ext)) ||
           on_true.conflicts(out, pointwise && detail::reads_pointwise(on_true, ext)) ||
           on_false.conflicts(out, pointwise && detail::reads_pointwise(on_false, ext));
  }
};

}  // namespace kax
