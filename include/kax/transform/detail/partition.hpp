// kax/transform/detail/partition.hpp — kax::jit's SPMD partitioner: rewrites a whole-array
// expression graph into one device's program on its blocks, inserting the collectives it needs
// (XLA's sharding propagation and SPMD partitioning, for kax's node types).
//
// The jitted function builds its graph once per device on JitArgExpr placeholders (global shapes).
// part(ctx, node, want) returns an expression for the block of `node` that this device holds under
// the layout `want` (a mesh-axis list per dimension), top-down:
//   argument          its block, resharded when its sharding is not `want` (all-gathers over the
//                     axes it is split on, then a local slice)
//   other leaves      a lazy slice of the block (arrays captured by the function, random numbers)
//   elementwise       the same layout for every operand (broadcast dimensions replicated): no
//                     communication, and the whole elementwise chain stays one fused kernel
//   transpose, expand_dims/squeeze, broadcast_to    the layout follows the dimensions
//   reduction         kept dimensions as wanted, reduced dimensions split as the operand
//                     naturally is (natural()); the local reduction, then psum/pmax/pmin over the
//                     mesh axes of the reduced dimensions (prod and argmax replicate instead)
//   contraction       output labels as wanted, summed labels split as the operands naturally are;
//                     the local GEMM on the blocks, then a psum over the summed labels' axes
//   reshape, slice, concatenate    computed replicated, then sliced (a documented fallback)
// Every device runs the same rewrite with the same layouts, so all devices of a group reach the
// same collectives in the same order.  Reductions and contractions are evaluated as the rewrite
// reaches them (they are materialization points anyway); results are memoized per node and layout.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kax/core/factories.hpp"
#include "kax/exec/assign.hpp"
#include "kax/expr/binary.hpp"
#include "kax/expr/contract/contract_expr.hpp"
#include "kax/expr/contract/label_expr.hpp"
#include "kax/expr/layout/broadcast_to.hpp"
#include "kax/expr/layout/concatenate.hpp"
#include "kax/expr/layout/reshape.hpp"
#include "kax/expr/layout/slice.hpp"
#include "kax/expr/layout/transpose.hpp"
#include "kax/expr/layout/unit_axes.hpp"
#include "kax/expr/reduce.hpp"
#include "kax/expr/reducers.hpp"
#include "kax/expr/unary.hpp"
#include "kax/expr/where.hpp"
#include "kax/nn/detail/param_unary.hpp"
#include "kax/parallel/collectives.hpp"
#include "kax/parallel/mesh.hpp"
#include "kax/parallel/sharded_array.hpp"
#include "kax/plan/stages.hpp"
#include "kax/transform/detail/mapped.hpp"

namespace kax::detail {

// A layout: for every dimension, the mesh axes (indices) it is split over, major first.
using layout = std::vector<std::vector<std::size_t>>;

inline layout layout_of(const Mesh& mesh, const PartitionSpec& spec, std::size_t rank) {
  layout l(rank);
  for (std::size_t d = 0; d < rank && d < spec.size(); ++d)
    for (const std::string& n : spec[d].names()) l[d].push_back(mesh.axis_index(n));
  return l;
}

inline PartitionSpec spec_of(const Mesh& mesh, const layout& l) {
  std::vector<spec_entry> entries;
  for (const auto& axes : l) {
    std::vector<std::string> names;
    for (std::size_t a : axes) names.push_back(mesh.axis_names()[a]);
    entries.emplace_back(std::move(names));
  }
  while (!entries.empty() && entries.back().is_none()) entries.pop_back();  // printed as JAX prints it
  return PartitionSpec(std::move(entries));
}

// A jitted function's argument: the global array, never evaluated (the rewrite replaces it).
template <class T, std::size_t R>
struct JitArgExpr : expression_base {
  using value_type = T;
  static constexpr std::size_t rank = R;
  std::size_t index = 0;
  shape<R> ext{};

  JitArgExpr(std::size_t i, const shape<R>& e) : index(i), ext(e) {}
  shape<R> extents() const { return ext; }
  bool is_flat() const { return false; }
  bool conflicts(const buffer_span&, bool) const { return false; }
  template <class I>
  value_type evaluate(const I&) const {
    static_assert(dependent_false<I>,
                  "kax::jit: an argument cannot be evaluated inside the jitted function; return an expression of "
                  "it instead (kax::jit evaluates the returned expressions on the devices' blocks)");
    return value_type{};
  }
  template <class I>
  value_type evaluate_flat(const I& i) const {
    return evaluate(i);
  }
};

template <class X>
struct is_jit_arg : std::false_type {};
template <class T, std::size_t R>
struct is_jit_arg<JitArgExpr<T, R>> : std::true_type {};

// One device's rewrite.
struct partition_context {
  const Mesh* mesh = nullptr;
  std::vector<std::size_t> coords;
  std::vector<axis_binding> axes;  // per mesh axis: its group and this device's index in it
  std::vector<std::shared_ptr<void>> blocks;  // argument i's block: Array<T, R>
  std::vector<layout> held;                   // argument i's layout
  std::vector<const void*> argument_data;     // the arguments' block buffers (results must not alias them)
  std::map<std::pair<const void*, layout>, std::shared_ptr<void>> memo;
  std::vector<std::string> steps;  // the communication this device did, in order (jit's explain)

  std::size_t shards(const std::vector<std::size_t>& axes_of_dim) const {
    std::size_t n = 1;
    for (std::size_t a : axes_of_dim) n *= mesh->shape()[a];
    return n;
  }
  std::size_t block_index(const std::vector<std::size_t>& axes_of_dim) const {
    std::size_t i = 0;
    for (std::size_t a : axes_of_dim) i = i * mesh->shape()[a] + coords[a];
    return i;
  }
  template <std::size_t R>
  shape<R> block_shape(const shape<R>& ext, const layout& l) const {
    shape<R> b = ext;
    for (std::size_t d = 0; d < R; ++d) b[d] = ext[d] / shards(l[d]);
    return b;
  }
  template <std::size_t R>
  shape<R> block_offset(const shape<R>& ext, const layout& l) const {
    shape<R> o{};
    for (std::size_t d = 0; d < R; ++d) o[d] = block_index(l[d]) * (ext[d] / shards(l[d]));
    return o;
  }
};

inline layout replicated(std::size_t rank) { return layout(rank); }

// Whether extent n can be split over the axes (and none of them is in `used`).
inline bool can_split(const partition_context& ctx, std::size_t n, const std::vector<std::size_t>& axes,
                      const std::vector<bool>& used) {
  for (std::size_t a : axes)
    if (used[a]) return false;
  return !axes.empty() && n % ctx.shards(axes) == 0;
}

inline std::vector<bool> used_axes(const partition_context& ctx, const layout& l) {
  std::vector<bool> used(ctx.mesh->rank(), false);
  for (const auto& axes : l)
    for (std::size_t a : axes) used[a] = true;
  return used;
}

// ---- collectives on blocks --------------------------------------------------------------------

// In place: x combined elementwise over the devices of mesh axis a (pmean: then divided).
template <class T, std::size_t R>
void combine_over(partition_context& ctx, std::size_t a, Array<T, R>& x, collective_kind kind, bool mean) {
  Kokkos::fence();
  collective_header h;
  h.kind = kind;
  h.elem = element_kind_of<T>();
  h.count = x.size();
  h.who = std::string("kax::jit (") + (kind == collective_kind::sum ? "psum" : kind == collective_kind::max ? "pmax" : "pmin") +
          " over '" + ctx.mesh->axis_names()[a] + "')";
  h.shape = typed_shape<T>(x.extents());
  const axis_binding& b = ctx.axes[a];
  ctx.steps.push_back(h.who + " of " + h.shape);
  b.group->allreduce(b.device, x.data(), x.data(), h);
  if (mean) {
    const T n = static_cast<T>(b.group->size());
    for (std::size_t i = 0; i < h.count; ++i) x.data()[i] /= n;
  }
}

// x (a block whose dimension d is split over `axes`, major first) gathered along d over its last
// axis: dimension d grows by that axis' size.
template <class T, std::size_t R>
Array<T, R> gather_minor(partition_context& ctx, const Array<T, R>& x, std::size_t d, std::size_t a) {
  Kokkos::fence();
  const axis_binding& b = ctx.axes[a];
  const std::size_t n = static_cast<std::size_t>(b.group->size());
  const shape<R> in = x.extents();
  shape<R> out_shape = in;
  out_shape[d] *= n;
  std::vector<T> all(n * x.size());
  collective_header h;
  h.kind = collective_kind::all_gather;
  h.elem = element_kind_of<T>();
  h.count = x.size();
  h.who = "kax::jit (all_gather over '" + ctx.mesh->axis_names()[a] + "' to reshard)";
  h.shape = typed_shape<T>(in);
  ctx.steps.push_back(h.who + " of " + h.shape);
  b.group->all_gather(b.device, x.data(), all.data(), h);
  Array<T, R> out = uninitialized<T, R>(out_shape, "kax::jit reshard");
  for (std::size_t g = 0; g < n; ++g) {
    shape<R> off{};
    off[d] = g * in[d];
    copy_block<T, R>(all.data() + g * x.size(), out.data(), out_shape, in, off, true);
  }
  return out;
}

// A block held under `from`, as the block under `to`: all-gathers first (every dimension whose
// split changes becomes whole), then local slices.
template <class T, std::size_t R>
Array<T, R> reshard_block(partition_context& ctx, Array<T, R> x, const layout& from, const layout& to) {
  if (from == to) return x;
  layout cur = from;
  for (std::size_t d = 0; d < R; ++d) {
    if (cur[d] == to[d]) continue;
    while (!cur[d].empty()) {
      x = gather_minor(ctx, x, d, cur[d].back());
      cur[d].pop_back();
    }
  }
  const shape<R> whole = x.extents();
  bool slice = false;
  for (std::size_t d = 0; d < R; ++d) slice = slice || cur[d] != to[d];
  if (!slice) return x;
  layout cut(R);
  for (std::size_t d = 0; d < R; ++d) cut[d] = cur[d] == to[d] ? std::vector<std::size_t>{} : to[d];
  const shape<R> b = ctx.block_shape(whole, cut);
  Array<T, R> out = uninitialized<T, R>(b, "kax::jit reshard");
  Kokkos::fence();
  copy_block<T, R>(x.data(), out.data(), whole, b, ctx.block_offset(whole, cut), false);
  return out;
}

// The block of a whole (replicated) expression under `want`: a lazy slice.
template <class E>
auto block_slice(const partition_context& ctx, E e, const layout& want) {
  constexpr std::size_t R = rank_of<E>;
  const shape<R> ext = e.extents();
  const shape<R> b = ctx.block_shape(ext, want);
  const shape<R> off = ctx.block_offset(ext, want);
  Kokkos::Array<std::int64_t, R> first{}, step{};
  for (std::size_t d = 0; d < R; ++d) {
    first[d] = static_cast<std::int64_t>(off[d]);
    step[d] = 1;
  }
  return SliceExpr<E>(std::move(e), b, first, step);
}

}  // namespace kax::detail
