// kax/transform/jit.hpp — kax::jit with shardings: a whole-array function evaluated on globally
// sharded arrays, with the collectives it needs inserted for it (jax.jit with in_shardings and
// out_shardings, formerly pjit).
//
//   kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
//   auto mm = kax::jit([](auto a, auto b) { return kax::matmul(a, b); },
//                      kax::in_shardings(kax::NamedSharding(mesh, kax::P("x", "y")),
//                                        kax::NamedSharding(mesh, kax::P("y", kax::none))),
//                      kax::out_shardings(kax::NamedSharding(mesh, kax::P("x", kax::none))));
//   kax::ShardedArray<float, 2> c = mm(a, b);   // local GEMMs on the blocks, then a psum over "y"
//
// f is written for whole arrays, as for kax::eval.  Every device of the mesh builds f's graph once
// on placeholders with the global shapes, and the partitioner (transform/detail/partition.hpp)
// rewrites it into that device's program on its blocks: elementwise work stays fused and local,
// a reduction or contraction over a split dimension becomes a local one followed by a psum (pmax,
// pmin) over the mesh axes it was split on, and an argument whose layout does not fit is
// resharded by all-gathers.  The results are laid out by out_shardings (default: the layout the
// arguments propagate to).
//
// Arguments: kax::ShardedArray (resharded first when in_shardings gives another sharding) or
// kax::Array (the global array, placed by in_shardings, replicated without it), or scalars.
// Returns kax::ShardedArray (a std::tuple of them for a tuple).  jit runs when called.
#pragma once

#include <algorithm>
#include <array>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kax/transform/detail/partition_rules.hpp"
#include "kax/transform/shard_map.hpp"

namespace kax {

template <std::size_t N>
struct in_shardings_t {
  std::array<NamedSharding, N> shardings;
};
template <std::size_t N>
struct out_shardings_t {
  std::array<NamedSharding, N> shardings;
};

// One NamedSharding per argument / per returned value.
template <class... S>
  requires(std::is_same_v<S, NamedSharding> && ...)
in_shardings_t<sizeof...(S)> in_shardings(const S&... s) {
  return {{s...}};
}
template <class... S>
  requires(std::is_same_v<S, NamedSharding> && ...)
out_shardings_t<sizeof...(S)> out_shardings(const S&... s) {
  return {{s...}};
}

namespace detail {

template <class O>
struct is_in_shardings : std::false_type {};
template <std::size_t N>
struct is_in_shardings<in_shardings_t<N>> : std::true_type {};
template <class O>
struct is_out_shardings : std::false_type {};
template <std::size_t N>
struct is_out_shardings<out_shardings_t<N>> : std::true_type {};

// The argument as a ShardedArray on the jit's mesh (placed or resharded as in_shardings says).
template <class X>
auto placed_arg(const X& x, const std::optional<NamedSharding>& s, const Mesh& mesh, const std::string& who) {
  using A = std::remove_cvref_t<X>;
  if constexpr (is_sharded_array<A>::value) {
    if (!(x.sharding().mesh() == mesh))
      throw shape_error(who + ": the argument is sharded over " + x.sharding().mesh().to_string() + ", not over " +
                        mesh.to_string());
    return s ? device_put(x, *s) : x;
  } else if constexpr (is_kax_array<A>::value) {
    return device_put(x, s ? *s : NamedSharding(mesh, P()));
  } else {
    static_assert(scalar<A>, "kax::jit: arguments are kax::Array, kax::ShardedArray or scalars");
    return x;
  }
}

// The placeholder f sees for argument i.
template <class X>
auto jit_placeholder(const X& x, std::size_t i) {
  if constexpr (is_sharded_array<X>::value) return JitArgExpr<typename X::value_type, X::rank>(i, x.extents());
  else return x;
}

template <class F, std::size_t NI, std::size_t NO>
class jitted {
 public:
  jitted(F f, std::optional<in_shardings_t<NI>> in, std::optional<out_shardings_t<NO>> out)
      : f_(std::move(f)), in_(std::move(in)), out_(std::move(out)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return run(nullptr, args...);
  }

  // The communication the partitioner inserted, one line per collective of the first local
  // device, in order (like jax's lowered HLO, but only the collectives).  Runs f.
  template <class... Args>
  std::string explain(const Args&... args) const {
    std::vector<std::string> steps;
    run(&steps, args...);
    std::string out;
    for (const std::string& s : steps) out += s + "\n";
    return out.empty() ? "no communication\n" : out;
  }

 private:
  template <class... Args>
  auto run(std::vector<std::string>* steps, const Args&... args) const {
    static_assert(NI == 0 || NI == sizeof...(Args), "kax::jit: in_shardings must have one NamedSharding per argument");
    const std::string who = "kax::jit";
    reject_nested(who);
    const Mesh mesh = mesh_of(args...);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto in_sharding = [&](std::size_t i) -> std::optional<NamedSharding> {
        if constexpr (NI > 0) return in_->shardings[i];
        else return std::nullopt;
      };
      const auto placed = std::make_tuple(placed_arg(args, in_sharding(I), mesh, who + " (argument " + std::to_string(I) + ")")...);
      using Y = std::invoke_result_t<const F&, decltype(jit_placeholder(std::get<I>(placed), I))...>;
      using Ys = decltype(as_tuple(std::declval<Y>()));
      constexpr std::size_t m = std::tuple_size_v<Ys>;
      static_assert(NO == 0 || NO == m, "kax::jit: out_shardings must have one NamedSharding per returned value");

      const std::vector<std::size_t> local = mesh.local_positions();
      const std::size_t n = local.size();
      const mesh_groups groups(mesh, local);
      std::vector<layout> held;
      (held_layout(held, std::get<I>(placed), mesh), ...);

      // The output layouts: out_shardings (checked now, so that every device agrees), or the
      // natural layout of f's results on this process's first device.
      std::array<layout, m> want{};
      auto outputs = as_tuple(std::invoke(f_, jit_placeholder(std::get<I>(placed), I)...));
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (out_layout(want[K], as_expr(std::get<K>(outputs)), mesh, local, held, K), ...);
      }(std::make_index_sequence<m>{});

      auto blocks = output_blocks<Ys>(std::make_index_sequence<m>{});
      std::apply([n](auto&... v) { (v.resize(n), ...); }, blocks);
      std::vector<std::exception_ptr> failures(n);
      exec::run_tasks(n, [&](std::size_t t) {
        try {
          partition_context ctx = context(mesh, local[t], groups, held);
          (add_block(ctx, std::get<I>(placed), t), ...);
          auto y = as_tuple(std::invoke(f_, jit_placeholder(std::get<I>(placed), I)...));
          [&]<std::size_t... K>(std::index_sequence<K...>) {
            (write(std::get<K>(blocks)[t], part(ctx, as_expr(std::get<K>(y)), want[K]), ctx), ...);
          }(std::make_index_sequence<m>{});
          if (steps && t == 0) *steps = std::move(ctx.steps);
        } catch (...) {
          failures[t] = std::current_exception();
          groups.abort(who + ": device " + std::to_string(mesh.devices()[local[t]].id) + " failed");
        }
      });
      rethrow_root_cause(failures);
      auto out = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::make_tuple(assemble(std::move(std::get<K>(blocks)), std::get<K>(outputs), result_sharding(mesh, want[K], K))...);
      }(std::make_index_sequence<m>{});
      if constexpr (tuple_like<Y>) return out;
      else return std::get<0>(std::move(out));
    }(std::index_sequence_for<Args...>{});
  }

  // The mesh: in_shardings', out_shardings' or the sharded arguments' (all the same).
  template <class... Args>
  Mesh mesh_of(const Args&... args) const {
    std::optional<Mesh> mesh;
    auto take = [&](const Mesh& m, const std::string& what) {
      if (!mesh) mesh = m;
      else if (!(*mesh == m))
        throw shape_error("kax::jit: " + what + " uses " + m.to_string() + ", but another sharding uses " +
                          mesh->to_string() + "; all shardings of one jit share a mesh");
    };
    if (in_)
      for (const auto& s : in_->shardings) take(s.mesh(), "an in_sharding");
    if (out_)
      for (const auto& s : out_->shardings) take(s.mesh(), "an out_sharding");
    (
        [&](const auto& x) {
          if constexpr (is_sharded_array<std::remove_cvref_t<decltype(x)>>::value) take(x.sharding().mesh(), "an argument");
        }(args),
        ...);
    if (!mesh)
      throw error("kax::jit: no mesh: give in_shardings/out_shardings or pass kax::ShardedArray arguments");
    return *mesh;
  }

  template <class X>
  static void held_layout(std::vector<layout>& held, const X& x, const Mesh& mesh) {
    if constexpr (is_sharded_array<X>::value) held.push_back(layout_of(mesh, x.sharding().spec(), X::rank));
    else held.emplace_back();
  }

  template <class X>
  static void add_block(partition_context& ctx, const X& x, std::size_t t) {
    if constexpr (is_sharded_array<X>::value) {
      ctx.blocks.push_back(std::make_shared<Array<typename X::value_type, X::rank>>(x.blocks()[t]));
      ctx.argument_data.push_back(x.blocks()[t].data());
    } else {
      ctx.blocks.push_back(nullptr);
    }
  }

  static partition_context context(const Mesh& mesh, std::size_t k, const mesh_groups& groups,
                                   const std::vector<layout>& held) {
    partition_context ctx;
    ctx.mesh = &mesh;
    ctx.coords = mesh.coords(k);
    ctx.axes = groups.bindings(mesh, k);
    ctx.held = held;
    return ctx;
  }

  template <class E>
  void out_layout(layout& want, const E& e, const Mesh& mesh, const std::vector<std::size_t>& local,
                  const std::vector<layout>& held, std::size_t k) const {
    constexpr std::size_t R = rank_of<E>;
    if (out_) {
      const NamedSharding& s = out_->shardings[k];
      s.block_shape(e.extents(), "kax::jit (output " + std::to_string(k) + ", out_shardings " + s.spec().to_string() + ")");
      want = layout_of(mesh, s.spec(), R);
    } else {
      partition_context ctx;
      ctx.mesh = &mesh;
      ctx.coords = mesh.coords(local.front());
      ctx.held = held;
      want = natural(ctx, e);
    }
  }

  // A device's output block.  A block that is a whole array computed by the rewrite (a
  // reduction's or contraction's result, or a resharded argument) is taken as it is, not copied;
  // an argument's own block is copied, so that the result never aliases an argument.
  template <class T, std::size_t R, class E>
  static void write(Array<T, R>& out, const E& e, const partition_context& ctx) {
    if constexpr (std::is_same_v<E, ArrayLeaf<T, R, default_memory_space>>) {
      const bool argument =
          std::find(ctx.argument_data.begin(), ctx.argument_data.end(), e.view.data()) != ctx.argument_data.end();
      if (!argument && e.contiguous && e.extents() == Array<T, R>(e.view).extents()) {
        out = Array<T, R>(e.view);
        return;
      }
    }
    out = uninitialized<T, R>(e.extents(), "kax::jit output");
    evaluate_into_view<T, R, default_memory_space>(out.view(), e);
  }

  // Output k's sharding: out_shardings' as given, else the natural layout's.
  NamedSharding result_sharding(const Mesh& mesh, const layout& want, std::size_t k) const {
    if constexpr (NO > 0) return out_->shardings[k];
    else return NamedSharding(mesh, spec_of(mesh, want));
  }

  template <class T, std::size_t R, class Y>
  static ShardedArray<T, R> assemble(std::vector<Array<T, R>> blocks, const Y& y, NamedSharding sharding) {
    Kokkos::fence();
    return ShardedArray<T, R>(std::move(sharding), as_expr(y).extents(), std::move(blocks));
  }

  F f_;
  std::optional<in_shardings_t<NI>> in_;
  std::optional<out_shardings_t<NO>> out_;
};

}  // namespace detail

// jax.jit(f, in_shardings=..., out_shardings=...):
//   kax::jit(f, kax::in_shardings(s0, s1), kax::out_shardings(s2))
//   kax::jit(f)                          arguments' shardings in, propagated layouts out
// Options in any order; returns a callable that runs f on the mesh's devices and returns
// kax::ShardedArray results.
template <class F, class... Opt>
auto jit(F f, Opt... opts) {
  static_assert(host_accessible<default_memory_space> || sizeof(F) == 0,  // dependent: fires on use
                "kax::jit: sharded arrays live in host memory in this version; on a GPU build use managed "
                "memory (KAX_MANAGED_MEMORY=1, docs/backends.md)");
  static_assert(((detail::is_in_shardings<Opt>::value || detail::is_out_shardings<Opt>::value) && ...),
                "kax::jit: options are kax::in_shardings(...) and kax::out_shardings(...)");
  static_assert(sizeof...(Opt) <= 2, "kax::jit: give in_shardings and out_shardings at most once each");
  constexpr std::size_t ni = [] {
    std::size_t n = 0;
    ((n = detail::is_in_shardings<Opt>::value ? std::tuple_size_v<decltype(Opt::shardings)> : n), ...);
    return n;
  }();
  constexpr std::size_t no = [] {
    std::size_t n = 0;
    ((n = detail::is_out_shardings<Opt>::value ? std::tuple_size_v<decltype(Opt::shardings)> : n), ...);
    return n;
  }();
  std::optional<in_shardings_t<ni>> in;
  std::optional<out_shardings_t<no>> out;
  (
      [&](const auto& o) {
        using O = std::remove_cvref_t<decltype(o)>;
        if constexpr (detail::is_in_shardings<O>::value) in = o;
        else out = o;
      }(opts),
      ...);
  return detail::jitted<F, ni, no>(std::move(f), std::move(in), std::move(out));
}

}  // namespace kax
