// kax/expr/binary.hpp — BinaryExpr: an elementwise function of two broadcast operands.
#pragma once

#include "kax/expr/as_expr.hpp"
#include "kax/expr/broadcast.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

// Op provides `name`, `operand_t<P>` / `result_t<P>` for the promoted dtype P, and `apply(a, b)`.
template <class Op, expression L, expression R>
struct BinaryExpr : expression_base {
  using promoted_type = binary_promote_t<L, R>;
  using operand_type = typename Op::template operand_t<promoted_type>;
  using value_type = typename Op::template result_t<promoted_type>;
  static constexpr std::size_t rank = std::max(rank_of<L>, rank_of<R>);
  // A result of two weak scalars stays weak (2 * 3.0 inside an expression).
  static constexpr bool weak = detail::is_weak<L> && detail::is_weak<R>;

  L lhs;
  R rhs;
  multi_index<rank_of<L>> lkeep{};
  multi_index<rank_of<R>> rkeep{};
  shape<rank> ext{};

  BinaryExpr(L l, R r) : lhs(std::move(l)), rhs(std::move(r)) {
    const auto ls = lhs.extents();
    const auto rs = rhs.extents();
    ext = detail::broadcast_shapes(ls, rs, Op::name);
    lkeep = detail::broadcast_keep(ls);
    rkeep = detail::broadcast_keep(rs);
  }

  shape<rank> extents() const { return ext; }
  // Flat evaluation needs both sides unbroadcast (scalars are flat everywhere).
  bool is_flat() const {
    return detail::flat_operand(lhs, ext) && detail::flat_operand(rhs, ext);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    return Op::apply(static_cast<operand_type>(lhs.evaluate(detail::project_index(i, lkeep))),
                     static_cast<operand_type>(rhs.evaluate(detail::project_index(i, rkeep))));
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return Op::apply(static_cast<operand_type>(lhs.evaluate_flat(n)),
                     static_cast<operand_type>(rhs.evaluate_flat(n)));
  }
  auto row(const multi_index<rank>& i) const {
    auto l = detail::operand_row(detail::row_of(lhs, detail::project_index(i, lkeep)), lkeep);
    auto r = detail::operand_row(detail::row_of(rhs, detail::project_index(i, rkeep)), rkeep);
    return detail::binary_row<Op, operand_type, decltype(l), decltype(r)>{l, r};
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(lhs);
    f(rhs);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return lhs.conflicts(out, pointwise && detail::reads_pointwise(lhs, ext)) ||
           rhs.conflicts(out, pointwise && detail::reads_pointwise(rhs, ext));
  }
};

}  // namespace kax
