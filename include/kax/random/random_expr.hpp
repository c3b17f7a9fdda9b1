// kax/random/random_expr.hpp — random arrays as lazy expression leaves.
//
// RandomExpr<Dist, KeyE, R> is element i of a random array: the threefry2x32 block of counter
// (hi32(n), lo32(n)), n the row-major index of i in the sample shape, encrypted under the key,
// turned into a value by the distribution Dist (random/distributions.hpp).  Nothing is stored:
// the consuming kernel computes each element where it needs it, so `normal(k, {n, d}) * 2 + y`
// is one kernel with no random array in memory.  The counter layout is JAX's with
// `jax_threefry_partitionable=True` (jax/_src/prng.py `_threefry_random_bits_partitionable`,
// `iota_2x32_shape`), so the same key and shape give the same bits as jax.random.
//
// The key is itself an expression of element type Key: KeyConstant (one key, the usual case), a
// vmap placeholder or FoldInExpr (keys derived inside a vmapped function).  Under vmap the key
// gains leading axes (one key per batch element) and so does the random array: its leading
// `key_rank` axes pick the key, the remaining axes are the sample shape of each key, exactly as
// vmap of jax.random.normal over split keys.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kax/core/extents.hpp"
#include "kax/expr/concepts.hpp"
#include "kax/expr/detail/row.hpp"
#include "kax/expr/scalar.hpp"
#include "kax/random/key.hpp"

namespace kax::random {

// An expression whose elements are keys.
template <class E>
concept key_expression = expression<E> && std::same_as<value_type_of<E>, Key>;

// One key, as a rank-0 expression (not weakly typed: keys do not promote).
using KeyConstant = ScalarExpr<Key, false>;

// fold_in(key, data) of every key of a key expression (and split<N>'s keys, data = 0..N-1).
template <key_expression KeyE>
struct FoldInExpr : expression_base {
  using value_type = Key;
  static constexpr std::size_t rank = rank_of<KeyE>;
  KeyE key;
  std::uint32_t data;

  FoldInExpr(KeyE k, std::uint32_t d) : key(std::move(k)), data(d) {}
  shape<rank> extents() const { return key.extents(); }
  bool is_flat() const { return key.is_flat(); }
  KOKKOS_FORCEINLINE_FUNCTION Key evaluate(const multi_index<rank>& i) const {
    return detail::derive(key.evaluate(i), data);
  }
  KOKKOS_FORCEINLINE_FUNCTION Key evaluate_flat(std::size_t n) const {
    return detail::derive(key.evaluate_flat(n), data);
  }
  template <class F>
  void for_each_child(F&& f) const {
    f(key);
  }
  bool conflicts(const kax::detail::buffer_span& out, bool pointwise) const { return key.conflicts(out, pointwise); }
};

namespace detail {

// Elements base + j of a random array under one key: no memory read at all, so every row is
// "unit" (the kernel's contiguous loop) and the inner loop is the cipher's integer arithmetic.
// The counter steps in 32-bit lanes: lo = base.lo + j wraps, and the carry into hi is lo < base.lo
// (a row is shorter than 2^32), which vectorizes as 16 lanes instead of 64-bit arithmetic.
template <class Dist>
struct random_row {
  Dist dist;
  Key key;
  counter base;
  std::uint32_t step = 1;  // 0 when held (broadcast, at)
  [[gnu::always_inline]] auto operator()(std::size_t j) const {
    const std::uint32_t lo = base.lo + step * static_cast<std::uint32_t>(j);
    return dist(key, counter(base.hi + (lo < base.lo ? 1u : 0u), lo));
  }
  random_row broadcast() const { return {dist, key, base, 0}; }
  random_row at(std::size_t k) const {
    const std::uint64_t n = (std::uint64_t{base.hi} << 32 | base.lo) + std::uint64_t{step} * k;
    return {dist, key, counter(n), 0};
  }
  bool unit() const { return true; }
  random_row as_unit() const { return *this; }
  bool dense() const { return true; }  // computed, no memory walk
  random_row as_dense() const { return *this; }
};

}  // namespace detail

// A random array of shape `ext`: its first rank_of<KeyE> axes index the keys, the others are
// each key's sample shape (see the file comment).
template <class Dist, key_expression KeyE, std::size_t R>
struct RandomExpr : expression_base {
  using value_type = typename Dist::value_type;
  static constexpr std::size_t rank = R;
  static constexpr std::size_t key_rank = rank_of<KeyE>;
  static constexpr std::size_t sample_rank = R - key_rank;
  static_assert(key_rank <= R, "kax::random: a key array has more axes than the random array");

  KeyE key;
  Dist dist;
  shape<R> ext{};
  multi_index<R> sample_strides{};  // row-major strides of the sample shape; 0 on key axes

  RandomExpr(KeyE k, Dist d, const shape<R>& s) : key(std::move(k)), dist(d), ext(s) {
    std::size_t acc = 1;
    for (std::size_t a = R; a-- > key_rank;) {
      sample_strides[a] = acc;
      acc *= ext[a];
    }
  }

  shape<R> extents() const { return ext; }
  // One key: element n of the array is block n (the key's shape is ()).
  bool is_flat() const { return key_rank == 0; }

  KOKKOS_FORCEINLINE_FUNCTION Key key_at(const multi_index<R>& i) const {
    multi_index<key_rank> ki{};
    for (std::size_t a = 0; a < key_rank; ++a) ki[a] = i[a];
    return key.evaluate(ki);
  }
  KOKKOS_FORCEINLINE_FUNCTION std::uint64_t flat_index(const multi_index<R>& i) const {
    std::uint64_t n = 0;
    for (std::size_t a = key_rank; a < R; ++a) n += static_cast<std::uint64_t>(i[a]) * sample_strides[a];
    return n;
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate(const multi_index<R>& i) const {
    return dist(key_at(i), detail::counter(flat_index(i)));
  }
  KOKKOS_FORCEINLINE_FUNCTION value_type evaluate_flat(std::size_t n) const {
    return dist(key.evaluate(multi_index<key_rank>{}), detail::counter(static_cast<std::uint64_t>(n)));
  }
  // Along the last axis the key is fixed and the counter steps by one, unless the last axis is a
  // key axis (a vmapped draw of shape ()): then the generic row.
  auto row(const multi_index<R>& i) const {
    if constexpr (sample_rank == 0) {
      return kax::detail::generic_row<RandomExpr>{this, i};
    } else {
      multi_index<R> start = i;
      start[R - 1] = 0;
      return detail::random_row<Dist>{dist, key_at(start), detail::counter(flat_index(start))};
    }
  }
  template <class F>
  void for_each_child(F&& f) const {
    f(key);
  }
  bool conflicts(const kax::detail::buffer_span& out, bool) const { return key.conflicts(out, false); }
};

}  // namespace kax::random
