// kax/nn/detail/param_unary.hpp — ParamUnaryExpr: an elementwise function with run-time
// parameters (gelu's `approximate`), held by the node as an op object.
//
// UnaryExpr (expr/unary.hpp) applies a stateless op through `Op::apply`; this node stores an
// instance and calls `op.apply`, so parameters travel into the kernel by value with the node.
#pragma once

#include <utility>

#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax::nn::detail {

template <class Op, expression E>
struct ParamUnaryExpr : expression_base {
  using operand_type = typename Op::template operand_t<value_type_of<E>>;
  using value_type = typename Op::template result_t<value_type_of<E>>;
  static constexpr std::size_t rank = rank_of<E>;
  E arg;
  Op op;

  ParamUnaryExpr(E a, Op o) : arg(std::move(a)), op(o) {}

  shape<rank> extents() const { return arg.extents(); }
  bool is_flat() const { return arg.is_flat(); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    return op.apply(static_cast<operand_type>(arg.evaluate(i)));
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return op.apply(static_cast<operand_type>(arg.evaluate_flat(n)));
  }
  // Row evaluator (expr/detail/row.hpp): the op applied to the operand's row.
  template <class Row>
  struct row_type {
    Row a;
    Op op;
    [[gnu::always_inline]] value_type operator()(std::size_t j) const {
      return op.apply(static_cast<operand_type>(a(j)));
    }
    auto delta_to(const row_type& next) const
      requires kax::detail::steppable_row<Row>
    {
      return a.delta_to(next.a);
    }
    void advance(const auto& d)
      requires kax::detail::steppable_row<Row>
    {
      a.advance(d);
    }
    row_type broadcast() const { return {a.broadcast(), op}; }
    row_type at(std::size_t k) const { return {a.at(k), op}; }
    bool unit() const { return a.unit(); }
    auto as_unit() const { return row_type<decltype(a.as_unit())>{a.as_unit(), op}; }
    bool dense() const { return a.dense(); }
    auto as_dense() const { return row_type<decltype(a.as_dense())>{a.as_dense(), op}; }
  };
  auto row(const multi_index<rank>& i) const {
    auto a = kax::detail::row_of(arg, i);
    return row_type<decltype(a)>{a, op};
  }
  // The operand, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const kax::detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise);
  }
};

}  // namespace kax::nn::detail
