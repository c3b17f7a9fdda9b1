// kax/random/threefry.hpp — the threefry2x32 block cipher with 20 rounds (Salmon, Moraes, Dror,
// Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11; Random123's threefry2x32_20), the
// counter-based generator behind jax.random's default PRNG.
//
// Encrypting a 2x32-bit counter under a 2x32-bit key gives 64 random bits; different counters
// give independent blocks, so every element of a random array is computed on its own, in any
// order, on any thread: kax generates random values inside the consuming kernel.  The round
// structure is Random123's (and jax/_src/prng.py's `threefry2x32`): rotations 13 15 26 6 | 17 29
// 16 24, a key schedule with the Skein parity constant 0x1BD11BDA, and a key injection (plus the
// injection count) after every fourth round.
#pragma once

#include <array>
#include <cstdint>

#include "kax/core/config.hpp"

namespace kax::random {

namespace detail {

KOKKOS_FORCEINLINE_FUNCTION constexpr std::uint32_t rotl32(std::uint32_t v, unsigned r) {
  return (v << r) | (v >> (32u - r));
}

// Four rounds with rotations r0..r3 (the mix function of Threefish on two words).
KOKKOS_FORCEINLINE_FUNCTION constexpr void threefry_rounds(std::uint32_t& x0, std::uint32_t& x1, unsigned r0,
                                                           unsigned r1, unsigned r2, unsigned r3) {
  x0 += x1, x1 = rotl32(x1, r0), x1 ^= x0;
  x0 += x1, x1 = rotl32(x1, r1), x1 ^= x0;
  x0 += x1, x1 = rotl32(x1, r2), x1 ^= x0;
  x0 += x1, x1 = rotl32(x1, r3), x1 ^= x0;
}

// threefry2x32-20 of counter (c0, c1) under key (k0, k1): the result in (c0, c1).  Plain scalars,
// so that host kernels vectorize it (rotations become AVX-512 vprold) and device code needs no
// std:: types.
KOKKOS_FORCEINLINE_FUNCTION constexpr void threefry2x32_20(std::uint32_t k0, std::uint32_t k1, std::uint32_t& c0,
                                                           std::uint32_t& c1) {
  const std::uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  std::uint32_t x0 = c0 + k0, x1 = c1 + k1;
  threefry_rounds(x0, x1, 13, 15, 26, 6);
  x0 += k1, x1 += k2 + 1u;
  threefry_rounds(x0, x1, 17, 29, 16, 24);
  x0 += k2, x1 += k0 + 2u;
  threefry_rounds(x0, x1, 13, 15, 26, 6);
  x0 += k0, x1 += k1 + 3u;
  threefry_rounds(x0, x1, 17, 29, 16, 24);
  x0 += k1, x1 += k2 + 4u;
  threefry_rounds(x0, x1, 13, 15, 26, 6);
  x0 += k2, x1 += k0 + 5u;
  c0 = x0, c1 = x1;
}

}  // namespace detail

// jax.random's threefry_2x32 on one block: the 2x32-bit `count` encrypted under `key`.  Host and
// device (constexpr, so nvcc accepts std::array in device code only with
// --expt-relaxed-constexpr; kax's own kernels use detail::threefry2x32_20).
KOKKOS_INLINE_FUNCTION constexpr std::array<std::uint32_t, 2> threefry2x32(std::array<std::uint32_t, 2> key,
                                                                           std::array<std::uint32_t, 2> count) {
  std::uint32_t c0 = count[0], c1 = count[1];
  detail::threefry2x32_20(key[0], key[1], c0, c1);
  return {c0, c1};
}

}  // namespace kax::random
