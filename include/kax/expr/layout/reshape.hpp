// kax/expr/layout/reshape.hpp — ReshapeExpr: the same elements in row-major order, a new shape.
#pragma once

#include <array>
#include <string>

#include "kax/expr/as_expr.hpp"

namespace kax {

template <expression E, std::size_t R2>
struct ReshapeExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = R2;
  E arg;
  shape<R2> ext{};
  multi_index<R2> out_strides{};
  multi_index<rank_of<E>> arg_ext{};
  bool arg_flat = false;

  ReshapeExpr(E a, const std::array<long, R2>& new_shape) : arg(std::move(a)) {
    const auto in = arg.extents();
    const std::size_t n = size_of(in);
    std::size_t known = 1;
    int inferred = -1;
    for (std::size_t k = 0; k < R2; ++k) {
      if (new_shape[k] == -1) {
        if (inferred >= 0) throw shape_error("kax::reshape: can only specify one unknown dimension");
        inferred = static_cast<int>(k);
      } else if (new_shape[k] < 0) {
        throw shape_error("kax::reshape: negative extent " + std::to_string(new_shape[k]));
      } else {
        ext[k] = static_cast<std::size_t>(new_shape[k]);
        known *= ext[k];
      }
    }
    if (inferred >= 0) {
      if (known == 0 || n % known != 0)
        throw shape_error("kax::reshape: cannot reshape array of shape " + shape_string(in) +
                          " (size " + std::to_string(n) + ") with a -1 into a multiple of " +
                          std::to_string(known));
      ext[static_cast<std::size_t>(inferred)] = n / known;
    }
    if (size_of(ext) != n)
      throw shape_error("kax::reshape: cannot reshape array of shape " + shape_string(in) +
                        " (size " + std::to_string(n) + ") into shape " + shape_string(ext));
    out_strides = to_multi_index(row_major_strides(ext));
    arg_ext = to_multi_index(in);
    arg_flat = arg.is_flat();
  }

  shape<R2> extents() const { return ext; }
  bool is_flat() const { return arg_flat; }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<R2>& i) const {
    std::size_t linear = 0;
    for (std::size_t k = 0; k < R2; ++k) linear += i[k] * out_strides[k];
    if (arg_flat) return arg.evaluate_flat(linear);
    return arg.evaluate(detail::unravel(linear, arg_ext));
  }
  // Rank-0 nodes must not depend on n (they broadcast against anything).
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return arg.evaluate_flat(R2 == 0 ? 0 : n);
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise && arg_flat);
  }
};

// jnp.reshape(x, shape): one extent may be -1 (inferred).
template <array_operand X, std::size_t R2>
auto reshape(const X& x, const std::array<long, R2>& new_shape) {
  return ReshapeExpr<expr_t<X>, R2>(as_expr(x), new_shape);
}

// jnp.reshape(x, {2, -1}): the braced shape's length is the new rank.
template <array_operand X, std::size_t R2>
auto reshape(const X& x, const long (&new_shape)[R2]) {
  std::array<long, R2> s{};
  for (std::size_t k = 0; k < R2; ++k) s[k] = new_shape[k];
  return reshape(x, s);
}

// Reshape to rank 1 (jnp.ravel).
template <array_operand X>
auto ravel(const X& x) {
  return reshape(x, std::array<long, 1>{-1});
}

}  // namespace kax
