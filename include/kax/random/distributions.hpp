// kax/random/distributions.hpp — jax.random's samplers as lazy expressions: bits, uniform,
// normal, bernoulli, randint.
//
// Each sampler is a small functor: (key, counter n) -> value, applied by RandomExpr to the
// threefry2x32 block of n (random/random_expr.hpp).  The bit manipulations are JAX's
// (jax/_src/random.py; see docs/random.md for the line-by-line correspondence):
//   32-bit draws use block.w0 ^ block.w1, 64-bit draws (w0 << 32) | w1;
// (each takes the element's counter: random_expr.hpp)
//   uniform keeps the top mantissa bits: float((bits >> 9) | 0x3f800000) - 1 in [0, 1), then
//     u * (maxval - minval) + minval (one fused multiply-add, as XLA emits it), clamped below at
//     minval;
//   normal is sqrt(2) * erfinv(u), u uniform in (-1, 1) (minval = nextafter(-1, 0));
//   bernoulli is uniform float32 < p.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "kax/core/dtype.hpp"
#include "kax/core/errors.hpp"
#include "kax/random/detail/erfinv.hpp"
#include "kax/random/random_expr.hpp"

namespace kax::random {

namespace detail {

KOKKOS_FORCEINLINE_FUNCTION std::uint32_t bits32(const Key& k, counter n) {
  std::uint32_t a = 0, b = 0;
  block(k, n, a, b);
  return a ^ b;
}
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t bits64(const Key& k, counter n) {
  std::uint32_t a = 0, b = 0;
  block(k, n, a, b);
  return (static_cast<std::uint64_t>(a) << 32) | b;
}

// A float in [0, 1) from the top mantissa-many bits of a draw (jax.random.uniform).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T unit_float(const Key& k, counter n) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>((bits32(k, n) >> 9) | 0x3f800000u) - 1.0f;
  } else {
    return std::bit_cast<double>((bits64(k, n) >> 12) | 0x3ff0000000000000ull) - 1.0;
  }
}

// jax.random.bits with 32-bit width, widened to int64 (kax has no unsigned dtypes).
struct bits_dist {
  using value_type = std::int64_t;
  KOKKOS_FORCEINLINE_FUNCTION std::int64_t operator()(const Key& k, counter n) const {
    return static_cast<std::int64_t>(bits32(k, n));
  }
};

template <class T>
struct uniform_dist {
  using value_type = T;
  T minval, span;  // span = maxval - minval, rounded in T as JAX computes it
  KOKKOS_FORCEINLINE_FUNCTION T operator()(const Key& k, counter n) const {
    const T v = mul_add(unit_float<T>(k, n), span, minval);
    return v < minval ? minval : v;  // lax.max(minval, v)
  }
};

// uniform on [0, 1): JAX's u * (1 - 0) + 0, clamped at 0, is u itself.
template <class T>
struct unit_uniform_dist {
  using value_type = T;
  KOKKOS_FORCEINLINE_FUNCTION T operator()(const Key& k, counter n) const { return unit_float<T>(k, n); }
};

template <class T>
struct normal_dist {
  using value_type = T;
  KOKKOS_FORCEINLINE_FUNCTION T operator()(const Key& k, counter n) const {
    // uniform(key, shape, T, nextafter(-1, 0), 1): lo + u * (1 - lo), where 1 - lo rounds to 2.
    // JAX's clamp at lo never applies (u >= 0); leaving it out keeps the kernel free of control
    // flow, which GCC's vectorizer needs here.
    constexpr T lo = -1 + std::numeric_limits<T>::epsilon() / 2;
    constexpr T span = 1 - lo;
    static_assert(span == 2);
    const T u = mul_add(unit_float<T>(k, n), span, lo);
    return T(1.41421356237309504880) * erfinv(u);  // np.sqrt(2) rounded to T
  }
};

// jax.random.randint (jax/_src/random.py `_randint`): two draws, from the keys split(key)[0]
// (high bits) and split(key)[1] (low bits), combined modulo the span with the multiplier
// 2^(nbits/2) * 2^(nbits/2) mod span, so that the bias is that of a 2*nbits-bit draw.  All
// arithmetic in the unsigned type of I, wrapping, as XLA's; maxval <= minval gives minval.
template <class I>
struct randint_dist {
  using value_type = I;
  using U = std::make_unsigned_t<I>;
  I minval;
  U span, multiplier;

  randint_dist(I lo, I hi) : minval(lo) {
    span = hi <= lo ? U(1) : static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
    constexpr unsigned half = sizeof(U) * 4;
    U m = static_cast<U>((U(1) << half) % span);
    multiplier = static_cast<U>(m * m % span);
  }
  KOKKOS_FORCEINLINE_FUNCTION U draw(const Key& k, counter n) const {
    if constexpr (sizeof(U) == 4) return bits32(k, n);
    else return bits64(k, n);
  }
  KOKKOS_FORCEINLINE_FUNCTION I operator()(const Key& k, counter n) const {
    const U high = draw(derive(k, 0), n), low = draw(derive(k, 1), n);
    const U offset = static_cast<U>(static_cast<U>(high % span * multiplier + low % span) % span);
    return static_cast<I>(static_cast<U>(static_cast<U>(minval) + offset));
  }
};

struct bernoulli_dist {
  using value_type = bool;
  float p;
  KOKKOS_FORCEINLINE_FUNCTION bool operator()(const Key& k, counter n) const { return unit_float<float>(k, n) < p; }
};

}  // namespace detail

// The keys a sampler accepts: one Key, or a key expression of shape () (inside vmap: the mapped
// key, or fold_in / split<N> of it).
template <class K>
concept key_operand = std::same_as<std::remove_cvref_t<K>, Key> || key_expression<K> ||
                      (array_like<K> && key_expression<decltype(std::declval<const K&>().as_leaf())>);

namespace detail {

template <class K>
auto key_node(const K& k) {
  if constexpr (std::same_as<std::remove_cvref_t<K>, Key>) {
    return KeyConstant(k);
  } else if constexpr (!expression<K>) {
    return key_node(k.as_leaf());  // an Array of keys
  } else {
    static_assert(rank_of<K> == 0,
                  "kax::random: a sampler takes a single key (shape ()), not a key array; map over a key "
                  "array with kax::vmap, as jax.random does");
    return k;
  }
}

template <class Dist, class K, std::size_t R>
auto sample(const K& k, Dist d, const shape<R>& s) {
  auto kn = key_node(k);
  return RandomExpr<Dist, decltype(kn), R>(std::move(kn), d, s);
}

template <std::size_t R>
shape<R> shape_of(const std::size_t (&s)[R]) {
  shape<R> out{};
  for (std::size_t a = 0; a < R; ++a) out[a] = s[a];
  return out;
}

}  // namespace detail

// jax.random.bits(key, shape) (uint32 in JAX): the raw 32-bit draws, as int64 values in [0, 2^32).
template <key_operand K, std::size_t R>
auto bits(const K& key, const shape<R>& s) {
  return detail::sample(key, detail::bits_dist{}, s);
}
template <key_operand K, std::size_t R>
auto bits(const K& key, const std::size_t (&s)[R]) {
  return bits(key, detail::shape_of(s));
}

// jax.random.uniform(key, shape, dtype, minval, maxval): T in [minval, maxval).
template <class T, key_operand K, std::size_t R>
  requires std::floating_point<T> && dtype<T>
auto uniform(const K& key, const shape<R>& s, T minval, T maxval) {
  return detail::sample(key, detail::uniform_dist<T>{minval, static_cast<T>(maxval - minval)}, s);
}
template <class T, key_operand K, std::size_t R>
  requires std::floating_point<T> && dtype<T>
auto uniform(const K& key, const std::size_t (&s)[R], T minval, T maxval) {
  return uniform<T>(key, detail::shape_of(s), minval, maxval);
}
// jax.random.uniform(key, shape, dtype): T in [0, 1) (the same values as minval 0, maxval 1,
// without the multiply-add and clamp that cannot change them).
template <class T, key_operand K, std::size_t R>
  requires std::floating_point<T> && dtype<T>
auto uniform(const K& key, const shape<R>& s) {
  return detail::sample(key, detail::unit_uniform_dist<T>{}, s);
}
template <class T, key_operand K, std::size_t R>
  requires std::floating_point<T> && dtype<T>
auto uniform(const K& key, const std::size_t (&s)[R]) {
  return uniform<T>(key, detail::shape_of(s));
}
// A single draw (shape ()).
template <class T, key_operand K>
  requires std::floating_point<T> && dtype<T>
auto uniform(const K& key) {
  return uniform<T>(key, shape<0>{});
}
template <class T, key_operand K>
  requires std::floating_point<T> && dtype<T>
auto uniform(const K& key, T minval, T maxval) {
  return uniform<T>(key, shape<0>{}, minval, maxval);
}

// jax.random.normal(key, shape, dtype): standard normal T.
template <class T, key_operand K, std::size_t R>
  requires std::floating_point<T> && dtype<T>
auto normal(const K& key, const shape<R>& s) {
  return detail::sample(key, detail::normal_dist<T>{}, s);
}
template <class T, key_operand K, std::size_t R>
  requires std::floating_point<T> && dtype<T>
auto normal(const K& key, const std::size_t (&s)[R]) {
  return normal<T>(key, detail::shape_of(s));
}
template <class T, key_operand K>
  requires std::floating_point<T> && dtype<T>
auto normal(const K& key) {
  return normal<T>(key, shape<0>{});
}

// jax.random.bernoulli(key, p, shape): bool, true with probability p (p in float32, as JAX
// computes it without x64).
template <key_operand K, std::size_t R>
auto bernoulli(const K& key, double p, const shape<R>& s) {
  return detail::sample(key, detail::bernoulli_dist{static_cast<float>(p)}, s);
}
template <key_operand K, std::size_t R>
auto bernoulli(const K& key, double p, const std::size_t (&s)[R]) {
  return bernoulli(key, p, detail::shape_of(s));
}
template <key_operand K>
auto bernoulli(const K& key, double p = 0.5) {
  return bernoulli(key, p, shape<0>{});
}

// jax.random.randint(key, shape, minval, maxval, dtype): I in [minval, maxval) (int32 or int64).
template <class I, key_operand K, std::size_t R>
  requires(std::same_as<I, std::int32_t> || std::same_as<I, std::int64_t>)
auto randint(const K& key, const shape<R>& s, I minval, I maxval) {
  return detail::sample(key, detail::randint_dist<I>(minval, maxval), s);
}
template <class I, key_operand K, std::size_t R>
  requires(std::same_as<I, std::int32_t> || std::same_as<I, std::int64_t>)
auto randint(const K& key, const std::size_t (&s)[R], I minval, I maxval) {
  return randint<I>(key, detail::shape_of(s), minval, maxval);
}

// jax.random.fold_in / split<N> of a key expression (inside vmap): lazy, per key.
template <key_expression K>
auto fold_in(const K& key, std::uint32_t data) {
  return FoldInExpr<K>(key, data);
}
template <std::size_t N = 2, key_expression K>
auto split(const K& key) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<FoldInExpr<K>, N>{FoldInExpr<K>(key, static_cast<std::uint32_t>(I))...};
  }(std::make_index_sequence<N>{});
}

}  // namespace kax::random
