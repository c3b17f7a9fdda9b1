// kax/transform/detail/batching.hpp — vmap's rewrite of an expression graph (JAX's batching
// rules).
//
// The vmapped function builds its graph once, on placeholders with the shapes of one example
// (MappedExpr).  batch_node(ctx, node) rebuilds that graph with the batch axis in front of every
// node that depends on a mapped argument, bottom-up, one rule per node type:
//   placeholder of this vmap   the whole argument with its mapped axis moved to the front
//   leaf / other vmap's        unchanged: not batched (it broadcasts against batched operands)
//   elementwise nodes          batched operands get unit axes after the batch axis so that the
//                              per-example ranks line up (NumPy aligns ranks from the right)
//   layout nodes               the same operation on the trailing axes
//   reductions, contractions   axes shifted by one; a contraction gains the batch as an output
//                              label, so batched matrix products become batched GEMMs
// Whether a rewritten node is batched depends only on types (`batched<E, B>::is_batched`), so the
// result's type is known at compile time.  A node that depends on no mapped argument is returned
// as it is, so an unbatched reduction is still computed once for the whole batch.  Copies of one
// reduction (softmax's max) share a stage buffer; the rewrite keeps them shared (`shared_node`).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "kax/exec/batch_rows.hpp"
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
#include "kax/expr/unary.hpp"
#include "kax/expr/where.hpp"
#include "kax/nn/detail/param_unary.hpp"
#include "kax/plan/stages.hpp"
#include "kax/transform/detail/mapped.hpp"

namespace kax::detail {

// One rewrite: the batch size, and the materialization nodes already rewritten (by stage buffer).
template <class Tag>
struct batch_context {
  std::size_t size = 0;
  std::map<const void*, std::shared_ptr<void>> rewritten;
  // The stage buffers of the batched materializations (BatchRowsExpr's row-fused plan).
  std::shared_ptr<std::set<const void*>> batched_stages = std::make_shared<std::set<const void*>>();

  // The rewritten node for the materialization whose buffer is `buffer`: built by `make` the first
  // time, copied afterwards (copies share the new stage buffer).
  template <class Node, class Buffer, class Make>
  Node shared_node(const Buffer& buffer, Make&& make) {
    const void* key = buffer.stamp.data();  // allocated even for empty results
    if (auto it = rewritten.find(key); it != rewritten.end()) return *static_cast<const Node*>(it->second.get());
    auto node = std::make_shared<Node>(make());
    rewritten.emplace(key, node);
    batched_stages->insert(node->buffer.stamp.data());
    return *node;
  }
};

// A rewritten node, and whether it carries the batch axis (then it is axis 0).
template <class E, bool Batched>
struct batched {
  E expr;
  static constexpr bool is_batched = Batched;
};

template <bool Batched, class E>
batched<E, Batched> make_batched(E e) {
  return {std::move(e)};
}

template <class Ctx, class E>
using batch_t = decltype(batch_node(std::declval<Ctx&>(), std::declval<const E&>()));

// A batched node of per-example rank r seen as per-example rank R >= r: unit axes after the batch
// axis (a per-example (3,) against a per-example (4, 3) is (B, 1, 3) against (B, 4, 3)).
template <std::size_t R, class E>
auto lift(E e) {
  constexpr std::size_t have = rank_of<E> - 1;
  static_assert(have <= R, "kax::vmap: internal error, lifting to a lower rank");
  if constexpr (have == R) {
    return e;
  } else {
    const auto in = e.extents();
    shape<R + 1> out{};
    multi_index<have + 1> src{}, live{};
    for (std::size_t k = 0; k <= R; ++k) out[k] = 1;
    out[0] = in[0];
    live[0] = 1;
    for (std::size_t k = 1; k <= have; ++k) {
      out[k + R - have] = in[k];
      src[k] = k + R - have;
      live[k] = 1;
    }
    return UnitAxesExpr<E, R + 1>(std::move(e), out, src, live);
  }
}

// An operand of an elementwise node of per-example rank R, rewritten.
template <std::size_t R, class B>
auto elementwise_operand(B b) {
  if constexpr (B::is_batched) return lift<R>(std::move(b.expr));
  else return std::move(b.expr);
}

// jnp.transpose(e, perm), folded into the strides when `e` reads an array.
template <class E>
auto permute(E e, const std::array<long, rank_of<E>>& perm) {
  constexpr std::size_t R = rank_of<E>;
  if constexpr (is_array_leaf<E>::value) {
    shape<R> ext{}, st{};
    for (std::size_t k = 0; k < R; ++k) {
      ext[k] = e.ext[static_cast<std::size_t>(perm[k])];
      st[k] = e.strides[static_cast<std::size_t>(perm[k])];
    }
    E r(e.view, ext, st);
    r.trace = e.trace;
    return r;
  } else {
    return TransposeExpr<E>(std::move(e), perm);
  }
}

// jnp.moveaxis(e, axis, 0) and jnp.moveaxis(e, 0, axis).
template <class E>
auto move_to_front(E e, std::size_t axis) {
  std::array<long, rank_of<E>> perm{};
  perm[0] = static_cast<long>(axis);
  for (std::size_t k = 1; k < rank_of<E>; ++k) perm[k] = static_cast<long>(k <= axis ? k - 1 : k);
  return permute(std::move(e), perm);
}
template <class E>
auto move_from_front(E e, std::size_t axis) {
  std::array<long, rank_of<E>> perm{};
  for (std::size_t k = 0; k < rank_of<E>; ++k)
    perm[k] = static_cast<long>(k == axis ? 0 : (k < axis ? k + 1 : k));
  return permute(std::move(e), perm);
}

// The batch size in front of a per-example shape.
template <std::size_t R>
shape<R + 1> with_batch(std::size_t b, const shape<R>& s) {
  shape<R + 1> out{};
  out[0] = b;
  for (std::size_t k = 0; k < R; ++k) out[k + 1] = s[k];
  return out;
}

// ---- rules ------------------------------------------------------------------------------------

// Collectives and axis_index (parallel/collectives.hpp; their rules are in
// collective_batching.hpp), recognized by members rather than by deducing their axis-name
// argument: nvcc's front end cannot deduce a class-type (fixed_string) template argument.
template <class E>
concept collective_node = requires { E::is_collective_node; };
template <class E>
concept axis_index_node = requires { E::is_axis_index_node; };

// Leaves (arrays, scalars, an outer vmap's placeholders): constant along this batch.
template <class Tag, expression E>
  requires(!has_children<E> && !materialization<E> && !axis_index_node<E>)
auto batch_node(batch_context<Tag>&, const E& e) {
  return make_batched<false>(e);
}

// This vmap's placeholder: the whole argument, mapped axis first.
template <class Tag, class E>
auto batch_node(batch_context<Tag>&, const MappedExpr<E, Tag>& m) {
  return make_batched<true>(move_to_front(m.arg, m.axis));
}

// An inner vmap's result inside an outer vmapped function: its expression, rewritten (the outer
// vmap marks its own result).
template <class Tag, class E>
auto batch_node(batch_context<Tag>& ctx, const BatchRowsExpr<E>& b) {
  return batch_node(ctx, b.expr);
}

template <class Tag, class Op, class E>
auto batch_node(batch_context<Tag>& ctx, const UnaryExpr<Op, E>& u) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(u);
  } else {
    auto a = batch_node(ctx, u.arg).expr;
    return make_batched<true>(UnaryExpr<Op, decltype(a)>(std::move(a)));
  }
}

template <class Tag, class Op, class E>
auto batch_node(batch_context<Tag>& ctx, const nn::detail::ParamUnaryExpr<Op, E>& u) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(u);
  } else {
    auto a = batch_node(ctx, u.arg).expr;
    return make_batched<true>(nn::detail::ParamUnaryExpr<Op, decltype(a)>(std::move(a), u.op));
  }
}

template <class Tag, class Op, class L, class R>
auto batch_node(batch_context<Tag>& ctx, const BinaryExpr<Op, L, R>& b) {
  using Ctx = batch_context<Tag>;
  if constexpr (!batch_t<Ctx, L>::is_batched && !batch_t<Ctx, R>::is_batched) {
    return make_batched<false>(b);
  } else {
    constexpr std::size_t rank = BinaryExpr<Op, L, R>::rank;
    auto l = elementwise_operand<rank>(batch_node(ctx, b.lhs));
    auto r = elementwise_operand<rank>(batch_node(ctx, b.rhs));
    return make_batched<true>(BinaryExpr<Op, decltype(l), decltype(r)>(std::move(l), std::move(r)));
  }
}

template <class Tag, class C, class A, class B>
auto batch_node(batch_context<Tag>& ctx, const WhereExpr<C, A, B>& w) {
  using Ctx = batch_context<Tag>;
  if constexpr (!batch_t<Ctx, C>::is_batched && !batch_t<Ctx, A>::is_batched &&
                !batch_t<Ctx, B>::is_batched) {
    return make_batched<false>(w);
  } else {
    constexpr std::size_t rank = WhereExpr<C, A, B>::rank;
    auto c = elementwise_operand<rank>(batch_node(ctx, w.cond));
    auto a = elementwise_operand<rank>(batch_node(ctx, w.on_true));
    auto f = elementwise_operand<rank>(batch_node(ctx, w.on_false));
    return make_batched<true>(
        WhereExpr<decltype(c), decltype(a), decltype(f)>(std::move(c), std::move(a), std::move(f)));
  }
}

template <class Tag, class E, std::size_t R2>
auto batch_node(batch_context<Tag>& ctx, const BroadcastToExpr<E, R2>& b) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(b);
  } else {
    auto a = lift<R2>(batch_node(ctx, b.arg).expr);
    return make_batched<true>(BroadcastToExpr<decltype(a), R2 + 1>(std::move(a), with_batch(ctx.size, b.ext)));
  }
}

template <class Tag, class E, std::size_t R2>
auto batch_node(batch_context<Tag>& ctx, const ReshapeExpr<E, R2>& r) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(r);
  } else {
    auto a = batch_node(ctx, r.arg).expr;
    std::array<long, R2 + 1> s{};
    s[0] = static_cast<long>(ctx.size);
    for (std::size_t k = 0; k < R2; ++k) s[k + 1] = static_cast<long>(r.ext[k]);
    return make_batched<true>(ReshapeExpr<decltype(a), R2 + 1>(std::move(a), s));
  }
}

template <class Tag, class E>
auto batch_node(batch_context<Tag>& ctx, const TransposeExpr<E>& t) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(t);
  } else {
    constexpr std::size_t R = rank_of<E>;
    std::array<long, R + 1> perm{};
    for (std::size_t k = 0; k < R; ++k) perm[k + 1] = static_cast<long>(t.perm[k] + 1);
    return make_batched<true>(permute(batch_node(ctx, t.arg).expr, perm));
  }
}

template <class Tag, class E>
auto batch_node(batch_context<Tag>& ctx, const SliceExpr<E>& s) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(s);
  } else {
    constexpr std::size_t R = rank_of<E>;
    auto a = batch_node(ctx, s.arg).expr;
    Kokkos::Array<std::int64_t, R + 1> first{}, step{};
    step[0] = 1;
    for (std::size_t k = 0; k < R; ++k) {
      first[k + 1] = s.first[k];
      step[k + 1] = s.step[k];
    }
    return make_batched<true>(SliceExpr<decltype(a)>(std::move(a), with_batch(ctx.size, s.ext), first, step));
  }
}

template <class Tag, class E, std::size_t R2>
auto batch_node(batch_context<Tag>& ctx, const UnitAxesExpr<E, R2>& u) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    return make_batched<false>(u);
  } else {
    constexpr std::size_t R = rank_of<E>;
    auto a = batch_node(ctx, u.arg).expr;
    multi_index<R + 1> src{}, live{};
    live[0] = 1;
    for (std::size_t k = 0; k < R; ++k) {
      src[k + 1] = u.src[k] + 1;
      live[k + 1] = u.live[k];
    }
    return make_batched<true>(UnitAxesExpr<decltype(a), R2 + 1>(std::move(a), with_batch(ctx.size, u.ext), src, live));
  }
}

// Operands of equal per-example rank: batched ones as they are, unbatched ones broadcast along
// the batch (jnp.concatenate needs every operand to have the batch axis).
template <class Tag, class... E>
auto batch_node(batch_context<Tag>& ctx, const ConcatenateExpr<E...>& c) {
  using Ctx = batch_context<Tag>;
  if constexpr (!(batch_t<Ctx, E>::is_batched || ...)) {
    return make_batched<false>(c);
  } else {
    auto operand = [&ctx](const auto& x) {
      using X = std::remove_cvref_t<decltype(x)>;
      if constexpr (batch_t<Ctx, X>::is_batched) return batch_node(ctx, x).expr;
      else return BroadcastToExpr<X, rank_of<X> + 1>(x, with_batch(ctx.size, x.extents()));
    };
    auto args = std::apply([&](const auto&... x) { return std::make_tuple(operand(x)...); }, c.args);
    using Out = ConcatenateExpr<decltype(operand(std::declval<const E&>()))...>;
    return make_batched<true>(Out(std::move(args), c.axis + 1));
  }
}

// An einsum operand in label space: the batch becomes label 0 (an output label), every other
// label moves up by one.  An operand that is not batched gets the shifted labels only: it is
// constant along label 0, as a matmul operand without batch axes is.
template <class Tag, std::size_t NL, class E>
auto relabel(batch_context<Tag>& ctx, const LabelExpr<NL, E>& le) {
  constexpr std::size_t R = rank_of<E>;
  const shape<NL + 1> ext = with_batch(ctx.size, le.ext);
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) {
    multi_index<R> lab{};
    for (std::size_t k = 0; k < R; ++k) lab[k] = le.label[k] + 1;
    return LabelExpr<NL + 1, E>(le.arg, ext, lab);
  } else {
    auto a = batch_node(ctx, le.arg).expr;
    multi_index<R + 1> lab{};
    for (std::size_t k = 0; k < R; ++k) lab[k + 1] = le.label[k] + 1;
    return LabelExpr<NL + 1, decltype(a)>(std::move(a), ext, lab);
  }
}

template <class Tag, std::size_t NL, class E>
auto batch_node(batch_context<Tag>& ctx, const LabelExpr<NL, E>& le) {
  if constexpr (!batch_t<batch_context<Tag>, E>::is_batched) return make_batched<false>(le);
  else return make_batched<true>(relabel(ctx, le));
}

template <class Tag, template <class> class Red, class E, std::size_t NR, bool Keep>
auto batch_node(batch_context<Tag>& ctx, const ReduceExpr<Red, E, NR, Keep>& r) {
  using A = batch_t<batch_context<Tag>, E>;
  if constexpr (!A::is_batched) {
    return make_batched<false>(r);
  } else {
    using Out = ReduceExpr<Red, decltype(std::declval<A>().expr), NR, Keep>;
    return make_batched<true>(ctx.template shared_node<Out>(r.buffer, [&] {
      std::array<std::size_t, NR> axes{};
      for (std::size_t k = 0; k < NR; ++k) axes[k] = r.axes[k] + 1;
      return Out(batch_node(ctx, r.arg).expr, axes, "kax::vmap");
    }));
  }
}

template <class Tag, class A, class B, std::size_t NL, std::size_t NO>
auto batch_node(batch_context<Tag>& ctx, const ContractExpr<A, B, NL, NO>& c) {
  using Ctx = batch_context<Tag>;
  if constexpr (!batch_t<Ctx, A>::is_batched && !batch_t<Ctx, B>::is_batched) {
    return make_batched<false>(c);
  } else {
    using LA = decltype(relabel(ctx, c.lhs()));
    using LB = decltype(relabel(ctx, c.rhs()));
    using Out = ContractExpr<std::remove_cvref_t<decltype(std::declval<LA>().arg)>,
                             std::remove_cvref_t<decltype(std::declval<LB>().arg)>, NL + 1, NO + 1>;
    return make_batched<true>(ctx.template shared_node<Out>(
        c.buffer, [&] { return Out(relabel(ctx, c.lhs()), relabel(ctx, c.rhs()), c.who); }));
  }
}

}  // namespace kax::detail
