// kax/expr/layout/concatenate.hpp — ConcatenateExpr: operands joined along one axis
// (jnp.concatenate), and jnp.stack as a concatenation of expand_dims'ed operands.
//
// Lazy like every layout op: no operand is copied, each output element reads the one operand
// whose range along the axis holds it, so `concatenate(...) + 1` stays one kernel.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kax/expr/as_expr.hpp"
#include "kax/expr/detail/row.hpp"
#include "kax/expr/layout/unit_axes.hpp"

namespace kax {

namespace detail {

// The dtype of all operands together.  Plain promote_t (not binary_promote_t's weak-scalar
// rule): operands have rank >= 1 and only rank-0 nodes are ever weak.
template <class T, class... U>
struct promote_all {
  using type = T;
};
template <class T, class U, class... V>
struct promote_all<T, U, V...> {
  using type = typename promote_all<promote_t<T, U>, V...>::type;
};

// A row of a concatenation of operands of one node type (host kernels only).  Not split (axis
// before the last): the whole row lies in one operand, rows[0], as fast as that operand alone.
// Split (axis is the last): element j comes from the segment s holding it, rows[s] shifted by
// starts[s]; s is found without branches, so the row loop still vectorizes (masked gathers).
template <class Row, std::size_t N>
struct concat_row {
  std::array<Row, N> rows;
  std::array<std::size_t, N> starts{};
  bool split = false;

  [[gnu::always_inline]] auto operator()(std::size_t j) const {
    if (!split) return rows[0](j);
    const std::size_t s = segment(j);
    return rows[s](j - starts[s]);
  }
  concat_row broadcast() const { return at(0); }
  concat_row at(std::size_t k) const {
    concat_row out = *this;
    const std::size_t s = split ? segment(k) : 0;
    out.rows[0] = rows[s].at(k - starts[s]);
    out.split = false;
    return out;
  }
  bool unit() const {
    if (!split) return rows[0].unit();
    for (const Row& r : rows)
      if (!r.unit()) return false;
    return true;
  }
  auto as_unit() const {
    return convert<decltype(rows[0].as_unit())>(std::make_index_sequence<N>{});
  }
  bool dense() const { return !split && rows[0].dense(); }  // rows[0] alone is read
  auto as_dense() const {
    return dense_rows<decltype(rows[0].as_dense())>(std::make_index_sequence<N>{});
  }

 private:
  // The last segment starting at or before j (empty segments start where the next one does).
  [[gnu::always_inline]] std::size_t segment(std::size_t j) const {
    std::size_t s = 0;
    for (std::size_t k = 1; k < N; ++k) s = j >= starts[k] ? k : s;
    return s;
  }
  template <class U, std::size_t... K>
  concat_row<U, N> convert(std::index_sequence<K...>) const {
    return {{rows[K].as_unit()...}, starts, split};
  }
  template <class U, std::size_t... K>
  concat_row<U, N> dense_rows(std::index_sequence<K...>) const {
    return {{rows[K].as_dense()...}, starts, split};
  }
};

}  // namespace detail

// Operand k covers [starts[k], ends[k]) of the output's axis `axis`; every other extent is
// shared.  When the node is flat (see the constructor), operand k also covers
// [flat_starts[k], flat_ends[k]) of the row-major linear index.
template <expression... E>
struct ConcatenateExpr : expression_base {
  static constexpr std::size_t count = sizeof...(E);
  static_assert(count >= 1, "kax::concatenate: need at least one array to concatenate");
  using first_type = std::tuple_element_t<0, std::tuple<E...>>;
  static constexpr std::size_t rank = rank_of<first_type>;
  static_assert(((rank_of<E> == rank) && ...),
                "kax::concatenate: all operands must have the same rank");
  static_assert(rank >= 1, "kax::concatenate: zero-dimensional arrays cannot be concatenated");
  using value_type = typename detail::promote_all<value_type_of<E>...>::type;

  std::tuple<E...> args;
  std::size_t axis = 0;  // normalized
  shape<rank> ext{};
  Kokkos::Array<std::size_t, count> starts{};
  Kokkos::Array<std::size_t, count> ends{};
  Kokkos::Array<std::size_t, count> flat_starts{};
  Kokkos::Array<std::size_t, count> flat_ends{};
  bool flat = false;

  // Recomputes everything from the operands (vmap rebuilds the node with batched operands).
  ConcatenateExpr(std::tuple<E...> operands, std::size_t normalized_axis)
      : args(std::move(operands)), axis(normalized_axis) {
    if (axis >= rank)
      throw axis_error("kax::concatenate: axis " + std::to_string(axis) +
                       " is out of range for an array of rank " + std::to_string(rank));
    const auto shapes = std::apply(
        [](const auto&... a) { return std::array<shape<rank>, count>{a.extents()...}; }, args);
    for (std::size_t k = 1; k < count; ++k)
      for (std::size_t d = 0; d < rank; ++d)
        if (d != axis && shapes[k][d] != shapes[0][d])
          throw shape_error(
              "kax::concatenate: all the input array dimensions except for the concatenation axis "
              "must match exactly, but along dimension " + std::to_string(d) +
              ", the array at index 0 has size " + std::to_string(shapes[0][d]) +
              " and the array at index " + std::to_string(k) + " has size " +
              std::to_string(shapes[k][d]) + "; shapes " + shapes_string(shapes) + ", axis " +
              std::to_string(axis));
    ext = shapes[0];
    ext[axis] = 0;
    for (std::size_t k = 0; k < count; ++k) {
      starts[k] = ext[axis];
      ext[axis] += shapes[k][axis];
      ends[k] = ext[axis];
    }
    // With every extent before `axis` equal to 1 (axis 0, or stack along 0), each operand is one
    // contiguous block of the row-major output, so flat evaluation works by linear ranges.
    std::size_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= ext[d];
    for (std::size_t d = axis + 1; d < rank; ++d) inner *= ext[d];
    for (std::size_t k = 0; k < count; ++k) {
      flat_starts[k] = starts[k] * inner;
      flat_ends[k] = ends[k] * inner;
    }
    const bool all_flat = std::apply([](const auto&... a) { return (a.is_flat() && ...); }, args);
    flat = all_flat && (count == 1 || outer <= 1);
  }

  shape<rank> extents() const { return ext; }
  bool is_flat() const { return flat; }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const {
    return pick(i, std::index_sequence_for<E...>{});
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return pick_flat(n, std::index_sequence_for<E...>{});
  }
  // Only when every operand has the same node type (the kernels need one row type).
  auto row(const multi_index<rank>& i) const
    requires(std::is_same_v<E, first_type> && ...)
  {
    using Row = decltype(detail::row_of(std::declval<const first_type&>(), i));
    return make_row<Row>(i, std::index_sequence_for<E...>{});
  }
  // The operands, for the planner's walks (plan/stages.hpp).
  template <class F>
  void for_each_child(F&& f) const {
    std::apply([&f](const auto&... a) { (f(a), ...); }, args);
  }
  // An operand element lands at a shifted output position, never at its own (no pointwise read).
  bool conflicts(const detail::buffer_span& out, bool) const {
    return std::apply([&out](const auto&... a) { return (a.conflicts(out, false) || ...); }, args);
  }

 private:
  // Operand K holds position p when p < ends[K]; the last operand takes what is left.
  template <std::size_t... K>
  KOKKOS_FORCEINLINE_FUNCTION value_type pick(multi_index<rank> i, std::index_sequence<K...>) const {
    const std::size_t p = i[axis];
    value_type out{};
    (void)((((K + 1 == count || p < ends[K]) &&
             (i[axis] = p - starts[K],
              out = static_cast<value_type>(std::get<K>(args).evaluate(i)), true)) ||
            ...));
    return out;
  }
  template <std::size_t... K>
  KOKKOS_FORCEINLINE_FUNCTION value_type pick_flat(std::size_t n, std::index_sequence<K...>) const {
    value_type out{};
    (void)((((K + 1 == count || n < flat_ends[K]) &&
             (out = static_cast<value_type>(std::get<K>(args).evaluate_flat(n - flat_starts[K])),
              true)) ||
            ...));
    return out;
  }
  template <class Row, std::size_t... K>
  detail::concat_row<Row, count> make_row(const multi_index<rank>& i, std::index_sequence<K...>) const {
    if (axis + 1 == rank)
      return {{detail::row_of(std::get<K>(args), i)...}, {starts[K]...}, true};
    // The row lies inside the operand that holds position i[axis].
    const std::array<const first_type*, count> operand{&std::get<K>(args)...};
    std::size_t k = 0;
    while (k + 1 < count && i[axis] >= ends[k]) ++k;
    multi_index<rank> c = i;
    c[axis] -= starts[k];
    const Row r = detail::row_of(*operand[k], c);
    return {{((void)K, r)...}, {starts[K]...}, false};
  }
  static std::string shapes_string(const std::array<shape<rank>, count>& shapes) {
    std::string s;
    for (std::size_t k = 0; k < count; ++k) {
      if (k) s += ' ';
      s += shape_string(shapes[k]);
    }
    return s;
  }
};

namespace detail {

// jnp.concatenate over operand nodes: the compile-time checks, then the node.
template <class... E>
auto concatenate_exprs(std::tuple<E...> exprs, long axis) {
  static_assert(sizeof...(E) >= 1, "kax::concatenate: need at least one array to concatenate");
  using first = std::tuple_element_t<0, std::tuple<E...>>;
  static_assert(((rank_of<E> == rank_of<first>) && ...),
                "kax::concatenate: all operands must have the same rank");
  static_assert(rank_of<first> >= 1,
                "kax::concatenate: zero-dimensional arrays cannot be concatenated");
  const std::size_t ax = normalize_axis(axis, rank_of<first>, "kax::concatenate");
  return ConcatenateExpr<E...>(std::move(exprs), ax);
}

// jnp.stack: every shape equal, then a concatenation of the operands with a unit axis at `axis`.
template <class... E>
auto stack_exprs(const std::tuple<E...>& exprs, long axis) {
  static_assert(sizeof...(E) >= 1, "kax::stack: need at least one array to stack");
  using first = std::tuple_element_t<0, std::tuple<E...>>;
  static_assert(((rank_of<E> == rank_of<first>) && ...),
                "kax::stack: all operands must have the same rank");
  constexpr std::size_t R = rank_of<first>;
  const std::size_t ax = normalize_axis(axis, R + 1, "kax::stack");
  const auto shapes = std::apply(
      [](const auto&... e) { return std::array<shape<R>, sizeof...(E)>{e.extents()...}; }, exprs);
  for (const shape<R>& s : shapes)
    if (s != shapes[0]) {
      std::string msg = "kax::stack: all input arrays must have the same shape; got shapes";
      for (const shape<R>& t : shapes) {
        msg += ' ';
        msg += shape_string(t);
      }
      throw shape_error(msg);
    }
  const long at = static_cast<long>(ax);
  auto expanded = std::apply(
      [at](const auto&... e) { return std::make_tuple(expand_dims(e, at)...); }, exprs);
  return std::apply(
      [ax](auto... e) { return ConcatenateExpr<decltype(e)...>(std::make_tuple(std::move(e)...), ax); },
      std::move(expanded));
}

// The nodes of N operands of one type (a C array or a std::array), as a tuple.
template <std::size_t N, class X>
auto exprs_of(const X* operands) {
  return [operands]<std::size_t... K>(std::index_sequence<K...>) {
    return std::make_tuple(as_expr(operands[K])...);
  }(std::make_index_sequence<N>{});
}

// The nodes of a tuple of operands.
template <class... X>
auto exprs_of(const std::tuple<X...>& operands) {
  return std::apply([](const auto&... x) { return std::make_tuple(as_expr(x)...); }, operands);
}

}  // namespace detail

// jnp.concatenate((a, b, ...), axis) for operands of different types: std::make_tuple(a, b * 2).
template <class... X>
  requires(array_operand<X> && ...)
auto concatenate(const std::tuple<X...>& operands, long axis = 0) {
  return detail::concatenate_exprs(detail::exprs_of(operands), axis);
}

// jnp.concatenate([a, b, c], axis) for operands of one type: kax::concatenate({a, b, c}, 1).
template <array_operand X, std::size_t N>
auto concatenate(const X (&operands)[N], long axis = 0) {
  return detail::concatenate_exprs(detail::exprs_of<N>(std::data(operands)), axis);
}

// jnp.concatenate(arrays, axis) for a std::array of operands.
template <array_operand X, std::size_t N>
auto concatenate(const std::array<X, N>& operands, long axis = 0) {
  return detail::concatenate_exprs(detail::exprs_of<N>(std::data(operands)), axis);
}

// jnp.stack((a, b, ...), axis): a new axis `axis` of the result (negative counts from the end).
template <class... X>
  requires(array_operand<X> && ...)
auto stack(const std::tuple<X...>& operands, long axis = 0) {
  return detail::stack_exprs(detail::exprs_of(operands), axis);
}

// jnp.stack([a, b, c], axis) for operands of one type: kax::stack({a, b, c}, -1).
template <array_operand X, std::size_t N>
auto stack(const X (&operands)[N], long axis = 0) {
  return detail::stack_exprs(detail::exprs_of<N>(std::data(operands)), axis);
}

// jnp.stack(arrays, axis) for a std::array of operands.
template <array_operand X, std::size_t N>
auto stack(const std::array<X, N>& operands, long axis = 0) {
  return detail::stack_exprs(detail::exprs_of<N>(std::data(operands)), axis);
}

}  // namespace kax
