// kax/random/permutation.hpp — jax.random.permutation: a random permutation of 0..n-1, or of an
// array's leading axis, with JAX's values.
//
// JAX shuffles by sorting (jax/_src/random.py `_shuffle`): ceil(3 ln(n) / ln(2^32 - 1)) rounds
// (one round up to n = 1625, two up to ~2.6 million), each splitting the key into (key, subkey)
// and stably sorting the current order by 32-bit draws of subkey (one per position).  Enough
// rounds make ties in the sort keys, the source of bias, unlikely.  Computed eagerly on the host:
// a sort is not an elementwise expression.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "kax/core/array.hpp"
#include "kax/core/transfer.hpp"
#include "kax/random/key.hpp"

namespace kax::random {

namespace detail {

// The order of 0..n-1 after JAX's shuffle rounds.
inline std::vector<std::int64_t> shuffled_indices(Key key, std::size_t n) {
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), std::int64_t{0});
  // np.ceil(exponent * np.log(max(1, n)) / np.log(uint32max)) in double, as JAX computes it.
  const double rounds_d = std::ceil(3.0 * std::log(static_cast<double>(std::max<std::size_t>(1, n))) /
                                    std::log(4294967295.0));
  const auto rounds = static_cast<int>(rounds_d);
  std::vector<std::uint32_t> sort_keys(n);
  std::vector<std::size_t> pos(n);
  std::vector<std::int64_t> next(n);
  for (int r = 0; r < rounds; ++r) {
    const Key subkey = derive(key, 1);
    key = derive(key, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t a = 0, b = 0;
      block(subkey, counter(static_cast<std::uint64_t>(i)), a, b);
      sort_keys[i] = a ^ b;
    }
    std::iota(pos.begin(), pos.end(), std::size_t{0});
    std::stable_sort(pos.begin(), pos.end(), [&](std::size_t x, std::size_t y) { return sort_keys[x] < sort_keys[y]; });
    for (std::size_t i = 0; i < n; ++i) next[i] = order[pos[i]];
    order.swap(next);
  }
  return order;
}

}  // namespace detail

// jax.random.permutation(key, n): 0..n-1 in random order (int64, as JAX with x64).
inline Array<std::int64_t, 1> permutation(const Key& key, std::size_t n) {
  const std::vector<std::int64_t> order = detail::shuffled_indices(key, n);
  Array<std::int64_t, 1, Kokkos::HostSpace> host(n);
  std::copy(order.begin(), order.end(), host.data());
  return device_put(host);
}

// jax.random.permutation(key, x): x with its leading axis permuted (the rows of a matrix, the
// elements of a vector), as JAX's default independent=False.
template <element_dtype T, std::size_t R, class M>
  requires(R >= 1)
Array<T, R> permutation(const Key& key, const Array<T, R, M>& x) {
  const auto s = x.extents();
  const std::vector<std::int64_t> order = detail::shuffled_indices(key, s[0]);
  const auto in = to_host(x);
  Kokkos::fence();
  std::size_t row = 1;
  for (std::size_t a = 1; a < R; ++a) row *= s[a];
  Array<T, R, Kokkos::HostSpace> out(s);
  for (std::size_t i = 0; i < s[0]; ++i)
    std::copy_n(in.data() + static_cast<std::size_t>(order[i]) * row, row, out.data() + i * row);
  return device_put(out);
}

}  // namespace kax::random
