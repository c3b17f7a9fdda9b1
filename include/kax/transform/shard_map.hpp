// kax/transform/shard_map.hpp — kax::shard_map: a function on per-device blocks over a device
// mesh, with collectives over the mesh's axis names (jax.shard_map).
//
//   kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
//   auto mm = kax::shard_map([](auto a, auto b) { return kax::psum<"y">(kax::matmul(a, b)); }, mesh,
//                            kax::in_specs(kax::P("x", "y"), kax::P("y", kax::none)),
//                            kax::out_specs(kax::P("x", kax::none)));
//   kax::ShardedArray<float, 2> c = mm(a, b);       // kax::to_host(c) == a @ b
//
// Every device of the mesh runs f once, on its blocks of the arguments (in_specs: one
// PartitionSpec per argument), on a host task of its own, as pmap does.  Inside f, a collective
// over a mesh axis name (kax::psum<"y"> ...) combines the devices that share the other mesh
// coordinates; kax::axis_index<"x">() is the device's coordinate along "x".  The results are
// blocks of the global outputs laid out by out_specs; a mesh axis that an out_spec does not name
// means the output is replicated over it, which debug builds check (every replica must hold the
// same values, else kax::replication_error; KAX_CHECK_REPLICATION=1 or 0 forces the check on or off).
//
// Arguments: a kax::Array (the global array: each device gets its block, a zero-copy view when
// only the leading dimension is split), a kax::ShardedArray (its blocks are used as they are when
// its sharding is the spec's, else it is resharded first), any other expression (a lazy slice of
// it), or a scalar (spec P()).  Returns kax::ShardedArray (a std::tuple of them when f returns a
// tuple).  shard_map runs when called, like pmap.  Over MPI every process calls it with the same
// global arguments (or its own ShardedArray blocks), and the mesh spans all processes' devices.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kax/core/factories.hpp"
#include "kax/exec/assign.hpp"
#include "kax/exec/host_tasks.hpp"
#include "kax/expr/layout/slice.hpp"
#include "kax/parallel/collectives.hpp"
#include "kax/parallel/devices.hpp"
#include "kax/parallel/mesh.hpp"
#include "kax/parallel/sharded_array.hpp"
#include "kax/transform/detail/pmap_outputs.hpp"

#if !defined(KAX_CHECK_REPLICATION)
#if defined(NDEBUG)
#define KAX_CHECK_REPLICATION 0
#else
#define KAX_CHECK_REPLICATION 1
#endif
#endif

namespace kax {

template <std::size_t N>
struct in_specs_t {
  std::array<PartitionSpec, N> specs;
};
template <std::size_t N>
struct out_specs_t {
  std::array<PartitionSpec, N> specs;
};

// One PartitionSpec per argument of the mapped function.
template <class... S>
  requires(std::is_convertible_v<S, PartitionSpec> && ...)
in_specs_t<sizeof...(S)> in_specs(const S&... s) {
  return {{PartitionSpec(s)...}};
}
// One PartitionSpec per returned value (one for a single value; one per element of a tuple).
template <class... S>
  requires(std::is_convertible_v<S, PartitionSpec> && ...)
out_specs_t<sizeof...(S)> out_specs(const S&... s) {
  return {{PartitionSpec(s)...}};
}

class replication_error : public error {
 public:
  using error::error;
};

namespace detail {

// Pushes a binding for every mesh axis while a device program runs.
class mesh_scope {
 public:
  explicit mesh_scope(std::vector<axis_binding> bindings) : n_(bindings.size()) {
    for (axis_binding& b : bindings) axis_bindings().push_back(std::move(b));
  }
  ~mesh_scope() {
    for (std::size_t i = 0; i < n_; ++i) axis_bindings().pop_back();
  }
  mesh_scope(const mesh_scope&) = delete;
  mesh_scope& operator=(const mesh_scope&) = delete;

 private:
  std::size_t n_;
};

// The axis groups of one call: for every mesh axis, one axis_group per group of devices along it
// that has devices in this process.
struct mesh_groups {
  // groups[axis][group number]
  std::vector<std::map<std::size_t, std::shared_ptr<axis_group>>> groups;

  mesh_groups(const Mesh& mesh, const std::vector<std::size_t>& local) : groups(mesh.rank()) {
    link_mesh(mesh);
    const mesh_state& s = *mesh.state();
    for (std::size_t a = 0; a < mesh.rank(); ++a) {
      for (std::size_t k : local) {
        const std::size_t g = group_number(mesh, a, k);
        if (groups[a].count(g)) continue;
        int here = 0;
        for (std::size_t p : group_positions(mesh, a, k)) here += mesh.devices()[p].process_index == process_index();
        groups[a][g] = std::make_shared<axis_group>(mesh.axis_names()[a], here, collective_timeout_limit(), s.links[a][g]);
      }
    }
  }

  // The bindings of mesh position k: per axis its group and its index among the group's local devices.
  std::vector<axis_binding> bindings(const Mesh& mesh, std::size_t k) const {
    std::vector<axis_binding> out;
    const std::vector<std::size_t> c = mesh.coords(k);
    for (std::size_t a = 0; a < mesh.rank(); ++a) {
      const auto& g = groups[a].at(group_number(mesh, a, k));
      out.push_back({mesh.axis_names()[a], g, static_cast<int>(c[a]) % g->local_size(), 0});
    }
    return out;
  }

  void abort(const std::string& why) const {
    for (const auto& per_axis : groups)
      for (const auto& [g, group] : per_axis) group->abort(why);
  }
};

// A device's block of an argument (in_specs) at mesh position k.
template <class X>
auto block_arg(const X& x, const NamedSharding& s, std::size_t t, std::size_t k, const std::string& who) {
  using A = std::remove_cvref_t<X>;
  if constexpr (is_sharded_array<A>::value) {
    (void)s, (void)k, (void)who;
    return x.blocks()[t];
  } else if constexpr (scalar<A>) {
    (void)s, (void)t, (void)k, (void)who;
    return x;
  } else {
    (void)t;
    using E = expr_t<X>;
    constexpr std::size_t R = rank_of<E>;
    const shape<R> ext = as_expr(x).extents();
    const shape<R> b = s.block_shape(ext, who);
    const shape<R> off = s.block_offset(k, b);
    if constexpr (is_kax_array<A>::value) {
      using T = typename A::value_type;
      if (b == ext) return x;
      bool rows_only = true;
      for (std::size_t d = 1; d < R; ++d) rows_only = rows_only && b[d] == ext[d];
      if (rows_only) {
        auto sub = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return Kokkos::subview(x.view(), std::make_pair(off[0], off[0] + b[0]), ((void)K, Kokkos::ALL)...);
        }(std::make_index_sequence<R - 1>{});
        typename A::view_type v = sub;
        return A(v);
      }
      A out = detail::uninitialized<T, R, typename A::memory_space>(b, "kax::shard_map block");
      copy_block<T, R>(x.data(), out.data(), ext, b, off, false);
      return out;
    } else {
      std::array<range, R> ranges{};
      for (std::size_t d = 0; d < R; ++d)
        ranges[d] = range(static_cast<long>(off[d]), static_cast<long>(off[d] + b[d]));
      return slice(as_expr(x), ranges);
    }
  }
}

// An argument as the device programs read it: a ShardedArray laid out as its spec asks (resharded
// when it is not), anything else as it is.
template <class X>
decltype(auto) laid_out(const X& x, const NamedSharding& s, const std::string& who) {
  using A = std::remove_cvref_t<X>;
  if constexpr (is_sharded_array<A>::value) {
    if (!(x.sharding().mesh() == s.mesh()))
      throw shape_error(who + ": an argument is sharded over " + x.sharding().mesh().to_string() +
                        ", not over the mesh of the shard_map, " + s.mesh().to_string());
    return device_put(x, s);
  } else {
    if constexpr (scalar<A>) {
      if (s.spec().size() != 0)
        throw shape_error(who + ": a scalar argument's spec must be P(), not " + s.spec().to_string());
    }
    else {
      // Block shapes are checked here, before any device program starts.
      s.block_shape(as_expr(x).extents(), who);
    }
    return static_cast<const X&>(x);
  }
}

// Bitwise equality of two replicas' blocks: which index first differs, if any.
template <class T, std::size_t R>
std::optional<std::size_t> first_difference(const Array<T, R>& a, const Array<T, R>& b) {
  const std::size_t n = a.size();
  if (n == 0 || std::memcmp(a.data(), b.data(), n * sizeof(T)) == 0) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(a.data() + i, b.data() + i, sizeof(T)) != 0) return i;
  return std::nullopt;
}

// shard_map and jit run device programs of their own: not from inside another's (pmap's too).
inline void reject_nested(const std::string& who) {
  for (const axis_binding& b : axis_bindings())
    if (b.group)
      throw error(who + ": called inside the device program of a pmap or shard_map over '" + b.name +
                  "'; nested device programs are not supported");
}

// One list of device blocks per value the function returns (Ys: the returned values as a tuple).
template <class Ys, std::size_t... K>
auto output_blocks(std::index_sequence<K...>) {
  return std::tuple<std::vector<Array<value_type_of<decltype(as_expr(std::declval<std::tuple_element_t<K, Ys>>()))>,
                                      rank_of<decltype(as_expr(std::declval<std::tuple_element_t<K, Ys>>()))>>>...>{};
}

template <class F, std::size_t NI, std::size_t NO>
class shard_mapped {
 public:
  shard_mapped(F f, Mesh mesh, in_specs_t<NI> in, out_specs_t<NO> out)
      : f_(std::move(f)), mesh_(std::move(mesh)), in_(std::move(in)), out_(std::move(out)) {
    // Unknown or repeated axis names throw now, saying which spec.
    auto check = [&](const PartitionSpec& p, const std::string& where) {
      try {
        NamedSharding(mesh_, p);
      } catch (const axis_error& e) {
        throw axis_error("kax::shard_map (" + where + "): " + e.what());
      }
    };
    for (std::size_t i = 0; i < NI; ++i) check(in_.specs[i], "in_specs " + std::to_string(i));
    for (std::size_t i = 0; i < NO; ++i) check(out_.specs[i], "out_specs " + std::to_string(i));
  }

  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert(sizeof...(Args) == NI, "kax::shard_map: in_specs must have one PartitionSpec per argument of the call");
    const std::string who = "kax::shard_map";
    reject_nested(who);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      const std::array<NamedSharding, NI> shardings{NamedSharding(mesh_, in_.specs[I])...};
      const std::tuple<decltype(laid_out(args, shardings[I], who))...> prepared(
          laid_out(args, shardings[I], who + " (argument " + std::to_string(I) + ")")...);
      const std::vector<std::size_t> local = mesh_.local_positions();
      const std::size_t n = local.size();
      const mesh_groups groups(mesh_, local);

      using Y = std::invoke_result_t<const F&, decltype(block_arg(std::get<I>(prepared), shardings[I], 0, 0, who))...>;
      using Ys = decltype(as_tuple(std::declval<Y>()));
      constexpr std::size_t m = std::tuple_size_v<Ys>;
      static_assert(NO == m, "kax::shard_map: out_specs must have one PartitionSpec per returned value");
      auto blocks = output_blocks<Ys>(std::make_index_sequence<m>{});
      std::apply([n](auto&... v) { (v.resize(n), ...); }, blocks);
      std::vector<std::exception_ptr> failures(n);

      exec::run_tasks(n, [&](std::size_t t) {
        try {
          const mesh_scope bound(groups.bindings(mesh_, local[t]));
          auto y = as_tuple(std::invoke(f_, block_arg(std::get<I>(prepared), shardings[I], t, local[t], who)...));
          [&]<std::size_t... K>(std::index_sequence<K...>) {
            (write_block(std::get<K>(blocks)[t], as_expr(std::get<K>(y))), ...);
          }(std::make_index_sequence<m>{});
        } catch (...) {
          failures[t] = std::current_exception();
          groups.abort(who + ": device " + std::to_string(mesh_.devices()[local[t]].id) + " failed");
        }
      });
      rethrow_root_cause(failures);
      auto out = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::make_tuple(assemble(std::move(std::get<K>(blocks)), out_.specs[K], K, local)...);
      }(std::make_index_sequence<m>{});
      if constexpr (tuple_like<Y>) return out;
      else return std::get<0>(std::move(out));
    }(std::index_sequence_for<Args...>{});
  }

  const Mesh& mesh() const { return mesh_; }

 private:
  template <class T, std::size_t R, class E>
  static void write_block(Array<T, R>& out, const E& e) {
    out = detail::uninitialized<T, R>(e.extents(), "kax::shard_map output");
    evaluate_into_view<T, R, default_memory_space>(out.view(), e);
  }

  // The global output k from the devices' blocks (out_specs[k]).
  template <class T, std::size_t R>
  ShardedArray<T, R> assemble(std::vector<Array<T, R>> blocks, const PartitionSpec& spec, std::size_t k,
                              const std::vector<std::size_t>& local) const {
    const std::string who = "kax::shard_map (output " + std::to_string(k) + ", out_specs " + spec.to_string() + ")";
    for (const auto& b : blocks)
      if (b.extents() != blocks.front().extents()) {
        std::string msg = who + ": the devices' blocks have different shapes:";
        for (std::size_t t = 0; t < blocks.size(); ++t)
          msg += "\n  * device " + std::to_string(mesh_.devices()[local[t]].id) + ": " + shape_string(blocks[t].extents());
        throw shape_error(msg);
      }
    if (spec.size() > R)
      throw shape_error(who + ": the spec has " + std::to_string(spec.size()) + " entries, but the output has rank " +
                        std::to_string(R) + " (block shape " + shape_string(blocks.front().extents()) + ")");
    const NamedSharding s(mesh_, spec);
    shape<R> global = blocks.front().extents();
    for (std::size_t d = 0; d < R; ++d) global[d] *= s.shards(d);
#if KAX_CHECK_REPLICATION
    check_replicas(blocks, s, who, local);
#endif
    return ShardedArray<T, R>(s, global, std::move(blocks));
  }

  // Debug builds: the replicas of every block (devices that differ only along mesh axes the spec
  // does not name) must hold the same values (JAX checks this statically, check_vma).  Local
  // replicas are compared element by element; across processes, hashes of the blocks are
  // all-gathered and compared.
  template <class T, std::size_t R>
  void check_replicas(const std::vector<Array<T, R>>& blocks, const NamedSharding& s, const std::string& who,
                      const std::vector<std::size_t>& local) const {
    Kokkos::fence();
    std::string unnamed;
    std::size_t count = 0;
    for (const std::string& a : mesh_.axis_names()) {
      bool named = false;
      for (const std::string& x : s.spec().axis_names()) named = named || x == a;
      if (!named) unnamed += (count++ ? ", '" : "'") + a + "'";
    }
    auto fail = [&](std::size_t i, std::size_t j, const std::string& detail) {
      throw replication_error(who + ": the output is replicated over mesh " + (count > 1 ? "axes " : "axis ") + unnamed +
                              " (the spec does not name " + (count > 1 ? "them" : "it") + "), but devices " +
                              std::to_string(mesh_.devices()[i].id) + " and " + std::to_string(mesh_.devices()[j].id) +
                              " hold different values (" + detail +
                              "); combine them with a collective (kax::psum, kax::pmean, ...) or name the axis in "
                              "out_specs");
    };
    for (std::size_t j = 1; j < blocks.size(); ++j)
      for (std::size_t i = 0; i < j; ++i) {
        if (!s.same_block(local[i], local[j], R)) continue;
        if (auto at = first_difference(blocks[i], blocks[j]))
          fail(local[i], local[j],
               "flat index " + std::to_string(*at) + ": " + std::to_string(blocks[i].data()[*at]) + " vs " +
                   std::to_string(blocks[j].data()[*at]));
      }
    if (process_count() == 1 || count == 0) return;
    auto net = cross_process_hook();
    std::vector<std::uint64_t> mine(blocks.size()), all(mesh_.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) mine[i] = bytes_hash(blocks[i].data(), blocks[i].size() * sizeof(T));
    collective_header h;
    h.kind = collective_kind::all_gather;
    h.elem = element_kind::i64;
    h.count = mine.size();
    h.who = "kax::shard_map (replication check)";
    h.shape = typed_shape<T>(blocks.front().extents());
    net->allgather(mine.data(), all.data(), mine.size() * sizeof(std::uint64_t), h);
    // Process p's hashes are its local positions in mesh order.
    std::vector<std::uint64_t> by_position(mesh_.size());
    for (int p = 0, n = 0; p < process_count(); ++p)
      for (std::size_t k = 0; k < mesh_.size(); ++k)
        if (mesh_.devices()[k].process_index == p) by_position[k] = all[static_cast<std::size_t>(n++)];
    for (std::size_t j = 1; j < mesh_.size(); ++j)
      for (std::size_t i = 0; i < j; ++i)
        if (s.same_block(i, j, R) && by_position[i] != by_position[j]) fail(i, j, "their blocks' hashes differ");
  }

  // FNV-1a over the bytes of a block.
  static std::uint64_t bytes_hash(const void* data, std::size_t bytes) {
    std::uint64_t h = 14695981039346656037ull;
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }

  F f_;
  Mesh mesh_;
  in_specs_t<NI> in_;
  out_specs_t<NO> out_;
};

}  // namespace detail

// jax.shard_map(f, mesh=mesh, in_specs=(...), out_specs=...): returns a callable that runs f on
// every device of the mesh, on the blocks of its arguments, and returns the global results as
// kax::ShardedArray.
template <class F, std::size_t NI, std::size_t NO>
auto shard_map(F f, const Mesh& mesh, in_specs_t<NI> in, out_specs_t<NO> out) {
  static_assert(host_accessible<default_memory_space> || NI == ~std::size_t{0},  // dependent: fires on use
                "kax::shard_map: sharded arrays live in host memory in this version; on a GPU build use "
                "managed memory (KAX_MANAGED_MEMORY=1, docs/backends.md)");
  return detail::shard_mapped<F, NI, NO>(std::move(f), mesh, std::move(in), std::move(out));
}

}  // namespace kax
