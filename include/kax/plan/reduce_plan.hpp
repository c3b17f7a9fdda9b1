// kax/plan/reduce_plan.hpp — how a reduction becomes kernels.
//
// Three traversals, chosen from shapes only (never from the thread count, so results are the
// same on any number of threads):
//   flat   every axis reduced over a dense operand: one linear index, evaluate_flat
//   inner  the last reduced axis is walked innermost, with L independent accumulators (lanes);
//          used when the operand's last axis is reduced (sum over rows, softmax's max/sum)
//   outer  the operand's last axis is kept: a thread owns a chunk of output columns and walks
//          the reduced positions, vectorized across columns (sum over axis 0)
// The reduced space of each output element is cut into fixed-size blocks; when there is more
// than one block per output, a second kernel combines the blocks' partial results pairwise.
// Float sums therefore add at most `block / lanes` numbers in sequence, then pairwise:
// error ~ (block/L + log2 L + log2 blocks) * eps instead of n * eps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

#include "kax/core/dtype.hpp"
#include "kax/core/extents.hpp"

namespace kax::detail {

enum class reduce_kind { flat, inner, outer };

inline const char* reduce_kind_name(reduce_kind k) {
  return k == reduce_kind::flat ? "flat" : k == reduce_kind::inner ? "inner" : "outer";
}

// Reduced positions per block (inner/flat), and reduced rows per block (outer).
inline constexpr std::size_t reduce_block = 8192;
inline constexpr std::size_t reduce_block_rows = 512;
// Output columns per work item in the outer traversal.
inline constexpr std::size_t reduce_columns = 64;

// Operand axes split into kept (K of them) and reduced (NR), plus the traversal.
template <std::size_t R, std::size_t NR>
struct reduce_geometry {
  static constexpr std::size_t K = R - NR;
  reduce_kind kind = reduce_kind::inner;
  multi_index<R> ext{};
  multi_index<NR> red_axes{};
  multi_index<NR> red_ext{};
  multi_index<K> kept_axes{};
  multi_index<K> kept_ext{};
  std::size_t n_out = 1;     // output elements
  std::size_t n_red = 1;     // reduced positions per output element
  std::size_t inner = 1;     // extent of the last reduced axis (inner) / of the last axis (outer)
  std::size_t blocks = 1;    // blocks per output element
  std::size_t block = 1;     // reduced positions per block
  std::size_t chunks = 1;    // column chunks per output row (outer)
  std::size_t rows_per_item = 1;  // output elements per work item (inner, one block each)
  bool inner_is_last = false;  // the last reduced axis is the operand's last axis

  // Work items of the first kernel.
  std::size_t items() const {
    if (kind == reduce_kind::outer) return (n_out / inner) * chunks * blocks;
    return (n_out + rows_per_item - 1) / rows_per_item * blocks;
  }
};

template <std::size_t R, std::size_t NR>
reduce_geometry<R, NR> plan_reduce(const shape<R>& in, const std::array<std::size_t, NR>& axes,
                                   bool operand_flat) {
  reduce_geometry<R, NR> g;
  std::array<bool, R> red{};
  for (std::size_t a : axes) red[a] = true;
  for (std::size_t k = 0, i = 0, j = 0; k < R; ++k) {
    g.ext[k] = in[k];
    if (red[k]) {
      g.red_axes[i] = k;
      g.red_ext[i++] = in[k];
      g.n_red *= in[k];
    } else {
      g.kept_axes[j] = k;
      g.kept_ext[j++] = in[k];
      g.n_out *= in[k];
    }
  }
  if constexpr (NR > 0) {
    g.inner = in[axes[NR - 1]];
    g.inner_is_last = axes[NR - 1] == R - 1;
  } else {
    g.inner = 1;  // a sum over no axes (of a per-example scalar under vmap) copies each element
  }
  if (NR == R && operand_flat) {
    g.kind = reduce_kind::flat;
  } else if (R > 0 && !red[R - 1] && NR > 0 && in[R - 1] >= 8) {
    g.kind = reduce_kind::outer;
    g.inner = in[R - 1];
    g.chunks = (g.inner + reduce_columns - 1) / reduce_columns;
  } else {
    g.kind = reduce_kind::inner;
  }
  g.block = g.kind == reduce_kind::outer ? reduce_block_rows : reduce_block;
  g.blocks = g.n_red <= g.block ? 1 : (g.n_red + g.block - 1) / g.block;
  // Short reductions (a row of 256) are grouped so that a work item has ~4096 elements of work:
  // per-item set-up (index arithmetic, a kernel call) would otherwise rival the reduction itself.
  if (g.kind == reduce_kind::inner && g.blocks == 1)
    g.rows_per_item = std::max<std::size_t>(1, 4096 / std::max<std::size_t>(1, g.n_red));
  return g;
}

template <class Red, class Out, std::size_t R, std::size_t NR>
std::string reduce_label(const reduce_geometry<R, NR>& g) {
  return std::string("kax::reduce<") + Red::name + "," + reduce_kind_name(g.kind) + "," +
         dtype_name<Out>() + ",rank" + std::to_string(R) + "->" + std::to_string(R - NR) + ">";
}

template <class Red, class Out>
std::string reduce_combine_label() {
  return std::string("kax::reduce<") + Red::name + ",combine-blocks," + dtype_name<Out>() + ">";
}

}  // namespace kax::detail
