// kax/expr/layout/unit_axes.hpp — expand_dims and squeeze: inserting or removing axes of extent 1.
#pragma once

#include <algorithm>
#include <array>
#include <string>

#include "kax/expr/as_expr.hpp"

namespace kax {

// Input axis k reads output axis `src[k]`, or is pinned to 0 when `pinned[k]` (a squeezed axis).
// Row-major order is unchanged, so flat evaluation passes straight through.
template <expression E, std::size_t R2>
struct UnitAxesExpr : expression_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t rank = R2;
  static constexpr std::size_t arg_rank = rank_of<E>;
  E arg;
  shape<R2> ext{};
  multi_index<arg_rank> src{};
  multi_index<arg_rank> live{};  // 1 where the input axis is walked

  UnitAxesExpr(E a, shape<R2> out, multi_index<arg_rank> source, multi_index<arg_rank> walked)
      : arg(std::move(a)), ext(out), src(source), live(walked) {}

  shape<R2> extents() const { return ext; }
  bool is_flat() const { return arg.is_flat(); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<R2>& i) const {
    multi_index<arg_rank> c{};
    for (std::size_t k = 0; k < arg_rank; ++k) c[k] = live[k] ? i[src[k]] : 0;
    return arg.evaluate(c);
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return arg.evaluate_flat(R2 == 0 ? 0 : n);
  }
  // expand_dims/squeeze keep axis order, so the output's last axis is the input's last or none.
  auto row(const multi_index<R2>& i) const {
    multi_index<arg_rank> c{};
    for (std::size_t k = 0; k < arg_rank; ++k) c[k] = live[k] ? i[src[k]] : 0;
    bool walks = false;
    if constexpr (arg_rank > 0 && R2 > 0) walks = live[arg_rank - 1] && src[arg_rank - 1] == R2 - 1;
    const auto a = detail::row_of(arg, c);
    // Not walked: the input's last axis is read at one index for the whole output row (c's last
    // component: 0 where squeezed, an outer output index after expand_dims(x, -1)).
    if constexpr (arg_rank > 0) return walks ? a : a.at(c[arg_rank - 1]);
    else return a.broadcast();
  }
  // row() follows the operand's last axis: exact unless that axis is squeezed while an earlier
  // operand axis feeds the output's last axis (squeeze(x[:, 1:2], 1) with x not flat).
  bool rows_exact() const {
    if constexpr (arg_rank == 0 || R2 == 0) {
      return true;
    } else {
      if (live[arg_rank - 1]) return true;
      for (std::size_t k = 0; k < arg_rank; ++k)
        if (live[k] && src[k] == R2 - 1) return false;
      return true;
    }
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    f(arg);
  }
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    return arg.conflicts(out, pointwise && arg.is_flat());
  }
};

// jnp.expand_dims(x, axis): a new axis of extent 1 at `axis` of the result (negative ok).
template <array_operand X>
auto expand_dims(const X& x, long axis) {
  using E = expr_t<X>;
  constexpr std::size_t R = rank_of<E>;
  E e = as_expr(x);
  const std::size_t ax = normalize_axis(axis, R + 1, "kax::expand_dims");
  const shape<R> in = e.extents();
  shape<R + 1> out{};
  multi_index<R> src{}, live{};
  for (std::size_t k = 0, j = 0; k < R + 1; ++k) {
    if (k == ax) { out[k] = 1; continue; }
    out[k] = in[j];
    src[j] = k;
    live[j] = 1;
    ++j;
  }
  return UnitAxesExpr<E, R + 1>(std::move(e), out, src, live);
}

// jnp.squeeze(x, axes): removes the listed axes, which must have extent 1 (static rank needs
// the axes spelled out; NumPy's "all unit axes" would make the rank depend on run-time extents).
template <array_operand X, std::size_t K>
auto squeeze(const X& x, const std::array<long, K>& axes) {
  using E = expr_t<X>;
  constexpr std::size_t R = rank_of<E>;
  static_assert(K <= R, "kax::squeeze: more axes than the operand's rank");
  E e = as_expr(x);
  const shape<R> in = e.extents();
  std::array<bool, R> drop{};
  for (long a : axes) {
    const std::size_t ax = normalize_axis(a, R, "kax::squeeze");
    if (drop[ax]) throw axis_error("kax::squeeze: axis " + std::to_string(a) + " appears twice");
    if (in[ax] != 1)
      throw shape_error("kax::squeeze: cannot select an axis to squeeze out which has size not "
                        "equal to one: axis " + std::to_string(a) + " of shape " + shape_string(in));
    drop[ax] = true;
  }
  shape<R - K> out{};
  multi_index<R> src{}, live{};
  for (std::size_t k = 0, j = 0; k < R; ++k) {
    if (drop[k]) continue;
    out[j] = in[k];
    src[k] = j;
    live[k] = 1;
    ++j;
  }
  return UnitAxesExpr<E, R - K>(std::move(e), out, src, live);
}

// jnp.squeeze(x, axis) for one axis.
template <array_operand X>
auto squeeze(const X& x, long axis) {
  return squeeze(x, std::array<long, 1>{axis});
}

}  // namespace kax
