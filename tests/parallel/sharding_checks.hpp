// Helpers of the shard_map and jit tests: global test arrays of known values, and checks of a
// sharded result (every block at its offset, and the gathered array) against expected values
// computed by naive loops in the tests.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "device_data.hpp"
#include "kax/kax.hpp"

namespace kax_ptest {

template <std::size_t R>
using idx = std::array<std::size_t, R>;

// The global test array: small values of both signs, halves included, so sums and products are exact.
inline double gval(std::size_t i, std::size_t j) {
  return static_cast<double>((i * 7 + j * 3) % 11) - 5.0 + 0.5 * static_cast<double>((i + j) % 2);
}

template <class T = float, class F>
kax::Array<T, 1> make1(std::size_t n, F f) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(f(i));
  return kax::from(v, kax::shape<1>{n});
}
template <class T = float, class F>
kax::Array<T, 2> make2(std::size_t r, std::size_t c, F f) {
  std::vector<T> v(r * c);
  for (std::size_t i = 0; i < r; ++i)
    for (std::size_t j = 0; j < c; ++j) v[i * c + j] = static_cast<T>(f(i, j));
  return kax::from(v, kax::shape<2>{r, c});
}
template <class T = float, class F>
kax::Array<T, 3> make3(std::size_t a, std::size_t b, std::size_t c, F f) {
  std::vector<T> v(a * b * c);
  for (std::size_t i = 0; i < a; ++i)
    for (std::size_t j = 0; j < b; ++j)
      for (std::size_t k = 0; k < c; ++k) v[(i * b + j) * c + k] = static_cast<T>(f(i, j, k));
  return kax::from(v, kax::shape<3>{a, b, c});
}

// got (a block at `offset`, or a whole array at offset 0) holds want(global index) elementwise,
// within tol * (1 + |want|).
template <class T, std::size_t R, class M, class F>
void require_array(const kax::Array<T, R, M>& got, const kax::shape<R>& offset, F want, double tol) {
  const std::vector<T> v = kax::to_vector(got);
  const kax::shape<R> ext = got.extents();
  std::size_t bad = 0;
  for (std::size_t f = 0; f < v.size(); ++f) {
    idx<R> at{};
    std::size_t rest = f;
    for (std::size_t d = R; d-- > 0;) {
      at[d] = rest % ext[d] + offset[d];
      rest /= ext[d];
    }
    const double w = want(at), g = static_cast<double>(v[f]);
    if (!(std::abs(g - w) <= tol * (1 + std::abs(w))) && bad++ < 5) {
      INFO("flat element " << f << " of a block at offset " << kax::shape_string(offset) << ": got " << g << ", want " << w);
      CHECK(g == w);
    }
  }
  REQUIRE(bad == 0);
}

// A sharded result has the global shape, one block per mesh device, every block holds its part of
// want, and to_host gives want.
template <class T, std::size_t R, class F>
void require_sharded(const kax::ShardedArray<T, R>& s, const kax::shape<R>& global, F want, double tol = 0) {
  REQUIRE(s.extents() == global);
  REQUIRE(s.blocks().size() == s.sharding().mesh().size());
  for (const auto& shard : s.addressable_shards()) {
    INFO("the block of " << shard.device.to_string());
    require_array(shard.data, shard.offset, want, tol);
  }
  require_array(kax::to_host(s), kax::shape<R>{}, want, tol);
}

// The same, and the layout is `spec` (PartitionSpec's ==, which ignores trailing Nones).
template <class T, std::size_t R, class F>
void require_sharded(const kax::ShardedArray<T, R>& s, const kax::shape<R>& global, const kax::PartitionSpec& spec,
                     F want, double tol = 0) {
  INFO("result spec " << s.sharding().spec().to_string() << ", expected " << spec.to_string());
  CHECK(s.sharding().spec() == spec);
  require_sharded(s, global, want, tol);
}

// A 2x2 mesh with 4 devices, else 1 x n: the tests run on every device count.
inline kax::Mesh mesh_2d() {
  const std::size_t n = devices_n();
  return n >= 4 ? kax::make_mesh({2, 2}, {"x", "y"}) : kax::make_mesh({1, n}, {"x", "y"});
}

}  // namespace kax_ptest
