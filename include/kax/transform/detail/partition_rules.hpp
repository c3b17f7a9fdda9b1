// kax/transform/detail/partition_rules.hpp — the rules of kax::jit's partitioner, one per node
// type (see transform/detail/partition.hpp for the model):
//   natural(ctx, e)      the layout e has when nothing constrains it (propagated from the
//                        arguments' shardings; what reductions and contractions split on)
//   part(ctx, e, want)   this device's block of e under `want`
// Both recurse through argument-dependent lookup on partition_context, so the order of the
// overloads does not matter.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "kax/transform/detail/partition.hpp"

namespace kax::detail {

// ---- natural layouts --------------------------------------------------------------------------

template <expression E>
layout natural(const partition_context&, const E&) {
  return replicated(rank_of<E>);  // leaves, reshape, slice, concatenate: whole
}

template <class T, std::size_t R>
layout natural(const partition_context& ctx, const JitArgExpr<T, R>& a) {
  return ctx.held[a.index];
}

template <class Op, class E>
layout natural(const partition_context& ctx, const UnaryExpr<Op, E>& u) {
  return natural(ctx, u.arg);
}

template <class Op, class E>
layout natural(const partition_context& ctx, const nn::detail::ParamUnaryExpr<Op, E>& u) {
  return natural(ctx, u.arg);
}

// Operand x of an elementwise node of extents `out_ext` (NumPy alignment from the right): its
// split dimensions that are not broadcast and not yet decided, unless they reuse a mesh axis.
template <std::size_t R, class X>
void merge_natural(const partition_context& ctx, layout& out, std::vector<bool>& used, const X& x,
                   const shape<R>& out_ext) {
  constexpr std::size_t r = rank_of<X>;
  const layout l = natural(ctx, x);
  const auto ext = x.extents();
  for (std::size_t j = 0; j < r; ++j) {
    const std::size_t d = j + R - r;
    if (ext[j] != out_ext[d] || !out[d].empty() || !can_split(ctx, out_ext[d], l[j], used)) continue;
    out[d] = l[j];
    for (std::size_t a : l[j]) used[a] = true;
  }
}

template <class Op, class L, class R>
layout natural(const partition_context& ctx, const BinaryExpr<Op, L, R>& b) {
  layout out = replicated(BinaryExpr<Op, L, R>::rank);
  std::vector<bool> used(ctx.mesh->rank(), false);
  merge_natural(ctx, out, used, b.lhs, b.ext);
  merge_natural(ctx, out, used, b.rhs, b.ext);
  return out;
}

template <class C, class A, class B>
layout natural(const partition_context& ctx, const WhereExpr<C, A, B>& w) {
  layout out = replicated(WhereExpr<C, A, B>::rank);
  std::vector<bool> used(ctx.mesh->rank(), false);
  merge_natural(ctx, out, used, w.cond, w.ext);
  merge_natural(ctx, out, used, w.on_true, w.ext);
  merge_natural(ctx, out, used, w.on_false, w.ext);
  return out;
}

template <class E, std::size_t R2>
layout natural(const partition_context& ctx, const BroadcastToExpr<E, R2>& b) {
  layout out = replicated(R2);
  std::vector<bool> used(ctx.mesh->rank(), false);
  merge_natural(ctx, out, used, b.arg, b.ext);
  return out;
}

template <class E>
layout natural(const partition_context& ctx, const TransposeExpr<E>& t) {
  const layout l = natural(ctx, t.arg);
  layout out(rank_of<E>);
  for (std::size_t k = 0; k < rank_of<E>; ++k) out[k] = l[t.perm[k]];
  return out;
}

template <class E, std::size_t R2>
layout natural(const partition_context& ctx, const UnitAxesExpr<E, R2>& u) {
  const layout l = natural(ctx, u.arg);
  layout out(R2);
  for (std::size_t k = 0; k < rank_of<E>; ++k)
    if (u.live[k]) out[u.src[k]] = l[k];
  return out;
}

template <template <class> class Red, class E, std::size_t NR, bool Keep>
layout natural(const partition_context& ctx, const ReduceExpr<Red, E, NR, Keep>& r) {
  const layout l = natural(ctx, r.arg);
  layout out(ReduceExpr<Red, E, NR, Keep>::rank);
  for (std::size_t k = 0, j = 0; k < rank_of<E>; ++k) {
    const bool reduced = std::find(r.axes.begin(), r.axes.end(), k) != r.axes.end();
    if (reduced && !Keep) continue;
    out[j++] = reduced ? std::vector<std::size_t>{} : l[k];
  }
  return out;
}

// Label layouts of a contraction: output labels from `want` (or unset), summed ones (and unset
// output ones) from the operands' natural layouts.
template <class A, class B, std::size_t NL, std::size_t NO>
layout label_layout(const partition_context& ctx, const ContractExpr<A, B, NL, NO>& c, const layout* want) {
  layout lab(NL);
  std::vector<bool> used(ctx.mesh->rank(), false);
  if (want) {
    for (std::size_t L = 0; L < NO; ++L) lab[L] = (*want)[L];
    used = used_axes(ctx, *want);
  }
  auto take = [&](const auto& le) {
    const layout l = natural(ctx, le.arg);
    for (std::size_t k = 0; k < rank_of<decltype(le.arg)>; ++k) {
      const std::size_t L = le.label[k];
      if ((want && L < NO) || !le.live[k] || !lab[L].empty() || !can_split(ctx, le.ext[L], l[k], used)) continue;
      lab[L] = l[k];
      for (std::size_t a : l[k]) used[a] = true;
    }
  };
  take(c.lhs());
  take(c.rhs());
  return lab;
}

template <class A, class B, std::size_t NL, std::size_t NO>
layout natural(const partition_context& ctx, const ContractExpr<A, B, NL, NO>& c) {
  const layout lab = label_layout(ctx, c, nullptr);
  return layout(lab.begin(), lab.begin() + NO);
}

// ---- this device's blocks ---------------------------------------------------------------------

// Leaves other than arguments (arrays the function captured, scalars, random numbers): the same
// on every device, so a block is a lazy slice.
template <expression E>
  requires(!has_children<E> && !materialization<E> && !is_jit_arg<E>::value && !is_mapped<E>::value)
auto part(partition_context& ctx, const E& e, const layout& want) {
  if constexpr (rank_of<E> == 0) {
    (void)ctx, (void)want;
    return e;
  } else {
    return block_slice(ctx, e, want);
  }
}

// Anything else (collectives, vmap placeholders and results) is not partitioned.
template <expression E>
  requires(has_children<E> || materialization<E> || is_mapped<E>::value)
auto part(partition_context&, const E& e, const layout&) {
  static_assert(dependent_false<E>,
                "kax::jit: the function uses an operation the sharding partitioner does not handle (collectives, "
                "vmap inside jit, ...); use kax::shard_map for explicit per-device programs");
  return e;
}

template <class T, std::size_t R>
auto part(partition_context& ctx, const JitArgExpr<T, R>& a, const layout& want) {
  const std::pair<const void*, layout> key{ctx.blocks[a.index].get(), want};
  if (auto it = ctx.memo.find(key); it != ctx.memo.end()) return static_cast<const Array<T, R>*>(it->second.get())->as_leaf();
  const auto& held = *static_cast<const Array<T, R>*>(ctx.blocks[a.index].get());
  auto out = std::make_shared<Array<T, R>>(reshard_block(ctx, held, ctx.held[a.index], want));
  ctx.memo.emplace(key, out);
  return out->as_leaf();
}

template <class Op, class E>
auto part(partition_context& ctx, const UnaryExpr<Op, E>& u, const layout& want) {
  auto a = part(ctx, u.arg, want);
  return UnaryExpr<Op, decltype(a)>(std::move(a));
}

template <class Op, class E>
auto part(partition_context& ctx, const nn::detail::ParamUnaryExpr<Op, E>& u, const layout& want) {
  auto a = part(ctx, u.arg, want);
  return nn::detail::ParamUnaryExpr<Op, decltype(a)>(std::move(a), u.op);
}

// The layout of operand x of an elementwise node: the node's, broadcast dimensions whole.
template <std::size_t R, class X>
layout operand_layout(const X& x, const layout& want, const shape<R>& out_ext) {
  constexpr std::size_t r = rank_of<X>;
  const auto ext = x.extents();
  layout l(r);
  for (std::size_t j = 0; j < r; ++j)
    if (ext[j] == out_ext[j + R - r]) l[j] = want[j + R - r];
  return l;
}

template <class Op, class L, class R>
auto part(partition_context& ctx, const BinaryExpr<Op, L, R>& b, const layout& want) {
  auto l = part(ctx, b.lhs, operand_layout(b.lhs, want, b.ext));
  auto r = part(ctx, b.rhs, operand_layout(b.rhs, want, b.ext));
  return BinaryExpr<Op, decltype(l), decltype(r)>(std::move(l), std::move(r));
}

template <class C, class A, class B>
auto part(partition_context& ctx, const WhereExpr<C, A, B>& w, const layout& want) {
  auto c = part(ctx, w.cond, operand_layout(w.cond, want, w.ext));
  auto a = part(ctx, w.on_true, operand_layout(w.on_true, want, w.ext));
  auto f = part(ctx, w.on_false, operand_layout(w.on_false, want, w.ext));
  return WhereExpr<decltype(c), decltype(a), decltype(f)>(std::move(c), std::move(a), std::move(f));
}

template <class E, std::size_t R2>
auto part(partition_context& ctx, const BroadcastToExpr<E, R2>& b, const layout& want) {
  auto a = part(ctx, b.arg, operand_layout(b.arg, want, b.ext));
  return BroadcastToExpr<decltype(a), R2>(std::move(a), ctx.block_shape(b.ext, want));
}

template <class E>
auto part(partition_context& ctx, const TransposeExpr<E>& t, const layout& want) {
  constexpr std::size_t R = rank_of<E>;
  layout inner(R);
  std::array<long, R> perm{};
  for (std::size_t k = 0; k < R; ++k) {
    inner[t.perm[k]] = want[k];
    perm[k] = static_cast<long>(t.perm[k]);
  }
  auto a = part(ctx, t.arg, inner);
  return TransposeExpr<decltype(a)>(std::move(a), perm);
}

template <class E, std::size_t R2>
auto part(partition_context& ctx, const UnitAxesExpr<E, R2>& u, const layout& want) {
  layout inner(rank_of<E>);
  for (std::size_t k = 0; k < rank_of<E>; ++k)
    if (u.live[k]) inner[k] = want[u.src[k]];
  auto a = part(ctx, u.arg, inner);
  return UnitAxesExpr<decltype(a), R2>(std::move(a), ctx.block_shape(u.ext, want), u.src, u.live);
}

// Reshape, slice and concatenate move elements between blocks: their operands are made whole
// (all-gathers), the node is applied, and the block is sliced out.
template <class E, std::size_t R2>
auto part(partition_context& ctx, const ReshapeExpr<E, R2>& r, const layout& want) {
  auto a = part(ctx, r.arg, replicated(rank_of<E>));
  std::array<long, R2> s{};
  for (std::size_t k = 0; k < R2; ++k) s[k] = static_cast<long>(r.ext[k]);
  return block_slice(ctx, ReshapeExpr<decltype(a), R2>(std::move(a), s), want);
}

template <class E>
auto part(partition_context& ctx, const SliceExpr<E>& s, const layout& want) {
  auto a = part(ctx, s.arg, replicated(rank_of<E>));
  return block_slice(ctx, SliceExpr<decltype(a)>(std::move(a), s.ext, s.first, s.step), want);
}

template <class... E>
auto part(partition_context& ctx, const ConcatenateExpr<E...>& c, const layout& want) {
  auto args = std::apply([&](const auto&... x) { return std::make_tuple(part(ctx, x, replicated(rank_of<decltype(x)>))...); },
                         c.args);
  using Out = ConcatenateExpr<decltype(part(ctx, std::declval<const E&>(), want))...>;
  return block_slice(ctx, Out(std::move(args), c.axis), want);
}

// How a reduction's partial results combine across devices (none: reduce whole dimensions).  Max
// reducers with an initial value (softmax's) derive from max_reducer and combine with pmax.
template <template <class> class Red, class T>
constexpr int reducer_collective() {
  if constexpr (std::is_same_v<Red<T>, sum_reducer<T>>) return 0;
  else if constexpr (std::is_same_v<Red<T>, mean_reducer<T>>) return 1;
  else if constexpr (std::is_base_of_v<max_reducer<T>, Red<T>> || std::is_same_v<Red<T>, any_reducer<T>>) return 2;
  else if constexpr (std::is_same_v<Red<T>, min_reducer<T>> || std::is_same_v<Red<T>, all_reducer<T>>) return 3;
  else return -1;  // prod, argmax, argmin
}

template <template <class> class Red, class E, std::size_t NR, bool Keep>
auto part(partition_context& ctx, const ReduceExpr<Red, E, NR, Keep>& r, const layout& want) {
  using Node = ReduceExpr<Red, E, NR, Keep>;
  using V = typename Node::value_type;
  constexpr std::size_t rank = Node::rank;
  const std::pair<const void*, layout> key{r.buffer.stamp.data(), want};
  if (auto it = ctx.memo.find(key); it != ctx.memo.end()) return static_cast<const Array<V, rank>*>(it->second.get())->as_leaf();

  constexpr int how = reducer_collective<Red, value_type_of<E>>();
  const layout nat = natural(ctx, r.arg);
  std::vector<bool> used = used_axes(ctx, want);
  const auto in = r.arg.extents();
  layout inner(rank_of<E>);
  for (std::size_t k = 0, j = 0; k < rank_of<E>; ++k) {
    const bool reduced = std::find(r.axes.begin(), r.axes.end(), k) != r.axes.end();
    if (!reduced) {
      inner[k] = want[Keep ? k : j++];
    } else {
      if (Keep) ++j;
      if (how >= 0 && can_split(ctx, in[k], nat[k], used)) {
        inner[k] = nat[k];
        for (std::size_t a : nat[k]) used[a] = true;
      }
    }
  }
  auto a = part(ctx, r.arg, inner);
  ReduceExpr<Red, decltype(a), NR, Keep> local(std::move(a), r.axes, "kax::jit");
  auto out = std::make_shared<Array<V, rank>>(uninitialized<V, rank>(local.extents(), "kax::jit stage"));
  evaluate_into_view<V, rank, default_memory_space>(out->view(), local);
  if constexpr (how >= 0) {
    constexpr collective_kind kind = how <= 1 ? collective_kind::sum : how == 2 ? collective_kind::max : collective_kind::min;
    for (std::size_t k : r.axes)
      for (std::size_t ax : inner[k]) combine_over(ctx, ax, *out, kind, how == 1);
  }
  ctx.memo.emplace(key, out);
  return out->as_leaf();
}

template <class A, class B, std::size_t NL, std::size_t NO>
auto part(partition_context& ctx, const ContractExpr<A, B, NL, NO>& c, const layout& want) {
  using V = typename ContractExpr<A, B, NL, NO>::value_type;
  const std::pair<const void*, layout> key{c.buffer.stamp.data(), want};
  if (auto it = ctx.memo.find(key); it != ctx.memo.end()) return static_cast<const Array<V, NO>*>(it->second.get())->as_leaf();

  const layout lab = label_layout(ctx, c, &want);
  auto operand = [&](const auto& le) {
    constexpr std::size_t r = rank_of<decltype(le.arg)>;
    layout l(r);
    for (std::size_t k = 0; k < r; ++k)
      if (le.live[k]) l[k] = lab[le.label[k]];
    auto x = part(ctx, le.arg, l);
    return LabelExpr<NL, decltype(x)>(std::move(x), ctx.block_shape(le.ext, lab), le.label);
  };
  auto la = operand(c.lhs());
  auto lb = operand(c.rhs());
  using LA = std::remove_cvref_t<decltype(la.arg)>;
  using LB = std::remove_cvref_t<decltype(lb.arg)>;
  ContractExpr<LA, LB, NL, NO> local(std::move(la), std::move(lb), c.who);
  auto out = std::make_shared<Array<V, NO>>(uninitialized<V, NO>(local.extents(), "kax::jit stage"));
  evaluate_into_view<V, NO, default_memory_space>(out->view(), local);
  for (std::size_t L = NO; L < NL; ++L)
    for (std::size_t ax : lab[L]) combine_over(ctx, ax, *out, collective_kind::sum, false);
  ctx.memo.emplace(key, out);
  return out->as_leaf();
}

}  // namespace kax::detail
