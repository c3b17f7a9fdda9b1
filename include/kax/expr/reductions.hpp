// kax/expr/reductions.hpp — sum, mean, prod, max, min, any, all, argmax, argmin.
//
//   kax::sum(x)                      every axis (jnp.sum(x))
//   kax::sum(x, 0, -1)               the listed axes, negative counting from the end
//   kax::sum(x, 1, kax::keepdims)    keepdims=True
// Reductions are lazy like everything else; the planner computes each once per evaluation.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "kax/expr/as_expr.hpp"
#include "kax/expr/reduce.hpp"

namespace kax {

// Tag for keepdims=True: kax::sum(x, 1, kax::keepdims).
struct keepdims_t {
  explicit constexpr keepdims_t() = default;
};
inline constexpr keepdims_t keepdims{};

namespace detail {

template <class... A>
inline constexpr std::size_t count_axes = (std::size_t{0} + ... + (std::integral<A> ? 1 : 0));

template <class... A>
inline constexpr bool ends_with_keepdims = [] {
  if constexpr (sizeof...(A) == 0) return false;
  else return std::is_same_v<std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>, keepdims_t>;
}();

// Axis arguments: integers, optionally followed by kax::keepdims.
template <class... A>
concept reduction_args =
    (count_axes<A...> + (ends_with_keepdims<A...> ? 1 : 0)) == sizeof...(A);

template <template <class> class Red, array_operand X, class... A>
auto make_reduce(const char* who, const X& x, A... a) {
  using E = expr_t<X>;
  constexpr std::size_t R = rank_of<E>;
  constexpr std::size_t given = count_axes<A...>;
  static_assert(given <= R, "kax::sum/mean/prod/max/min/any/all/argmax/argmin: more axes than the operand's rank");
  constexpr std::size_t NR = given == 0 ? R : given;  // no axes: reduce over all of them
  constexpr bool keep = ends_with_keepdims<A...>;
  std::array<std::size_t, NR> axes{};
  if constexpr (given == 0) {
    for (std::size_t k = 0; k < R; ++k) axes[k] = k;
  } else {
    std::size_t j = 0;
    auto take = [&](auto v) {
      if constexpr (std::integral<decltype(v)>) axes[j++] = normalize_axis(static_cast<long>(v), R, who);
    };
    (take(a), ...);
  }
  return ReduceExpr<Red, E, NR, keep>(as_expr(x), axes, who);
}

}  // namespace detail

// jnp.sum(x, axis, keepdims): bool sums to int32, other dtypes keep theirs.  Float sums use
// several accumulators per thread and a pairwise combine; the result does not depend on the
// number of threads (docs/reductions.md).
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto sum(const X& x, A... axes) {
  return detail::make_reduce<detail::sum_reducer>("kax::sum", x, axes...);
}

// jnp.mean(x, axis, keepdims): integers average in float64.
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto mean(const X& x, A... axes) {
  return detail::make_reduce<detail::mean_reducer>("kax::mean", x, axes...);
}

// jnp.prod(x, axis, keepdims).
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto prod(const X& x, A... axes) {
  return detail::make_reduce<detail::prod_reducer>("kax::prod", x, axes...);
}

// jnp.max(x, axis, keepdims): NaN propagates; an empty reduction throws kax::shape_error.
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto max(const X& x, A... axes) {
  return detail::make_reduce<detail::max_reducer>("kax::max", x, axes...);
}

// jnp.min(x, axis, keepdims).
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto min(const X& x, A... axes) {
  return detail::make_reduce<detail::min_reducer>("kax::min", x, axes...);
}

// jnp.any(x, axis, keepdims): bool.
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto any(const X& x, A... axes) {
  return detail::make_reduce<detail::any_reducer>("kax::any", x, axes...);
}

// jnp.all(x, axis, keepdims): bool.
template <array_operand X, class... A>
  requires detail::reduction_args<A...>
auto all(const X& x, A... axes) {
  return detail::make_reduce<detail::all_reducer>("kax::all", x, axes...);
}

// jnp.argmax(x): the index into the flattened array of the first maximum (int64); NaN wins.
// jnp.argmax(x, axis[, keepdims]): along one axis.
template <array_operand X, class... A>
  requires(detail::reduction_args<A...> && detail::count_axes<A...> <= 1)
auto argmax(const X& x, A... axis) {
  return detail::make_reduce<detail::argmax_reducer>("kax::argmax", x, axis...);
}

// jnp.argmin, as argmax.
template <array_operand X, class... A>
  requires(detail::reduction_args<A...> && detail::count_axes<A...> <= 1)
auto argmin(const X& x, A... axis) {
  return detail::make_reduce<detail::argmin_reducer>("kax::argmin", x, axis...);
}

}  // namespace kax
