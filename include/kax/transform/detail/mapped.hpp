// kax/transform/detail/mapped.hpp — MappedExpr: what a vmapped function sees for a mapped
// argument (JAX's BatchTracer).
//
// It is the argument with the mapped axis removed: the rank and extents of one example.  The
// function builds its expression graph on top of it exactly as it would on an array; vmap then
// rewrites that graph (transform/detail/batching.hpp), replacing each MappedExpr of its own level
// by the whole argument with the mapped axis moved to the front.  A MappedExpr is never
// evaluated.  `Tag` names the vmap call (the vmapped function's type and its argument types; an
// inner vmap's arguments contain the outer placeholders, so its tag differs), so that nested
// vmaps rewrite only their own arguments and leave an outer level's placeholders (also those
// captured by an inner function) for the outer rewrite.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kax/expr/concepts.hpp"

namespace kax::detail {

template <class>
inline constexpr bool dependent_false = false;

template <expression E, class Tag>
struct MappedExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = rank_of<E> - 1;
  static_assert(rank_of<E> >= 1, "kax::vmap: a rank-0 argument cannot be mapped");

  E arg;
  std::size_t axis = 0;  // the mapped axis of `arg`, normalized
  shape<rank> ext{};

  MappedExpr(E a, std::size_t mapped_axis) : arg(std::move(a)), axis(mapped_axis) {
    const auto in = arg.extents();
    for (std::size_t k = 0, j = 0; k < rank_of<E>; ++k)
      if (k != axis) ext[j++] = in[k];
  }

  shape<rank> extents() const { return ext; }
  bool is_flat() const { return false; }
  bool conflicts(const buffer_span&, bool) const { return false; }

  // Evaluating one example on its own is not possible: vmap has not picked the example.  This
  // fires when a vmapped function assigns or kax::evals its argument instead of returning an
  // expression of it.
  template <class I>
  value_type evaluate(const I&) const {
    static_assert(dependent_false<I>,
                  "kax::vmap: a mapped argument cannot be evaluated inside the vmapped function; "
                  "return an expression of it instead (kax::vmap evaluates nothing itself)");
    return value_type{};
  }
  template <class I>
  value_type evaluate_flat(const I&) const {
    static_assert(dependent_false<I>,
                  "kax::vmap: a mapped argument cannot be evaluated inside the vmapped function; "
                  "return an expression of it instead (kax::vmap evaluates nothing itself)");
    return value_type{};
  }
};

template <class X>
struct is_mapped : std::false_type {};
template <class E, class Tag>
struct is_mapped<MappedExpr<E, Tag>> : std::true_type {};

}  // namespace kax::detail
