// kax/expr/leaf.hpp — ArrayLeaf: the node that reads memory (an Array, ArrayView or Eigen object).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kax/core/array.hpp"
#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"

namespace kax {

// Reads a strided buffer.  `view` carries ownership (managed for Arrays, so an expression kept in
// `auto` never dangles; unmanaged for views and Eigen objects) and the pointer; indexing goes
// through `strides` so that column-major or outer-strided Eigen storage is read in place.
template <element_dtype T, std::size_t R, class MemorySpace>
struct ArrayLeaf : expression_base {
  using value_type = T;
  using memory_space = MemorySpace;
  using view_type = typename Array<T, R, MemorySpace>::view_type;
  static constexpr std::size_t rank = R;

  view_type view;
  multi_index<R> ext{};
  multi_index<R> strides{};
  bool contiguous = true;  // row-major and dense: evaluate_flat may be used
  std::uint32_t trace = 0;  // kax::grad's number for a differentiated argument (core/array.hpp)

  ArrayLeaf() = default;
  // A row-major dense leaf over a view.
  explicit ArrayLeaf(view_type v) : view(std::move(v)) {
    shape<R> s = detail::view_extents<view_type, R>(view);
    ext = to_multi_index(s);
    strides = to_multi_index(row_major_strides(s));
  }
  // A leaf with explicit strides (elements), e.g. column-major Eigen storage.
  ArrayLeaf(view_type v, const shape<R>& s, const shape<R>& st) : view(std::move(v)) {
    ext = to_multi_index(s);
    strides = to_multi_index(st);
    contiguous = (st == row_major_strides(s)) || size_of(s) <= 1;
    if (!contiguous && R >= 1) {
      // Strides of unit axes never matter: compare only the axes that are walked.
      bool dense = true;
      std::size_t acc = 1;
      for (std::size_t k = R; k-- > 0;) {
        if (s[k] != 1 && st[k] != acc) dense = false;
        acc *= s[k];
      }
      contiguous = dense;
    }
  }

  shape<R> extents() const {
    shape<R> s{};
    for (std::size_t k = 0; k < R; ++k) s[k] = ext[k];
    return s;
  }
  bool is_flat() const { return contiguous; }

  KOKKOS_FORCEINLINE_FUNCTION T evaluate(const multi_index<R>& i) const {
    std::size_t off = 0;
    for (std::size_t k = 0; k < R; ++k) off += i[k] * strides[k];
    return view.data()[off];
  }
  // A rank-0 leaf broadcasts against anything: every linear index reads its one element.
  KOKKOS_FORCEINLINE_FUNCTION T evaluate_flat(std::size_t n) const { return view.data()[R == 0 ? 0 : n]; }

  // The elements along `axis` through index c (c[axis] ignored): a pointer and a stride.
  detail::strided_row<T> row_along(const multi_index<R>& c, std::size_t axis) const {
    std::size_t off = 0;
    for (std::size_t k = 0; k < R; ++k)
      if (k != axis) off += c[k] * strides[k];
    if constexpr (R == 0) return {view.data(), 1};  // callers read a rank-0 row at 0 only
    else return {view.data() + off, strides[axis]};
  }
  detail::strided_row<T> row(const multi_index<R>& i) const { return row_along(i, R == 0 ? 0 : R - 1); }

  // Reading is safe only at the output's own element: same buffer, same dense layout.
  bool conflicts(const detail::buffer_span& out, bool pointwise) const {
    const T* b = view.data();
    std::size_t span = 0;
    if (size_of(extents()) > 0) {
      span = 1;
      for (std::size_t k = 0; k < R; ++k) span += (ext[k] - 1) * strides[k];
    }
    if (!out.overlaps(b, b + span)) return false;
    return !(pointwise && contiguous && out.begin == b && out.end == b + span);
  }
};

namespace detail {
template <class X>
struct is_array_leaf : std::false_type {};
template <class T, std::size_t R, class M>
struct is_array_leaf<ArrayLeaf<T, R, M>> : std::true_type {};
}  // namespace detail

template <element_dtype T, std::size_t R, class M>
ArrayLeaf<T, R, M> Array<T, R, M>::as_leaf() const {
  ArrayLeaf<T, R, M> leaf(view_);
  leaf.trace = trace_;
  return leaf;
}

template <element_dtype T, std::size_t R, class M>
ArrayLeaf<T, R, M> ArrayView<T, R, M>::as_leaf() const {
  return ArrayLeaf<T, R, M>(view_);
}

}  // namespace kax
