// kax/transform/axes.hpp — the axis specifications of vmap: kax::none, kax::in_axes,
// kax::out_axes, kax::axis_size.
//
// An entry is an integer (negative counts from the end, as in NumPy), kax::none (the argument is
// not mapped / the output is not batched), or, for an argument or output that is a std::tuple or
// std::array of arrays (a "pytree"), either one entry for all its elements or a nested
// kax::in_axes(...) / kax::out_axes(...) with one entry per element (JAX's tree prefixes).
// Whether an entry is none is part of its type, because it decides the type of the batched
// expression; the integer itself is a run-time value.
#pragma once

#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "kax/core/fixed_string.hpp"

namespace kax {

// An unmapped argument or an unbatched output (JAX's None; not -1, which is the last axis).
struct none_t {
  explicit constexpr none_t() = default;
};
inline constexpr none_t none{};

template <class... A>
struct in_axes_t {
  std::tuple<A...> entries;
};

template <class... A>
struct out_axes_t {
  std::tuple<A...> entries;
};

// vmap's batch size when no argument is mapped (jax.vmap(..., axis_size=n)).
struct axis_size {
  std::size_t value;
  explicit constexpr axis_size(std::size_t n) : value(n) {}
};

// jax.vmap(f, axis_name="i"): names the batch axis so that collectives (kax::psum<"i"> ...) inside
// f reduce over the batch.  kax::vmap(f, kax::axis_name<"i">).
template <fixed_string Name>
struct axis_name_t {
  static constexpr auto name = Name;
  static constexpr bool is_axis_name_option = true;  // see detail::is_axis_name
};
template <fixed_string Name>
inline constexpr axis_name_t<Name> axis_name{};

namespace detail {

// By a member, not by a partial specialization on axis_name_t<Name>: nvcc's front end cannot
// deduce a class-type (fixed_string) template argument.
template <class A>
concept axis_name_option = requires { A::is_axis_name_option; };
template <class A>
struct is_axis_name : std::bool_constant<axis_name_option<A>> {};

// The stored form of one entry: integers become long, none and nested specs stay as they are.
template <class A>
struct axis_entry {
  static_assert(std::integral<A> || std::is_same_v<A, none_t>,
                "kax::in_axes/out_axes: an entry must be an integer axis, kax::none, or a nested "
                "kax::in_axes(...)/kax::out_axes(...) for a tuple argument");
  using type = std::conditional_t<std::integral<A>, long, none_t>;
};
template <class... A>
struct axis_entry<in_axes_t<A...>> {
  using type = in_axes_t<A...>;
};
template <class... A>
struct axis_entry<out_axes_t<A...>> {
  using type = out_axes_t<A...>;
};

template <class A>
using axis_entry_t = typename axis_entry<std::remove_cvref_t<A>>::type;

// The default out_axes: 0 for every output, known at compile time so that the batched
// expression needs no transpose.
struct leading_axis_t {};

// The default in_axes: 0 for every argument.
struct all_leading_t {};

template <class S>
struct is_axes_spec : std::false_type {};
template <class... A>
struct is_axes_spec<in_axes_t<A...>> : std::true_type {};
template <class... A>
struct is_axes_spec<out_axes_t<A...>> : std::true_type {};

// The entries of a nested spec (in_axes_t and out_axes_t nest alike).
template <class... A>
const std::tuple<A...>& entries_of(const in_axes_t<A...>& s) {
  return s.entries;
}
template <class... A>
const std::tuple<A...>& entries_of(const out_axes_t<A...>& s) {
  return s.entries;
}

}  // namespace detail

// jax.vmap(f, in_axes=(0, None)): kax::in_axes(0, kax::none).
template <class... A>
constexpr auto in_axes(A... a) {
  return in_axes_t<detail::axis_entry_t<A>...>{{static_cast<detail::axis_entry_t<A>>(a)...}};
}

// jax.vmap(f, out_axes=1): kax::out_axes(1); one entry per output of a tuple-returning f, or one
// entry for all of them.
template <class... A>
constexpr auto out_axes(A... a) {
  return out_axes_t<detail::axis_entry_t<A>...>{{static_cast<detail::axis_entry_t<A>>(a)...}};
}

}  // namespace kax
