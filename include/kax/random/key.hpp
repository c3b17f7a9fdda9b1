// kax/random/key.hpp — PRNG keys: kax::random::Key (jax.random.key's key<fry> element), key(seed),
// fold_in, split, key_data.
//
// A key is two 32-bit words, the key of threefry2x32.  JAX derives new keys by encrypting
// counters under the parent key; with `jax_threefry_partitionable=True` (JAX's default since 0.5,
// jax/_src/prng.py `_threefry_split_foldlike` and `_threefry_fold_in`):
//   fold_in(k, d)     = threefry2x32(k, (0, d))
//   split(k, n)[i]    = threefry2x32(k, (hi32(i), lo32(i)))     so split(k, n)[i] == fold_in(k, i)
// Keys are an element type (an "extended dtype", as in JAX): Array<Key, R> holds key arrays that
// vmap maps over; arithmetic on keys does not compile.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kax/core/array.hpp"
#include "kax/core/transfer.hpp"
#include "kax/core/dtype.hpp"
#include "kax/core/errors.hpp"
#include "kax/random/threefry.hpp"

namespace kax::random {

// A threefry2x32 key (jax.random.key(seed) is an array of shape () holding one).
struct Key {
  std::uint32_t w0 = 0;  // key_data(key)[0]
  std::uint32_t w1 = 0;  // key_data(key)[1]
  friend constexpr bool operator==(const Key&, const Key&) = default;
};

}  // namespace kax::random

template <>
struct kax::extended_dtype<kax::random::Key> : std::true_type {
  static constexpr const char* name = "key<fry>";
};

namespace kax::random {

namespace detail {

// The counter (hi32(n), lo32(n)) of element n of a random array or of split's n-th key.  Kept
// as two words so that kernels step it in 32-bit lanes (random_row).
struct counter {
  std::uint32_t hi = 0, lo = 0;
  KOKKOS_FORCEINLINE_FUNCTION constexpr counter() = default;
  KOKKOS_FORCEINLINE_FUNCTION constexpr counter(std::uint32_t h, std::uint32_t l) : hi(h), lo(l) {}
  KOKKOS_FORCEINLINE_FUNCTION constexpr counter(std::uint64_t n)  // NOLINT: a flat index is a counter
      : hi(static_cast<std::uint32_t>(n >> 32)), lo(static_cast<std::uint32_t>(n)) {}
};

// The block threefry2x32(key, counter).
KOKKOS_FORCEINLINE_FUNCTION constexpr void block(const Key& k, counter c, std::uint32_t& o0, std::uint32_t& o1) {
  o0 = c.hi;
  o1 = c.lo;
  threefry2x32_20(k.w0, k.w1, o0, o1);
}

KOKKOS_FORCEINLINE_FUNCTION constexpr Key derive(const Key& k, std::uint64_t n) {
  Key out;
  block(k, counter(n), out.w0, out.w1);
  return out;
}

}  // namespace detail

// jax.random.key(seed) (and jax.random.PRNGKey): words (seed >> 32, seed & 0xffffffff) of the
// 64-bit seed, as jax/_src/prng.py `threefry_seed` computes them with jax_enable_x64.  For seeds in
// [0, 2^31) this is (0, seed) in either JAX mode; a negative seed is taken as its 64-bit two's
// complement (JAX without x64 truncates the seed to int32 first: key(-1) there is (0, 0xffffffff)).
constexpr Key key(std::int64_t seed) {
  const auto s = static_cast<std::uint64_t>(seed);
  return Key{static_cast<std::uint32_t>(s >> 32), static_cast<std::uint32_t>(s)};
}

// jax.random.wrap_key_data: a key from its two words.
constexpr Key wrap_key_data(std::array<std::uint32_t, 2> data) { return Key{data[0], data[1]}; }

// jax.random.key_data(key): the key's two words.
constexpr std::array<std::uint32_t, 2> key_data(const Key& k) { return {k.w0, k.w1}; }

// jax.random.fold_in(key, data): a new key that depends on key and the 32-bit data.
constexpr Key fold_in(const Key& k, std::uint32_t data) { return detail::derive(k, data); }

// jax.random.split(key, num) unpacked: `auto [key, subkey] = kax::random::split<2>(key);`.
template <std::size_t N = 2>
constexpr std::array<Key, N> split(const Key& k) {
  std::array<Key, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = detail::derive(k, i);
  return out;
}

// jax.random.split(key, num): a key array of shape (num,) (computed on the host, then placed in
// the default memory space).  Pass it to vmap to map a function over keys.
inline Array<Key, 1> split(const Key& k, std::size_t num) {
  Array<Key, 1, Kokkos::HostSpace> host(num);
  Key* p = host.data();
  for (std::size_t i = 0; i < num; ++i) p[i] = detail::derive(k, i);
  return device_put(host);
}

}  // namespace kax::random
