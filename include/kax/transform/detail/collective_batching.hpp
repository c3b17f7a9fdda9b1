// kax/transform/detail/collective_batching.hpp — vmap's rules for collectives (JAX's batching
// rules of psum & co.).
//
// A collective over the vmap's own axis name (kax::vmap(f, kax::axis_name<"i">)) becomes a
// reduction over the batch axis, fused like any other reduction:
//   psum / pmean / pmax / pmin   sum / mean / max / min over axis 0, kept and broadcast back along
//                                the batch (an unbatched operand: psum multiplies by the batch
//                                size, the others return it unchanged)
//   all_gather                   every example sees the whole batched operand
//   pbroadcast(source)           every example sees example `source`
//   axis_index                   0, 1, ..., B-1 along the batch
// A collective over another name (an enclosing pmap's) keeps its name and gets the batched
// operand, so pmap(vmap(f)) exchanges whole batches between devices.
#pragma once

#include "kax/core/factories.hpp"
#include "kax/expr/reductions.hpp"
#include "kax/expr/layout/broadcast_to.hpp"
#include "kax/expr/layout/reshape.hpp"
#include "kax/expr/layout/slice.hpp"
#include "kax/parallel/collectives.hpp"
#include "kax/transform/detail/batching.hpp"

namespace kax::detail {

// The axis name a vmap binds (kax::axis_name<"i">), or void; vmap.hpp specializes it for its tags.
template <class Tag>
struct tag_axis_name {
  using type = void;
};

template <class Tag, fixed_string Name>
constexpr bool tag_binds() {
  using A = typename tag_axis_name<Tag>::type;
  if constexpr (std::is_void_v<A>) {
    return false;
  } else {
    return same_string<A::name, Name>();
  }
}

// A reduction over the batch axis, kept, broadcast back to the batched shape.
template <class Red, class B>
auto over_batch(Red&& reduce, const B& b) {
  auto r = reduce(b);
  return BroadcastToExpr<decltype(r), rank_of<B>>(std::move(r), b.extents());
}

template <class Tag, collective_node C>
auto batch_node(batch_context<Tag>& ctx, const C& c) {
  constexpr collective_op Op = C::op;
  constexpr auto Name = C::name;
  constexpr bool Tiled = C::tiled;
  using E = typename C::operand_type;
  using Ctx = batch_context<Tag>;
  using A = batch_t<Ctx, E>;
  using T = value_type_of<E>;
  constexpr std::size_t R = rank_of<E>;
  const std::size_t n = ctx.size;
  if constexpr (tag_binds<Tag, Name>()) {
    if constexpr (Op == collective_op::ppermute) {
      static_assert(dependent_false<E>,
                    "kax::ppermute over a vmap axis is not supported; use it over a kax::pmap axis");
    } else if constexpr (!A::is_batched) {
      // The same value in every example (JAX: psum multiplies by the axis size, the others keep
      // it).  The result is still marked batched, broadcast along the batch, so that the nodes
      // above it are rewritten too (a collective inside an unbatched subexpression must not
      // escape the rewrite).
      auto every = [n](auto v) {
        using V = decltype(v);
        return make_batched<true>(BroadcastToExpr<V, rank_of<V> + 1>(v, with_batch(n, v.extents())));
      };
      if constexpr (Op == collective_op::psum) {
        return every(c.arg * static_cast<T>(n));
      } else if constexpr (Op == collective_op::all_gather && !Tiled) {
        return every(BroadcastToExpr<E, R + 1>(c.arg, with_batch(n, c.arg.extents())));
      } else if constexpr (Op == collective_op::all_gather) {
        std::array<long, R> flat{};
        for (std::size_t k = 0; k < R; ++k) flat[k] = static_cast<long>(c.arg.extents()[k]);
        flat[0] *= static_cast<long>(n);
        return every(reshape(BroadcastToExpr<E, R + 1>(c.arg, with_batch(n, c.arg.extents())), flat));
      } else {
        return every(c.arg);
      }
    } else {
      auto b = batch_node(ctx, c.arg).expr;
      using B = decltype(b);
      if constexpr (Op == collective_op::psum) {
        return make_batched<true>(over_batch([](const B& x) { return kax::sum(x, 0, kax::keepdims); }, b));
      } else if constexpr (Op == collective_op::pmean) {
        return make_batched<true>(over_batch([](const B& x) { return kax::mean(x, 0, kax::keepdims); }, b));
      } else if constexpr (Op == collective_op::pmax) {
        return make_batched<true>(over_batch([](const B& x) { return kax::max(x, 0, kax::keepdims); }, b));
      } else if constexpr (Op == collective_op::pmin) {
        return make_batched<true>(over_batch([](const B& x) { return kax::min(x, 0, kax::keepdims); }, b));
      } else if constexpr (Op == collective_op::pbroadcast) {
        std::array<range, R + 1> ranges{};
        ranges[0] = range(static_cast<long>(c.source), static_cast<long>(c.source) + 1);
        auto row = slice(b, ranges);
        return make_batched<true>(BroadcastToExpr<decltype(row), R + 1>(std::move(row), b.extents()));
      } else if constexpr (!Tiled) {  // all_gather: (B, B, ...)
        shape<R + 2> s{};
        s[0] = n;
        for (std::size_t k = 0; k <= R; ++k) s[k + 1] = b.extents()[k];
        return make_batched<true>(BroadcastToExpr<B, R + 2>(b, s));
      } else {  // all_gather tiled: (B, B * d0, ...)
        std::array<long, R> flat{};
        for (std::size_t k = 0; k < R; ++k) flat[k] = static_cast<long>(b.extents()[k + 1]);
        flat[0] *= static_cast<long>(n);
        auto joined = reshape(b, flat);
        shape<R + 1> s{};
        s[0] = n;
        for (std::size_t k = 0; k < R; ++k) s[k + 1] = static_cast<std::size_t>(flat[k]);
        return make_batched<true>(BroadcastToExpr<decltype(joined), R + 1>(std::move(joined), s));
      }
    }
  } else if constexpr (!A::is_batched) {
    return make_batched<false>(c);
  } else {
    // Another transform's axis (an enclosing pmap): the collective moves whole batches.
    static_assert(!Tiled, "kax::all_gather(..., kax::tiled) of a vmapped value over a pmap axis is not supported; "
                          "use the untiled all_gather and reshape");
    auto b = batch_node(ctx, c.arg).expr;
    using Out = CollectiveExpr<Op, Name, decltype(b), Tiled>;
    auto node = ctx.template shared_node<Out>(c.buffer, [&] { return Out(b, c.binding, c.perm, c.source); });
    if constexpr (Op == collective_op::all_gather) return make_batched<true>(move_to_front(std::move(node), 1));
    else return make_batched<true>(std::move(node));
  }
}

template <class Tag, axis_index_node A>
auto batch_node(batch_context<Tag>& ctx, const A& a) {
  if constexpr (tag_binds<Tag, A::name>()) {
    const Array<std::int32_t, 1> idx = arange<std::int32_t>(0, static_cast<std::int32_t>(ctx.size), 1);
    return make_batched<true>(idx.as_leaf());
  } else {
    return make_batched<false>(a);
  }
}

}  // namespace kax::detail
