// kax/exec/reduce_kernels.hpp — the Kokkos kernels of a reduction (traversals: plan/reduce_plan.hpp).
//
// Host kernels keep L independent accumulators ("lanes") and vectorize across them with
// `omp simd`, as Eigen's redux does with several packets: one accumulator is latency-bound.
// Device kernels give each work item (output element x block) to one thread; team-level device
// reductions come with the GPU backends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kax/core/config.hpp"
#include "kax/exec/spaces.hpp"
#include "kax/expr/concepts.hpp"
#include "kax/expr/stage_buffer.hpp"
#include "kax/plan/reduce_plan.hpp"
#include "kax/core/detail/simd_warnings_off.hpp"  // after every other include

namespace kax::detail {

// Folds L lanes (a power of two) in halves: lanes[l] += lanes[l + L/2], ...; each step vectorizes.
// (Each step's width is a compile-time constant, so the steps unroll into register shuffles.)
template <class Red, std::size_t S, class Acc>
[[gnu::always_inline]] inline void fold_step(Acc* lanes) {
  for (std::size_t l = 0; l < S; ++l) lanes[l] = Red::combine(lanes[l], lanes[l + S]);
  if constexpr (S > 1) fold_step<Red, S / 2>(lanes);
}
template <class Red, std::size_t L, class Acc>
[[gnu::always_inline]] inline Acc fold_lanes(Acc* lanes) {
  if constexpr (L > 1) fold_step<Red, L / 2>(lanes);
  return lanes[0];
}

// Reduces row(j) for j in [0, n) (positions pos0 + j) in LL lanes held in registers.
template <class Red, std::size_t LL, class Row>
[[gnu::always_inline]] inline typename Red::acc_type reduce_row(const Row& row, std::size_t n,
                                                                std::size_t pos0) {
  using acc_type = typename Red::acc_type;
  acc_type acc[LL];
  for (std::size_t l = 0; l < LL; ++l) acc[l] = Red::identity();
  std::size_t j = 0;
  for (; j + LL <= n; j += LL) {
#pragma omp simd
    for (std::size_t l = 0; l < LL; ++l) acc[l] = Red::combine(acc[l], Red::lift(row(j + l), pos0 + j + l));
  }
  for (std::size_t l = 0; j < n; ++j, ++l) acc[l] = Red::combine(acc[l], Red::lift(row(j), pos0 + j));
  return fold_lanes<Red, LL>(acc);
}

template <class Acc>
inline constexpr std::size_t reduce_lanes = std::clamp<std::size_t>(256 / sizeof(Acc), 4, 64);
static_assert(reduce_lanes<float> == 64 && reduce_lanes<double> == 32, "kax: lane counts are powers of two");

// Combines acc[0..n) pairwise into acc[0] (order-preserving: left before right).
template <class Red, class Acc>
KOKKOS_INLINE_FUNCTION void pairwise_combine(Acc* acc, std::size_t n) {
  for (std::size_t s = 1; s < n; s *= 2)
    for (std::size_t l = 0; l + s < n; l += 2 * s) acc[l] = Red::combine(acc[l], acc[l + s]);
}

template <class Red, class E, std::size_t R, std::size_t NR>
struct reduce_host_kernel {
  using In = value_type_of<E>;
  using acc_type = typename Red::acc_type;
  using result_type = typename Red::result_type;
  static constexpr std::size_t L = reduce_lanes<acc_type>;
  static constexpr std::size_t K = R - NR;

  E expr;
  reduce_geometry<R, NR> g;
  result_type* out;
  acc_type* partial;  // blocks > 1: one accumulator per work item
  bool rows = true;   // rows_exact(expr): false reads through generic rows

  void store(std::size_t o, std::size_t w, const acc_type& a) const {
    if (g.blocks == 1) out[o] = Red::finalize(a, g.n_red);
    else partial[w] = a;
  }

  // Positions [j0, j1) of the last reduced axis (axis `a`; R - 1 when Last), base position pos0.
  template <bool Last, std::size_t LL>
  void segment(acc_type* lanes, const multi_index<R>& idx, std::size_t a, std::size_t j0,
               std::size_t j1, std::size_t pos0) const {
    if constexpr (R > 0 && Last) {
      with_row_of(expr, idx, rows, [&](const auto& row) {
        // A local copy of the lanes, which does not escape, stays in vector registers.
        acc_type acc[LL];
        for (std::size_t l = 0; l < LL; ++l) acc[l] = lanes[l];
        std::size_t j = j0;
        for (; j + LL <= j1; j += LL) {
#pragma omp simd
          for (std::size_t l = 0; l < LL; ++l)
            acc[l] = Red::combine(acc[l], Red::lift(row(j + l), pos0 + j + l));
        }
        for (std::size_t l = 0; j < j1; ++j, ++l) acc[l] = Red::combine(acc[l], Red::lift(row(j), pos0 + j));
        for (std::size_t l = 0; l < LL; ++l) lanes[l] = acc[l];
      });
    } else if constexpr (R > 0) {
      std::size_t j = j0;
      for (; j + LL <= j1; j += LL) {
#pragma omp simd
        for (std::size_t l = 0; l < LL; ++l) {
          multi_index<R> il = idx;
          il[Last ? R - 1 : a] = j + l;
          lanes[l] = Red::combine(lanes[l], Red::lift(expr.evaluate(il), pos0 + j + l));
        }
      }
      for (std::size_t l = 0; j < j1; ++j, ++l) {
        multi_index<R> il = idx;
        il[Last ? R - 1 : a] = j;
        lanes[l] = Red::combine(lanes[l], Red::lift(expr.evaluate(il), pos0 + j));
      }
    }
  }

  void run_flat(std::size_t w) const {
    const std::size_t begin = w * g.block;
    const std::size_t end = std::min(g.n_red, begin + g.block);
    acc_type lanes[L];
    for (std::size_t l = 0; l < L; ++l) lanes[l] = Red::identity();
    std::size_t q = begin;
    for (; q + L <= end; q += L) {
#pragma omp simd
      for (std::size_t l = 0; l < L; ++l)
        lanes[l] = Red::combine(lanes[l], Red::lift(expr.evaluate_flat(q + l), q + l));
    }
    for (std::size_t l = 0; q < end; ++q, ++l)
      lanes[l] = Red::combine(lanes[l], Red::lift(expr.evaluate_flat(q), q));
    store(0, w, fold_lanes<Red, L>(lanes));
  }

  // Row reductions take half the flat kernel's lanes: rows are often short (softmax's 1024, a
  // matrix-vector product's 256), and the lanes' set-up and fold would otherwise cost as much as
  // the row itself; long rows are memory-bound either way.  (One lane count also halves the
  // code each reduction instantiates.)
  static constexpr std::size_t L_row = L / 2 < 4 ? 4 : L / 2;

  void run_inner(std::size_t w) const { run_inner_lanes<L_row>(w); }

  template <std::size_t LL>
  void run_inner_lanes(std::size_t w) const {
    if constexpr (NR == 0) {
      // A reduction over no axes (vmap of a reduction of a per-example scalar): each output
      // element is its one operand element.
      const std::size_t o0 = w * g.rows_per_item;
      const std::size_t o1 = std::min(g.n_out, o0 + g.rows_per_item);
      for (std::size_t o = o0; o < o1; ++o) {
        const multi_index<K> kept = unravel(o, g.kept_ext);
        multi_index<R> idx{};
        for (std::size_t k = 0; k < K; ++k) idx[g.kept_axes[k]] = kept[k];
        out[o] = Red::finalize(Red::combine(Red::identity(), Red::lift(expr.evaluate(idx), 0)), 1);
      }
    } else {
      if (g.rows_per_item > 1) {
        run_inner_rows<LL>(w);
        return;
      }
      const std::size_t o = w / g.blocks, p = w % g.blocks;
      multi_index<R> idx{};
      const multi_index<K> kept = unravel(o, g.kept_ext);
      for (std::size_t k = 0; k < K; ++k) idx[g.kept_axes[k]] = kept[k];
      const std::size_t begin = p * g.block;
      const std::size_t end = std::min(g.n_red, begin + g.block);
      acc_type lanes[LL];
      for (std::size_t l = 0; l < LL; ++l) lanes[l] = Red::identity();
      const std::size_t a = g.red_axes[NR - 1];
      for (std::size_t q = begin; q < end;) {
        const std::size_t row = q / g.inner, j0 = q - row * g.inner;
        const std::size_t j1 = std::min(g.inner, j0 + (end - q));
        std::size_t r = row;
        for (std::size_t k = NR - 1; k-- > 0;) {
          idx[g.red_axes[k]] = r % g.red_ext[k];
          r /= g.red_ext[k];
        }
        if (g.inner_is_last) segment<true, LL>(lanes, idx, a, j0, j1, q - j0);
        else segment<false, LL>(lanes, idx, a, j0, j1, q - j0);
        q += j1 - j0;
      }
      store(o, w, fold_lanes<Red, LL>(lanes));
    }
  }

  // Work item w covers output elements [w * rows_per_item, ...), each reduced whole (one block):
  // the kept index advances as an odometer, and a single reduced axis needs no division at all.
  template <std::size_t LL>
  void run_inner_rows(std::size_t w) const {
    const std::size_t o0 = w * g.rows_per_item;
    inner_rows<LL>(o0, std::min(g.n_out, o0 + g.rows_per_item));
  }

  // Output elements [o0, o1), each one whole inner reduction (one block): the row stages of the
  // row-fused plan (exec/batch_rows.hpp) run the staged kernel's row loop on their batch rows.
  void run_outputs(std::size_t o0, std::size_t o1) const { inner_rows<L_row>(o0, o1); }

  template <std::size_t LL>
  void inner_rows(std::size_t o0, std::size_t o1) const {
    if constexpr (NR > 0) {
      multi_index<R> idx{};
      const multi_index<K> kept = unravel(o0, g.kept_ext);
      for (std::size_t k = 0; k < K; ++k) idx[g.kept_axes[k]] = kept[k];
      if constexpr (NR == 1 && K > 0 && steppable_row<decltype(row_of(expr, idx))>) {
        if (g.inner_is_last && rows && o0 < o1) {
          row_reductions_stepped<LL>(idx, o0, o1);
          return;
        }
      }
      const std::size_t a = g.red_axes[NR - 1];
      for (std::size_t o = o0; o < o1; ++o) {
        acc_type lanes[LL];
        for (std::size_t l = 0; l < LL; ++l) lanes[l] = Red::identity();
        if constexpr (NR == 1 && R > 0) {
          if (g.inner_is_last) {
            // The common case (a row reduction): the whole row in registers, one call.
            out[o] = Red::finalize(
                with_row_of(expr, idx, rows, [&](const auto& row) { return reduce_row<Red, LL>(row, g.inner, 0); }),
                g.n_red);
          } else {
            segment<false, LL>(lanes, idx, a, 0, g.inner, 0);
            out[o] = Red::finalize(fold_lanes<Red, LL>(lanes), g.n_red);
          }
        } else {
          for (std::size_t row = 0, q = 0; q < g.n_red; ++row, q += g.inner) {
            std::size_t r = row;
            for (std::size_t k = NR - 1; k-- > 0;) {
              idx[g.red_axes[k]] = r % g.red_ext[k];
              r /= g.red_ext[k];
            }
            if (g.inner_is_last) segment<true, LL>(lanes, idx, a, 0, g.inner, q);
            else segment<false, LL>(lanes, idx, a, 0, g.inner, q);
          }
          out[o] = Red::finalize(fold_lanes<Red, LL>(lanes), g.n_red);
        }
        next_kept_index(idx);
      }
    }
  }

  // Moves idx to the next output's index (an odometer over the kept axes) and says whether only
  // the last kept axis moved (no wrap).
  bool next_kept_index(multi_index<R>& idx) const {
    for (std::size_t k = K; k-- > 0;) {
      if (++idx[g.kept_axes[k]] < g.kept_ext[k]) return k == K - 1;
      idx[g.kept_axes[k]] = 0;
    }
    return false;
  }

  // inner_rows' row reductions for expressions whose rows step (expr/detail/row.hpp): each
  // output's row is the last one moved along the last kept axis, built afresh where it wraps.
  template <std::size_t LL>
  void row_reductions_stepped(multi_index<R> idx, const std::size_t o0, const std::size_t o1) const {
    with_row_stepper(expr, idx, [&](auto& rows_of_expr) {
      for (std::size_t o = o0;;) {
        out[o] = Red::finalize(reduce_row<Red, LL>(rows_of_expr.row(), g.inner, 0), g.n_red);
        if (++o == o1) return;
        rows_of_expr.next(idx, next_kept_index(idx));
      }
    });
  }

  void run_outer(std::size_t w) const {
    if constexpr (NR > 0 && K > 0) {
      constexpr std::size_t C = reduce_columns;
      constexpr std::size_t cascade = 128;  // rows summed per partial, then added to the total
      const std::size_t p = w % g.blocks;
      const std::size_t t = w / g.blocks;
      const std::size_t chunk = t % g.chunks, row_out = t / g.chunks;
      multi_index<R> idx{};
      std::size_t r = row_out;
      for (std::size_t k = K - 1; k-- > 0;) {
        idx[g.kept_axes[k]] = r % g.kept_ext[k];
        r /= g.kept_ext[k];
      }
      const std::size_t c0 = chunk * C, nc = std::min(C, g.inner - c0);
      const std::size_t begin = p * g.block;
      const std::size_t end = std::min(g.n_red, begin + g.block);
      acc_type total[C], part[C];
      for (std::size_t c = 0; c < C; ++c) total[c] = part[c] = Red::identity();
      const multi_index<NR> start = unravel(begin, g.red_ext);
      for (std::size_t k = 0; k < NR; ++k) idx[g.red_axes[k]] = start[k];
      std::size_t in_part = 0;
      for (std::size_t q = begin; q < end; ++q) {
        with_row_of(expr, idx, rows, [&](const auto& row) {
#pragma omp simd
          for (std::size_t c = 0; c < nc; ++c) part[c] = Red::combine(part[c], Red::lift(row(c0 + c), q));
        });
        if (++in_part == cascade) {
          for (std::size_t c = 0; c < nc; ++c) {
            total[c] = Red::combine(total[c], part[c]);
            part[c] = Red::identity();
          }
          in_part = 0;
        }
        for (std::size_t k = NR; k-- > 0;) {  // odometer over the reduced axes
          if (++idx[g.red_axes[k]] < g.red_ext[k]) break;
          idx[g.red_axes[k]] = 0;
        }
      }
      const std::size_t o0 = row_out * g.inner + c0;
      for (std::size_t c = 0; c < nc; ++c) {
        const acc_type a = Red::combine(total[c], part[c]);
        if (g.blocks == 1) out[o0 + c] = Red::finalize(a, g.n_red);
        else partial[(o0 + c) * g.blocks + p] = a;
      }
    }
  }

  void operator()(const std::int64_t w) const {
    const auto i = static_cast<std::size_t>(w);
    if (g.kind == reduce_kind::flat) run_flat(i);
    else if (g.kind == reduce_kind::inner) run_inner(i);
    else run_outer(i);
  }
};

// Device: one thread per (output element, block), walking its block in order.
template <class Red, class E, std::size_t R, std::size_t NR>
struct reduce_device_kernel {
  using acc_type = typename Red::acc_type;
  using result_type = typename Red::result_type;
  static constexpr std::size_t K = R - NR;
  E expr;
  reduce_geometry<R, NR> g;
  result_type* out;
  acc_type* partial;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t wi) const {
    const auto w = static_cast<std::size_t>(wi);
    const std::size_t o = w / g.blocks, p = w % g.blocks;
    const std::size_t begin = p * g.block;
    const std::size_t end = g.n_red < begin + g.block ? g.n_red : begin + g.block;
    acc_type acc = Red::identity();
    if (g.kind == reduce_kind::flat) {
      for (std::size_t q = begin; q < end; ++q) acc = Red::combine(acc, Red::lift(expr.evaluate_flat(q), q));
    } else {
      multi_index<R> idx{};
      const multi_index<K> kept = unravel(o, g.kept_ext);
      for (std::size_t k = 0; k < K; ++k) idx[g.kept_axes[k]] = kept[k];
      for (std::size_t q = begin; q < end; ++q) {
        const multi_index<NR> red = unravel(q, g.red_ext);
        for (std::size_t k = 0; k < NR; ++k) idx[g.red_axes[k]] = red[k];
        acc = Red::combine(acc, Red::lift(expr.evaluate(idx), q));
      }
    }
    if (g.blocks == 1) out[o] = Red::finalize(acc, g.n_red);
    else partial[w] = acc;
  }
};

// Second kernel when an output element's reduction spans several blocks.
template <class Red>
struct reduce_combine_kernel {
  typename Red::acc_type* partial;
  typename Red::result_type* out;
  std::size_t blocks;
  std::size_t n_red;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t oi) const {
    const auto o = static_cast<std::size_t>(oi);
    pairwise_combine<Red>(partial + o * blocks, blocks);
    out[o] = Red::finalize(partial[o * blocks], n_red);
  }
};

// Reduces `expr` as planned by `g` into the dense row-major buffer `out` (n_out elements).
template <class Red, class ExecSpace, class E, std::size_t R, std::size_t NR>
void run_reduce(const ExecSpace& space, const E& expr, reduce_geometry<R, NR> g,
                typename Red::result_type* out) {
  using acc_type = typename Red::acc_type;
  using result_type = typename Red::result_type;
  using index = Kokkos::IndexType<std::int64_t>;
  if (g.n_out == 0) return;
  if constexpr (!runs_on_host<ExecSpace>) {
    if (g.kind == reduce_kind::outer) g.kind = reduce_kind::inner;
    g.rows_per_item = 1;
    g.block = 1024;
    g.blocks = g.n_red <= g.block ? 1 : (g.n_red + g.block - 1) / g.block;
  }
  Kokkos::View<acc_type*, typename ExecSpace::memory_space> partial;
  if (g.blocks > 1)
    partial = decltype(partial)(Kokkos::view_alloc(std::string("kax::reduce partials"),
                                                   Kokkos::WithoutInitializing),
                                g.n_out * g.blocks);
  const std::string label = reduce_label<Red, result_type>(g);
  const auto items = static_cast<std::int64_t>(g.items());
  if constexpr (runs_on_host<ExecSpace>) {
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, items),
                         reduce_host_kernel<Red, E, R, NR>{expr, g, out, partial.data(), rows_exact(expr)});
  } else {
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace, index>(space, 0, items),
                         reduce_device_kernel<Red, E, R, NR>{expr, g, out, partial.data()});
  }
  if (g.blocks > 1)
    Kokkos::parallel_for(reduce_combine_label<Red, result_type>(),
                         Kokkos::RangePolicy<ExecSpace, index>(space, 0, static_cast<std::int64_t>(g.n_out)),
                         reduce_combine_kernel<Red>{partial.data(), out, g.blocks, g.n_red});
}

}  // namespace kax::detail

#include "kax/core/detail/simd_warnings_on.hpp"
