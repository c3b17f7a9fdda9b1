// kax/expr/scalar.hpp — a C++ scalar inside an expression: a rank-0, weakly typed constant.
#pragma once

#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

// A constant.  `weak` marks it as weakly typed (JAX's rule for Python scalars, see dtype.hpp).
// T may be an extended dtype: kax::random holds a single key as ScalarExpr<Key, false>.
template <element_dtype T, bool Weak = true>
struct ScalarExpr : expression_base {
  using value_type = T;
  static constexpr std::size_t rank = 0;
  static constexpr bool weak = Weak;
  T value{};

  ScalarExpr() = default;
  explicit ScalarExpr(T v) : value(v) {}

  shape<0> extents() const { return {}; }
  bool is_flat() const { return true; }
  KOKKOS_FORCEINLINE_FUNCTION T evaluate(const multi_index<0>&) const { return value; }
  KOKKOS_FORCEINLINE_FUNCTION T evaluate_flat(std::size_t) const { return value; }
  detail::constant_row<T> row(const multi_index<0>&) const { return {value}; }
  bool conflicts(const detail::buffer_span&, bool) const { return false; }
};

}  // namespace kax
