// kax/core/extents.hpp — shapes (host side) and multi-indices (usable inside kernels).
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>

#include "kax/core/config.hpp"
#include "kax/core/errors.hpp"

namespace kax {

// A shape: the extents of a rank-R array, row-major like NumPy.
template <std::size_t R>
using shape = std::array<std::size_t, R>;

// A position inside a rank-R array; Kokkos::Array so that kernels can copy and index it.
template <std::size_t R>
using multi_index = Kokkos::Array<std::size_t, R>;

// Number of elements of a shape (1 for rank 0, 0 when any extent is 0).
template <std::size_t R>
constexpr std::size_t size_of(const shape<R>& s) {
  std::size_t n = 1;
  for (std::size_t k = 0; k < R; ++k) n *= s[k];
  return n;
}

// Row-major strides (in elements) of a shape.
template <std::size_t R>
constexpr shape<R> row_major_strides(const shape<R>& s) {
  shape<R> st{};
  std::size_t acc = 1;
  for (std::size_t k = R; k-- > 0;) {
    st[k] = acc;
    acc *= s[k];
  }
  return st;
}

// Copies a host shape into a kernel-side array.
template <std::size_t R>
constexpr multi_index<R> to_multi_index(const shape<R>& s) {
  multi_index<R> m{};
  for (std::size_t k = 0; k < R; ++k) m[k] = s[k];
  return m;
}

// Normalizes a possibly negative axis against rank `rank` (NumPy's rule), or throws axis_error.
inline std::size_t normalize_axis(long axis, std::size_t rank, const char* who) {
  const long r = static_cast<long>(rank);
  if (axis < -r || axis >= r)
    throw axis_error(std::string(who) + ": axis " + std::to_string(axis) +
                     " is out of range for an array of rank " + std::to_string(rank));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

namespace detail {

// Splits a row-major linear index into a multi-index (used when a kernel runs over a flat range).
template <std::size_t R>
KOKKOS_INLINE_FUNCTION multi_index<R> unravel(std::size_t linear, const multi_index<R>& ext) {
  multi_index<R> idx{};
  for (std::size_t k = R; k-- > 0;) {
    const std::size_t e = ext[k];
    idx[k] = linear % e;
    linear /= e;
  }
  return idx;
}

}  // namespace detail
}  // namespace kax
