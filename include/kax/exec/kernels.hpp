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

// The target that fills `data` as a dense row-major array of shape `s` (fresh temporaries, Arrays).
template <class T, std::size_t R>
output_target<T, R> dense_target(T* data, const shape<R>& s) {
  return {data, to_multi_index(s), to_multi_index(row_major_strides(s)), true};
}

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

// Host, strided.  A row is the output's last axis.  With pieces == 1, item w is the whole rows
// [w * rows_per_item, ...) (run_rows); otherwise item w is piece (w % pieces) of row (w / pieces),
// for results with too few rows to feed every thread.
template <class T, std::size_t R, class E>
struct strided_host_kernel {
  output_target<T, R> out;
  E expr;
  std::size_t pieces;
  std::size_t piece_len;
  bool rows = true;               // rows_exact(expr): false reads through generic rows
  std::size_t rows_per_item = 1;  // pieces == 1

  void operator()(const std::int64_t w) const {
    if (pieces == 1) {
      const std::size_t r0 = static_cast<std::size_t>(w) * rows_per_item;
      run_rows(r0, r0 + rows_per_item < row_count() ? r0 + rows_per_item : row_count());
      return;
    }
    std::size_t row = static_cast<std::size_t>(w) / pieces;
    const std::size_t piece = static_cast<std::size_t>(w) % pieces;
    const std::size_t last = out.ext[R - 1];
    const std::size_t begin = piece * piece_len;
    run_rows(row, row + 1, begin, begin + piece_len < last ? begin + piece_len : last);
  }

  // Elements [begin, end) of one row, at o[j * st].  Out of line: the vector loop keeps only its
  // own operands in registers across the calls of libmvec it may make.  The loop reads a copy of
  // the row evaluator, not the caller's object through `row`: read through the reference, the
  // direct softmax (its output pass exp(x - max) / sum, 4096 x 1024 float) ran 1.4-2x slower on
  // one thread (0.72-0.86x of the hand-written row loop instead of 1.24-1.51x).
  template <class Row>
  [[gnu::noinline]] static void write_row(T* __restrict__ o, const std::size_t st, const std::size_t begin,
                                          const std::size_t end, const Row& row) {
    const Row r = row;
    if (st == 1) {
#pragma omp simd
      for (std::size_t j = begin; j < end; ++j) o[j] = static_cast<T>(r(j));
    } else {
#pragma omp simd
      for (std::size_t j = begin; j < end; ++j) o[j * st] = static_cast<T>(r(j));
    }
  }

  std::size_t row_count() const {
    std::size_t n = 1;
    for (std::size_t k = 0; k + 1 < R; ++k) n *= out.ext[k];
    return n;
  }

  struct no_hook {
    void operator()(std::size_t) const {}
  };

  // Moves idx to the next row's index (row-major order of the leading axes) and says whether
  // only its second-to-last component moved (no wrap).
  bool next_row_index(multi_index<R>& idx) const {
    for (std::size_t k = R - 1; k-- > 0;) {
      if (++idx[k] < out.ext[k]) return k == R - 2;
      idx[k] = 0;
    }
    return false;
  }

  // run_rows for expressions whose rows step (expr/detail/row.hpp): the row's version (dense,
  // contiguous, strided) is chosen once, and each row is the last one moved along the
  // second-to-last axis, built afresh only where that index wraps.
  template <class Hook>
  void run_rows_stepped(multi_index<R> idx, const std::size_t r0, const std::size_t r1, const std::size_t begin,
                        const std::size_t end, const Hook& before_row) const {
    const std::size_t st = out.strides[R - 1];
    const auto out_step = static_cast<std::ptrdiff_t>(out.strides[R - 2]);
    with_row_stepper(expr, idx, [&](auto& rows_of_expr) {
      T* row_out = out.data + out.offset(idx);
      for (std::size_t r = r0;;) {
        before_row(r);
        write_row(row_out, st, begin, end, rows_of_expr.row());
        if (++r == r1) return;
        const bool stepped = next_row_index(idx);
        row_out = stepped ? row_out + out_step : out.data + out.offset(idx);
        rows_of_expr.next(idx, stepped);
      }
    });
  }

  // Elements [begin, end) of rows [r0, r1) (row-major order of the leading axes).  One function
  // for the whole run, the next row's index stepped rather than recomputed: a row costs its
  // evaluator and the vector loop's setup, which matters for short rows.  before_row(r) runs
  // just before row r is written (the row-fused plan's per-row stage, exec/batch_rows.hpp).
  template <class Hook = no_hook>
  void run_rows(std::size_t r0, std::size_t r1, std::size_t begin = 0, std::size_t end = ~std::size_t{0},
                const Hook& before_row = {}) const {
    if (r0 >= r1) return;
    const std::size_t last = out.ext[R - 1];
    if (end > last) end = last;
    multi_index<R> idx{};
    for (std::size_t k = R - 1, row = r0; k-- > 0;) {
      idx[k] = row % out.ext[k];
      row /= out.ext[k];
    }
    const std::size_t st = out.strides[R - 1];
    T* const o = out.data;
    if constexpr (R >= 2 && steppable_row<decltype(row_of(expr, idx))>) {
      if (rows) {
        run_rows_stepped(idx, r0, r1, begin, end, before_row);
        return;
      }
    }
    for (std::size_t r = r0; r < r1; ++r) {
      before_row(r);
      T* const row_out = o + out.offset(idx);
      with_row_of(expr, idx, rows, [&](const auto& row) { write_row(row_out, st, begin, end, row); });
      next_row_index(idx);
    }
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
