// kax/parallel/collectives.hpp — named-axis collectives: psum, pmean, pmax, pmin, all_gather,
// ppermute, pbroadcast and axis_index (jax.lax's).
//
//   auto f = [](auto x) { return x / kax::psum<"i">(kax::sum(x)); };
//   kax::Array<float, 2> y = kax::pmap<"i">(f)(x);   // each device's slice over the global sum
//
// A collective names an axis; the innermost enclosing transform that binds the name decides what
// it means (DESIGN.md, "named axes, one model"):
//   kax::pmap<"i">                the devices: the collective is a stage boundary; each device's
//                                 operand is computed by a fused kernel, the devices exchange the
//                                 values (parallel/axis_group.hpp; MPI across processes), and
//                                 what follows reads the result
//   kax::vmap(f, kax::axis_name<"i">)   the batch axis: vmap lowers it to an in-kernel reduction
//                                 over the batch (transform/detail/batching.hpp)
// Using a name that nothing encloses throws kax::error ("unbound axis name"), as JAX's NameError.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kax/core/fixed_string.hpp"
#include "kax/exec/assign.hpp"
#include "kax/expr/as_expr.hpp"
#include "kax/expr/scalar.hpp"
#include "kax/expr/stage_buffer.hpp"
#include "kax/parallel/axis_group.hpp"
#include "kax/plan/stages.hpp"

namespace kax {

// all_gather's tiled=True: kax::all_gather<"i">(x, kax::tiled) concatenates along axis 0 instead
// of stacking along a new axis 0 (the rank differs, so it is a type, not a bool).
struct tiled_t {
  explicit constexpr tiled_t() = default;
};
inline constexpr tiled_t tiled{};

namespace detail {

// What encloses the code that builds a collective: a pmap's device program, or a vmap with an
// axis name (pushed while it calls the function).  Innermost last.
struct axis_binding {
  std::string name;
  std::shared_ptr<axis_group> group;  // pmap: the devices; null for vmap
  int device = 0;                     // pmap: this program's local device
  std::size_t vmap_size = 0;          // vmap: the batch size
};

inline std::vector<axis_binding>& axis_bindings() {
  static thread_local std::vector<axis_binding> stack;
  return stack;
}

// Binds a name for the lifetime of the scope (pmap's device programs, vmap's call of f).
class axis_scope {
 public:
  explicit axis_scope(axis_binding b) { axis_bindings().push_back(std::move(b)); }
  ~axis_scope() { axis_bindings().pop_back(); }
  axis_scope(const axis_scope&) = delete;
  axis_scope& operator=(const axis_scope&) = delete;
};

template <fixed_string Name>
const axis_binding& find_axis(const std::string& who) {
  const auto& stack = axis_bindings();
  for (auto it = stack.rbegin(); it != stack.rend(); ++it)
    if (it->name == Name.str()) return *it;
  std::string bound;
  for (const auto& b : stack) bound += (bound.empty() ? "" : ", ") + ("'" + b.name + "'");
  throw error(who + ": unbound axis name '" + Name.str() + "' (use it inside kax::pmap<\"" + Name.str() +
              "\">, kax::vmap(f, kax::axis_name<\"" + Name.str() + "\">) or a kax::shard_map over a mesh with axis '" +
              Name.str() + "'; bound here: " +
              (bound.empty() ? "none" : bound) + ")");
}

enum class collective_op : std::uint8_t { psum, pmean, pmax, pmin, all_gather, ppermute, pbroadcast };

constexpr const char* collective_op_name(collective_op op) {
  switch (op) {
    case collective_op::psum: return "kax::psum";
    case collective_op::pmean: return "kax::pmean";
    case collective_op::pmax: return "kax::pmax";
    case collective_op::pmin: return "kax::pmin";
    case collective_op::all_gather: return "kax::all_gather";
    case collective_op::ppermute: return "kax::ppermute";
    default: return "kax::pbroadcast";
  }
}

constexpr collective_kind kind_of(collective_op op) {
  switch (op) {
    case collective_op::psum:
    case collective_op::pmean: return collective_kind::sum;
    case collective_op::pmax: return collective_kind::max;
    case collective_op::pmin: return collective_kind::min;
    case collective_op::all_gather: return collective_kind::all_gather;
    case collective_op::ppermute: return collective_kind::ppermute;
    default: return collective_kind::broadcast;
  }
}

template <collective_op Op, fixed_string Name>
std::string collective_who() {
  return std::string(collective_op_name(Op)) + "<\"" + Name.str() + "\">";
}

// A collective over axis Name of an operand E.  Under pmap it is a materialization point: its
// value is computed (operand kernel, then the exchange) before anything that reads it.
template <collective_op Op, fixed_string Name, expression E, bool Tiled = false>
struct CollectiveExpr : expression_base, materialization_base {
  using value_type = value_type_of<E>;
  static constexpr std::size_t arg_rank = rank_of<E>;
  static constexpr collective_op op = Op;
  // The template arguments, for code that recognizes a collective by these members
  // (collective_node) instead of deducing them: nvcc cannot deduce a fixed_string argument.
  static constexpr auto name = Name;
  static constexpr bool tiled = Tiled;
  using operand_type = E;
  static constexpr bool is_collective_node = true;
  static constexpr bool stacks = Op == collective_op::all_gather && !Tiled;
  static constexpr std::size_t rank = stacks ? arg_rank + 1 : arg_rank;
  static_assert(dtype<value_type>, "kax collectives: the operand must have an arithmetic dtype");
  static_assert(!(Op == collective_op::pmean) || std::is_floating_point_v<value_type>,
                "kax::pmean: the operand must be floating point (pmean of integers would divide them)");
  static_assert(!(Op == collective_op::psum) || !std::is_same_v<value_type, bool>,
                "kax::psum: the operand must not be bool");
  static_assert(!Tiled || arg_rank >= 1, "kax::all_gather: tiled needs an operand of rank >= 1");

  E arg;
  axis_binding binding;  // the enclosing transform that binds Name
  std::vector<permute_pair> perm;
  int source = 0;
  shape<rank> ext{};
  detail::stage_buffer<value_type, rank> buffer;
  std::shared_ptr<Array<value_type, arg_rank>> contribution = std::make_shared<Array<value_type, arg_rank>>();

  CollectiveExpr(E a, axis_binding b, std::vector<permute_pair> pairs = {}, int src = 0)
      : arg(std::move(a)), binding(std::move(b)), perm(std::move(pairs)), source(src) {
    const shape<arg_rank> in = arg.extents();
    const std::size_t n = axis_size();
    if constexpr (stacks) {
      ext[0] = n;
      for (std::size_t k = 0; k < arg_rank; ++k) ext[k + 1] = in[k];
    } else {
      ext = in;
      if constexpr (Tiled) ext[0] = in[0] * n;
    }
    const std::string who = collective_who<Op, Name>();
    if constexpr (Op == collective_op::ppermute) {
      std::vector<bool> src_seen(n, false), dst_seen(n, false);
      for (const permute_pair& p : perm) {
        if (p.source < 0 || p.dest < 0 || static_cast<std::size_t>(p.source) >= n || static_cast<std::size_t>(p.dest) >= n)
          throw axis_error(who + ": the pair (" + std::to_string(p.source) + ", " + std::to_string(p.dest) +
                           ") names a device outside the axis of size " + std::to_string(n));
        if (src_seen[static_cast<std::size_t>(p.source)] || dst_seen[static_cast<std::size_t>(p.dest)])
          throw axis_error(who + ": sources and destinations must be unique; (" + std::to_string(p.source) + ", " +
                           std::to_string(p.dest) + ") repeats one");
        src_seen[static_cast<std::size_t>(p.source)] = dst_seen[static_cast<std::size_t>(p.dest)] = true;
      }
    }
    if constexpr (Op == collective_op::pbroadcast) {
      if (source < 0 || static_cast<std::size_t>(source) >= n)
        throw axis_error(who + ": source " + std::to_string(source) + " is outside the axis of size " + std::to_string(n));
    }
    // Under vmap the node is rewritten before evaluation and never computed: an empty buffer (its
    // stamp identifies the node while vmap rewrites it).
    buffer = detail::stage_buffer<value_type, rank>(binding.group ? ext : shape<rank>{});
  }

  // The number of devices (pmap) or examples (vmap) along the axis.
  std::size_t axis_size() const {
    return binding.group ? static_cast<std::size_t>(binding.group->size()) : binding.vmap_size;
  }

  shape<rank> extents() const { return ext; }
  bool is_flat() const { return true; }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<rank>& i) const { return buffer.read(i); }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const { return buffer.read_flat(n); }
  auto row(const multi_index<rank>& i) const { return buffer.row(i); }
  bool conflicts(const detail::buffer_span&, bool) const { return false; }
  // Whether the exchange would read memory in `span` other than at the element it writes.  A
  // combining collective (psum, pmean, pmax, pmin) reads each device's operand only at the
  // element it writes, and every device reads the others' operands before any device writes
  // beyond its own chunk (axis_group::allreduce), so it may write over its operand in place (a
  // donated argument).  The others move elements between positions or devices.
  bool operand_reads(const detail::buffer_span& span) const {
    constexpr bool combining = kind_of(Op) == collective_kind::sum || kind_of(Op) == collective_kind::max ||
                               kind_of(Op) == collective_kind::min;
    return arg.conflicts(span, combining);
  }

  template <class F>
  void for_each_operand(F&& f) const {
    f(arg);
  }
  // Not computable batch row by batch row (exec/batch_rows.hpp): the exchange is per device.
  std::optional<detail::row_stage> row_stage(std::size_t) const { return std::nullopt; }

  // The operand's kernel (unless it is an array already), then the exchange among the devices.
  template <class Space>
  void compute_into(const Space& space, value_type* out, std::uint64_t epoch) const {
    const std::string who = collective_who<Op, Name>();
    if (!binding.group)
      throw error(who + ": the axis '" + Name.str() +
                  "' is bound by kax::vmap, which rewrites the collective before evaluation; this value escaped it");
    detail::prepare(arg, epoch, space);
    const shape<arg_rank> in_shape = arg.extents();
    const value_type* in = nullptr;
    if constexpr (materialization<E>) {
      in = arg.buffer.values.data();  // computed by prepare: dense and row-major
    } else if constexpr (requires { arg.view; arg.is_flat(); }) {
      if (arg.is_flat()) in = arg.view.data();
    }
    if (!in) {
      if (contribution->extents() != in_shape || contribution->data() == nullptr)
        *contribution = detail::uninitialized<value_type, arg_rank>(in_shape, "kax::collective operand");
      launch_elementwise(space, dense_target(contribution->data(), in_shape), arg);
      in = contribution->data();
    }
    space.fence();
    collective_header h;
    h.kind = kind_of(Op);
    h.elem = element_kind_of<value_type>();
    h.count = size_of(in_shape);
    h.source = source;
    h.who = who;
    h.shape = typed_shape<value_type>(in_shape);
    exchange(in, out, h);
  }

  template <class Space>
  void materialize(const Space& space, std::uint64_t epoch) const {
    detail::materialize_once(*this, space, epoch);
  }

  void describe_stage(detail::plan_description& plan, bool into_output) const {
    detail::describe(arg, plan);
    const std::string who = collective_who<Op, Name>();
    const std::size_t n = axis_size();
    plan.add(who + " over " + std::to_string(n) + " devices (" +
             (binding.group && binding.group->spans_processes() ? "shared memory + MPI" : "shared memory") + ")" +
             (into_output ? " -> output " : " -> temporary ") + typed_shape<value_type>(ext));
    if (!into_output) ++plan.temporaries;
  }

 private:
  // `in` and `out` are in the default memory space.  The exchange itself (shared memory among
  // a process's devices, then MPI) reads and writes host memory: on a GPU build both sides pass
  // through host copies (one device per process there, so this is the MPI path's staging).
  void exchange(const value_type* in, value_type* out, const collective_header& h) const {
    if constexpr (host_accessible<default_memory_space>) {
      exchange_host(in, out, h);
    } else {
      using host_view = Kokkos::View<value_type*, Kokkos::HostSpace>;
      using device_view = Kokkos::View<value_type*, default_memory_space, Kokkos::MemoryUnmanaged>;
      const std::size_t out_count = size_of(ext);
      host_view hin(Kokkos::ViewAllocateWithoutInitializing("kax::collective staging"), h.count);
      host_view hout(Kokkos::ViewAllocateWithoutInitializing("kax::collective staging"), out_count);
      Kokkos::deep_copy(hin, device_view(const_cast<value_type*>(in), h.count));
      exchange_host(hin.data(), hout.data(), h);
      Kokkos::deep_copy(device_view(out, out_count), hout);
    }
  }
  void exchange_host(const value_type* in, value_type* out, const collective_header& h) const {
    axis_group& g = *binding.group;
    const int d = binding.device;
    if constexpr (Op == collective_op::all_gather) {
      g.all_gather(d, in, out, h);
    } else if constexpr (Op == collective_op::ppermute) {
      g.ppermute(d, in, out, h, perm);
    } else if constexpr (Op == collective_op::pbroadcast) {
      g.broadcast(d, in, out, h);
    } else {
      g.allreduce(d, in, out, h);
      if constexpr (Op == collective_op::pmean) {
        const value_type n = static_cast<value_type>(g.size());
        for (std::size_t i = 0; i < h.count; ++i) out[i] /= n;
      }
    }
  }
};

template <collective_op Op, fixed_string Name, bool Tiled = false, class X>
auto make_collective(const X& x, std::vector<permute_pair> perm = {}, int source = 0) {
  auto e = as_expr(x);
  const axis_binding& b = find_axis<Name>(collective_who<Op, Name>());
  return CollectiveExpr<Op, Name, decltype(e), Tiled>(std::move(e), b, std::move(perm), source);
}

// axis_index's value: the device's index along the axis (pmap), or, inside a vmap with the axis
// name, a placeholder that vmap replaces by 0, 1, ..., B-1 along the batch.
template <fixed_string Name>
struct AxisIndexExpr : ScalarExpr<std::int32_t, false> {
  static constexpr auto name = Name;
  static constexpr bool is_axis_index_node = true;  // see axis_index_node
  std::size_t vmap_size = 0;  // nonzero: bound by a vmap
  AxisIndexExpr(std::int32_t v, std::size_t vmapped) : ScalarExpr<std::int32_t, false>(v), vmap_size(vmapped) {}
};

}  // namespace detail

// lax.psum(x, "i"): the elementwise sum of x over the devices (or batch) of axis "i".
template <fixed_string Name, array_operand X>
auto psum(const X& x) {
  return detail::make_collective<detail::collective_op::psum, Name>(x);
}
// lax.pmean(x, "i")
template <fixed_string Name, array_operand X>
auto pmean(const X& x) {
  return detail::make_collective<detail::collective_op::pmean, Name>(x);
}
// lax.pmax(x, "i"), lax.pmin(x, "i") (NaN propagates)
template <fixed_string Name, array_operand X>
auto pmax(const X& x) {
  return detail::make_collective<detail::collective_op::pmax, Name>(x);
}
template <fixed_string Name, array_operand X>
auto pmin(const X& x) {
  return detail::make_collective<detail::collective_op::pmin, Name>(x);
}
// lax.all_gather(x, "i"): every device's x stacked along a new axis 0 (shape (n, ...)), or with
// kax::tiled concatenated along axis 0 (shape (n * x.shape[0], ...)).
template <fixed_string Name, array_operand X>
auto all_gather(const X& x) {
  return detail::make_collective<detail::collective_op::all_gather, Name>(x);
}
template <fixed_string Name, array_operand X>
auto all_gather(const X& x, tiled_t) {
  return detail::make_collective<detail::collective_op::all_gather, Name, true>(x);
}
// lax.ppermute(x, "i", perm): for each (source, dest) pair, dest receives source's x; a device
// that is no pair's destination gets zeros.  Sources and destinations must be unique.
template <fixed_string Name, array_operand X>
auto ppermute(const X& x, const std::vector<std::pair<int, int>>& perm) {
  std::vector<detail::permute_pair> pairs;
  for (const auto& [s, d] : perm) pairs.push_back({s, d});
  return detail::make_collective<detail::collective_op::ppermute, Name>(x, std::move(pairs));
}
// pbroadcast(x, "i", source): every device gets the x of device `source`.
template <fixed_string Name, array_operand X>
auto pbroadcast(const X& x, int source = 0) {
  return detail::make_collective<detail::collective_op::pbroadcast, Name>(x, {}, source);
}
// lax.axis_index("i"): this device's index along the axis, an int32 scalar.
template <fixed_string Name>
auto axis_index() {
  const detail::axis_binding& b = detail::find_axis<Name>(std::string("kax::axis_index<\"") + Name.str() + "\">");
  const std::int32_t v = b.group ? static_cast<std::int32_t>(b.group->global_index(b.device)) : 0;
  return detail::AxisIndexExpr<Name>(v, b.group ? 0 : b.vmap_size);
}

}  // namespace kax
