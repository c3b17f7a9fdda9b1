// kax/expr/adjoint/pad.hpp — PadExpr: an array placed into zeros along a strided pattern (the
// adjoint of slicing, jax.lax.pad with interior padding).
//
// kax::grad's backward pass uses it for slice and concatenate: the operand's gradient is the
// cotangent of the slice at the positions the slice read, and zero elsewhere.  Output index i
// reads operand index (i - first) / step on every axis where that is a whole number in range.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kax/expr/concepts.hpp"

namespace kax {

template <expression E>
struct PadExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = rank_of<E>;

  E arg;
  shape<rank> ext{};
  Kokkos::Array<std::int64_t, rank> first{};
  Kokkos::Array<std::int64_t, rank> step{};
  Kokkos::Array<std::int64_t, rank> count{};  // the operand's extents

  // `out` is the padded shape; the operand's element j sits at first + j * step (step != 0).
  PadExpr(E a, const shape<rank>& out, const Kokkos::Array<std::int64_t, rank>& first_index,
          const Kokkos::Array<std::int64_t, rank>& steps)
      : arg(std::move(a)), ext(out), first(first_index), step(steps) {
    const shape<rank> in = arg.extents();
    for (std::size_t k = 0; k < rank; ++k) count[k] = static_cast<std::int64_t>(in[k]);
  }

  shape<rank> extents() const { return ext; }
  bool is_flat() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    multi_index<rank> c{};
    bool inside = true;
    for (std::size_t k = 0; k < rank; ++k) {
      const std::int64_t d = static_cast<std::int64_t>(i[k]) - first[k];
      const std::int64_t j = d / step[k];
      inside = inside && j * step[k] == d && j >= 0 && j < count[k];
      c[k] = inside ? static_cast<std::size_t>(j) : 0;
    }
    return inside ? arg.evaluate(c) : value_type(0);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t) const { return value_type(0); }

  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool) const { return arg.conflicts(out, false); }
};

}  // namespace kax
