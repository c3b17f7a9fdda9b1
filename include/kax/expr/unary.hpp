// kax/expr/unary.hpp — UnaryExpr: an elementwise function of one operand (sin, -, astype, ...).
#pragma once

#include "kax/expr/concepts.hpp"

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
  KOKKOS_INLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    return Op::apply(static_cast<operand_type>(arg.evaluate(i)));
  }
  KOKKOS_INLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return Op::apply(static_cast<operand_type>(arg.evaluate_flat(n)));
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
