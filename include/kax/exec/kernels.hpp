// kax/exec/kernels.hpp — the Kokkos functors that evaluate one fused elementwise expression.
//
// Host spaces (OpenMP, Serial, Threads) get chunked ranges whose inner loop is `omp simd`, so the
// compiler vectorizes the whole fused expression (kax's math is written for that).  Device spaces
// get one index per thread.  Two traversals: "flat" (every operand contiguous, same shape: one
// linear index) and "strided" (broadcasting, transposes, slices: a multi-index per element).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kax/core/config.hpp"
#include "kax/core/extents.hpp"
#include "kax/expr/detail/row.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail {

// Where results go: any strided memory (Arrays, views, Eigen objects).
template <class T, std::size_t R>
struct output_target {
  T* data = nullptr;
  multi_index<R> ext{};
  multi_index<R> strides{};
  bool contiguous = true;

  KOKKOS_INLINE_FUNCTION std::size_t offset(const multi_index<R>& i) const {
    std::size_t off = 0;
    for (std::size_t k = 0; k < R; ++k) off += i[k] * strides[k];
    return off;
  }
};

// Host, flat: chunk c covers [c*chunk, min(n, (c+1)*chunk)).
template <class T, class E>
struct flat_host_kernel {
  T* out;
  E expr;
  std::size_t n;
  std::size_t chunk;

  void operator()(const std::int64_t c) const {
    const std::size_t begin = static_cast<std::size_t>(c) * chunk;
    const std::size_t end = begin + chunk < n ? begin + chunk : n;
    T* __restrict__ o = out;
#pragma omp simd
    for (std::size_t i = begin; i < end; ++i) o[i] = static_cast<T>(expr.evaluate_flat(i));
  }
};

// Host, strided: item w is piece (w % pieces) of row (w / pieces); a row is the last axis.
template <class T, std::size_t R, class E>
struct strided_host_kernel {
  output_target<T, R> out;
  E expr;
  std::size_t pieces;
  std::size_t piece_len;
  bool rows = true;  // rows_exact(expr): false reads through generic rows

  void operator()(const std::int64_t w) const {
    // Integer division is tens of cycles: none for a whole row (pieces == 1) of a rank-2 result.
    std::size_t row = static_cast<std::size_t>(w), piece = 0;
    if (pieces != 1) {
      piece = row % pieces;
      row /= pieces;
    }
    multi_index<R> idx{};
    for (std::size_t k = R - 1; k-- > 1;) {
      idx[k] = row % out.ext[k];
      row /= out.ext[k];
    }
    if constexpr (R > 1) idx[0] = row;
    const std::size_t last = out.ext[R - 1];
    const std::size_t begin = piece * piece_len;
    const std::size_t end = begin + piece_len < last ? begin + piece_len : last;
    const std::size_t base = out.offset(idx);
    const std::size_t st = out.strides[R - 1];
    T* __restrict__ o = out.data;
    // One row evaluator per row (expr/detail/row.hpp): the inner loop is pointer arithmetic only.
    with_row_of(expr, idx, rows, [&](const auto& r) {
      if (st == 1) {
#pragma omp simd
        for (std::size_t j = begin; j < end; ++j) o[base + j] = static_cast<T>(r(j));
      } else {
#pragma omp simd
        for (std::size_t j = begin; j < end; ++j) o[base + j * st] = static_cast<T>(r(j));
      }
    });
  }
};

// Device, flat.
template <class T, class E>
struct flat_device_kernel {
  T* out;
  E expr;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    out[i] = static_cast<T>(expr.evaluate_flat(static_cast<std::size_t>(i)));
  }
};

// Device, strided: one multi-index per thread.
template <class T, std::size_t R, class E>
struct strided_device_kernel {
  output_target<T, R> out;
  E expr;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const multi_index<R> idx = unravel(static_cast<std::size_t>(i), out.ext);
    out.data[out.offset(idx)] = static_cast<T>(expr.evaluate(idx));
  }
};

}  // namespace kax::detail

#include "kax/core/detail/simd_warnings_on.hpp"
