// kax/expr/unary.hpp — UnaryExpr: an elementwise function of one operand (sin, -, astype, ...).
#pragma once

#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

// Op provides `name`, `operand_t<T>` (the dtype it computes in), `result_t<T>` and
// `static result apply(operand)`.
template <class Op, expression E>
struct UnaryExpr : expression_base {
  using operand_type = typename Op::template operand_t<value_type_of<E>>;
  using value_type = typename Op::template result_t<value_type_of<E>>;
  static constexpr std::size_t rank = rank_of<E>;
  E arg;

  explicit UnaryExpr(E a) : arg(std::move(a)) {}

  shape<rank> extents() const { return arg.extents(); }
  bool is_flat() const { return arg.is_flat(); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    return Op::apply(static_cast<operand_type>(arg.evaluate(i)));
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return Op::apply(static_cast<operand_type>(arg.evaluate_flat(n)));
  }
  auto row(const multi_index<rank>& i) const {
    auto a = detail::row_of(arg, i);
    return detail::unary_row<Op, operand_type, decltype(a)>{a};
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise);
  }
};

}  // namespace kax
