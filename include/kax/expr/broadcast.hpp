// kax/expr/broadcast.hpp — NumPy broadcasting: result shapes and index projection.
#pragma once

#include <algorithm>
#include <string>

#include "kax/core/errors.hpp"
#include "kax/core/extents.hpp"

namespace kax::detail {

// The broadcast shape of two shapes (right-aligned; extents equal or one of them 1), or a
// shape_error worded as NumPy's: "operands could not be broadcast together with shapes ...".
template <std::size_t A, std::size_t B>
shape<std::max(A, B)> broadcast_shapes(const shape<A>& a, const shape<B>& b, const char* who) {
  constexpr std::size_t R = std::max(A, B);
  shape<R> out{};
  for (std::size_t k = 0; k < R; ++k) {
    const std::size_t ea = k + A >= R ? a[k + A - R] : 1;
    const std::size_t eb = k + B >= R ? b[k + B - R] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      throw shape_error(std::string(who) + ": operands could not be broadcast together with shapes " +
                        shape_string(a) + " " + shape_string(b));
    out[k] = ea == 1 ? eb : ea;
  }
  return out;
}

// Which axes of an operand are walked (1) or broadcast (0, extent 1) in the result.
template <std::size_t R>
multi_index<R> broadcast_keep(const shape<R>& s) {
  multi_index<R> keep{};
  for (std::size_t k = 0; k < R; ++k) keep[k] = s[k] != 1 ? 1 : 0;
  return keep;
}

// True when operand `x` is read at the result's own index: same rank, same extents.
template <class X, std::size_t R>
bool reads_pointwise(const X& x, const shape<R>& ext) {
  if constexpr (X::rank == R) return x.extents() == ext;
  else return false;
}

// True when operand `x` can take part in a flat evaluation of a result of shape `ext`: it is
// flat itself and either pointwise or rank 0 (rank-0 nodes ignore the linear index).
template <class X, std::size_t R>
bool flat_operand(const X& x, const shape<R>& ext) {
  return x.is_flat() && (X::rank == 0 || reads_pointwise(x, ext));
}

// The operand's index for result index `i`: right-aligned, broadcast axes pinned to 0.
template <std::size_t Rc, std::size_t R>
KOKKOS_INLINE_FUNCTION multi_index<Rc> project_index(const multi_index<R>& i,
                                                     const multi_index<Rc>& keep) {
  multi_index<Rc> c{};
  for (std::size_t k = 0; k < Rc; ++k) c[k] = i[k + R - Rc] * keep[k];
  return c;
}

}  // namespace kax::detail
