// kax/expr/adjoint/sum_to.hpp — SumToExpr: an operand summed down to a shape it broadcasts to
// (the adjoint of broadcasting: NumPy's rules run backwards).
//
// kax::grad's backward pass (transform/detail/vjp.hpp) uses it wherever a forward operand was
// broadcast (a bias added to every row, a scalar times an array, broadcast_to): the operand's
// gradient is the cotangent summed over the axes it was stretched along.  The target axis t
// lines up with operand axis t + (RE - R) from the right; operand axes with no target axis, or
// whose target extent is 1, are summed.  Each output element sums its own elements of the
// operand, so the operand is read exactly once in all: no recomputation, and nothing is
// materialized.  When nothing is summed (the common case of equal shapes) the node is the
// operand itself, flat evaluation included, so an elementwise chain's gradient stays one kernel.
#pragma once

#include <cstddef>
#include <string>

#include "kax/core/errors.hpp"
#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

template <expression E, std::size_t R>
struct SumToExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = R;
  static constexpr std::size_t arg_rank = rank_of<E>;
  static_assert(R <= arg_rank, "kax::SumToExpr: the target rank exceeds the operand's");
  static constexpr std::size_t lead = arg_rank - R;

  E arg;
  shape<R> ext{};
  multi_index<arg_rank> summed_axis{};    // the operand axes summed (extent > 1), first `summed`
  multi_index<arg_rank> summed_extent{};
  std::size_t summed = 0;
  std::size_t terms = 1;                  // elements summed per output element

  SumToExpr(E a, const shape<R>& target) : arg(std::move(a)), ext(target) {
    const shape<arg_rank> in = arg.extents();
    for (std::size_t k = 0; k < arg_rank; ++k) {
      const bool kept = k >= lead && ext[k - lead] == in[k];
      if (!kept && k >= lead && ext[k - lead] != 1)
        throw shape_error("kax::grad: cannot sum an array of shape " + shape_string(in) +
                          " down to shape " + shape_string(ext) + " (the forward broadcast)");
      if (!kept && in[k] != 1) {
        summed_axis[summed] = k;
        summed_extent[summed++] = in[k];
        terms *= in[k];
      }
    }
  }

  shape<R> extents() const { return ext; }
  bool is_flat() const { return summed == 0 && arg.is_flat(); }

  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<R>& i) const {
    multi_index<arg_rank> c{};
    for (std::size_t t = 0; t < R; ++t) c[t + lead] = ext[t] == 1 ? 0 : i[t];
    if (summed == 0) return arg.evaluate(c);
    value_type acc = value_type(0);
    for (std::size_t n = 0; n < terms; ++n) {
      std::size_t rest = n;
      for (std::size_t s = summed; s-- > 0;) {
        c[summed_axis[s]] = rest % summed_extent[s];
        rest /= summed_extent[s];
      }
      acc += arg.evaluate(c);
    }
    return acc;
  }
  // Only used when is_flat(): nothing is summed, and leading unit axes keep linear indices.
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const { return arg.evaluate_flat(n); }

  // Rows: the operand's rows when nothing is summed (then they are exact, and a broadcast bias
  // inside the operand keeps the vectorized row kernels); per-element evaluation otherwise.
  auto row(const multi_index<R>& i) const {
    multi_index<arg_rank> c{};
    for (std::size_t t = 0; t < R; ++t) c[t + lead] = ext[t] == 1 ? 0 : i[t];
    return detail::row_of(arg, c);
  }
  bool rows_exact() const { return summed == 0 && (R > 0 || arg_rank == 0); }

  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise && summed == 0 && lead == 0);
  }
};

namespace detail {

// `e` summed down to `target` (the inverse of broadcasting `target` to e's shape); `e` itself
// when the shapes are equal at compile and run time.
template <std::size_t R, expression E>
auto sum_to(E e, const shape<R>& target) {
  return SumToExpr<E, R>(std::move(e), target);
}

}  // namespace detail
}  // namespace kax
