// kax/expr/concepts.hpp — what an expression node is, and how operands become nodes.
//
// A node is a small class (NVIDIA MatX's operator shape) that knows:
//   value_type, rank                       element type and rank, at compile time
//   extents()                              its shape, at run time (host)
//   evaluate(multi_index<rank>)            one element, inside a kernel
//   evaluate_flat(linear)                  one element by row-major linear index; only valid when
//   is_flat()                              is true (every leaf is contiguous and unbroadcast)
//   conflicts(span, pointwise)             whether evaluating into memory `span` would read an
//                                          element of it that a different output element writes
// Evaluation (plan/, exec/) is separate from the nodes, as Eigen separates expressions from
// evaluators.
#pragma once

#include <concepts>
#include <cstddef>
#include <type_traits>

#include "kax/core/dtype.hpp"
#include "kax/core/extents.hpp"

namespace kax {

namespace detail {

// A half-open byte range, used to detect that an output aliases an input.
struct buffer_span {
  const void* begin = nullptr;
  const void* end = nullptr;
  bool overlaps(const void* b, const void* e) const {
    return begin != end && b != e && std::less<>{}(b, end) && std::less<>{}(begin, e);
  }
};

}  // namespace detail

// Every expression node derives from this tag; it is how kax recognizes its own nodes.
struct expression_base {};

// A lazy kax expression node (see the file comment for the members it provides).
template <class E>
concept expression =
    std::derived_from<std::remove_cvref_t<E>, expression_base> && requires(const std::remove_cvref_t<E>& e) {
      typename std::remove_cvref_t<E>::value_type;
      { std::remove_cvref_t<E>::rank } -> std::convertible_to<std::size_t>;
      { e.extents() } -> std::same_as<shape<std::remove_cvref_t<E>::rank>>;
      { e.is_flat() } -> std::same_as<bool>;
    };

// Rank and element type of an expression.
template <expression E>
inline constexpr std::size_t rank_of = std::remove_cvref_t<E>::rank;
template <expression E>
using value_type_of = typename std::remove_cvref_t<E>::value_type;

// Arrays (and ArrayViews, Eigen leaves) announce themselves with this trait and `as_leaf()`.
template <class A>
concept array_like = requires(const std::remove_cvref_t<A>& a) {
  { a.as_leaf() } -> expression;
};

// Anything an operator accepts: a node, an array, or a C++ scalar.
template <class X>
concept operand = expression<X> || array_like<X> || scalar<X>;

// An operand that is not a plain scalar (at least one of these must appear in an operation).
template <class X>
concept array_operand = expression<X> || array_like<X>;

}  // namespace kax
