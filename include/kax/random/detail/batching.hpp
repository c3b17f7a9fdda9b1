// kax/random/detail/batching.hpp — vmap's batching rules for random nodes (see
// transform/detail/batching.hpp for the rewrite they belong to; found by argument-dependent lookup).
//
// A random array drawn from a batched key becomes one draw per key: the batch axis goes in front
// of the random array and of the key, so batch element b reads key b and generates the same
// counters as the unbatched draw — vmap(lambda k: normal(k, shape))(keys)[b] == normal(keys[b],
// shape), which is what JAX gives.  A draw whose key is not batched is the same for every batch
// element (it broadcasts, like any leaf).
#pragma once

#include "kax/random/random_expr.hpp"
#include "kax/transform/detail/batching.hpp"

namespace kax::random {

template <class Tag, class Dist, class KeyE, std::size_t R>
auto batch_node(kax::detail::batch_context<Tag>& ctx, const RandomExpr<Dist, KeyE, R>& r) {
  using K = kax::detail::batch_t<kax::detail::batch_context<Tag>, KeyE>;
  if constexpr (!K::is_batched) {
    return kax::detail::make_batched<false>(r);
  } else {
    auto k = batch_node(ctx, r.key).expr;
    return kax::detail::make_batched<true>(
        RandomExpr<Dist, decltype(k), R + 1>(std::move(k), r.dist, kax::detail::with_batch(ctx.size, r.ext)));
  }
}

template <class Tag, class KeyE>
auto batch_node(kax::detail::batch_context<Tag>& ctx, const FoldInExpr<KeyE>& f) {
  using K = kax::detail::batch_t<kax::detail::batch_context<Tag>, KeyE>;
  if constexpr (!K::is_batched) {
    return kax::detail::make_batched<false>(f);
  } else {
    auto k = batch_node(ctx, f.key).expr;
    return kax::detail::make_batched<true>(FoldInExpr<decltype(k)>(std::move(k), f.data));
  }
}

}  // namespace kax::random
