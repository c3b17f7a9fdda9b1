// kax/nn/detail/reductions.hpp — the pieces softmax and logsumexp share: JAX's max with
// initial=-inf, and the promotion of integer inputs to floating point.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "kax/expr/math.hpp"
#include "kax/expr/reducers.hpp"
#include "kax/expr/reductions.hpp"

namespace kax::nn::detail {

// jnp.max(x, axis, initial=-inf), as jax.nn.softmax and logsumexp call it: an empty reduction is
// -inf instead of an error, so softmax over an axis of extent 0 gives an empty array and
// logsumexp gives log(0) + 0 = -inf, as JAX does.  Kernel labels still read "max".
template <dtype In>
struct max_initial_reducer : kax::detail::max_reducer<In> {
  static constexpr bool needs_elements = false;
};

// JAX's promote_args_inexact: integer and bool inputs compute in float64 (kax's float_of_t).
template <array_operand X>
auto inexact(const X& x) {
  using T = value_type_of<expr_t<X>>;
  if constexpr (std::is_floating_point_v<T>) return as_expr(x);
  else return kax::astype<float_of_t<T>>(x);
}

// The axis arguments of a reduction call without the trailing kax::keepdims, as a tuple.
template <class A>
auto axis_tuple(A a) {
  if constexpr (std::integral<A>) return std::tuple<long>(static_cast<long>(a));
  else return std::tuple<>{};
}
template <class... A>
auto axes_only(A... a) {
  return std::tuple_cat(axis_tuple(a)...);
}

// An extents array as the signed shape kax::reshape takes.
template <std::size_t R>
std::array<long, R> signed_shape(const shape<R>& s) {
  std::array<long, R> out{};
  for (std::size_t k = 0; k < R; ++k) out[k] = static_cast<long>(s[k]);
  return out;
}

}  // namespace kax::nn::detail
