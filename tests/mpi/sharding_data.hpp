// Helpers of the sharding tests across MPI processes (run as mpirun -np 2 with KAX_HOST_DEVICES=2):
// global inputs every rank builds from a formula, naive references, and checks of a sharded result
// (the gathered global array and this process's blocks at their offsets).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "kax/kax.hpp"

namespace kax_mpitest {

// Small integers: float sums and products of them are exact in any order.
inline kax::Array<float, 2> small_ints(std::size_t rows, std::size_t cols, int seed) {
  kax::Array<float, 2> a(rows, cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      a(i, j) = static_cast<float>(static_cast<int>((7 * i + 3 * j + 5 * static_cast<std::size_t>(seed)) % 11) - 5);
  return a;
}

inline kax::Array<float, 2> numbered(std::size_t rows, std::size_t cols) {
  kax::Array<float, 2> a(rows, cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) a(i, j) = static_cast<float>(100 * i + j);
  return a;
}

inline kax::Array<float, 2> naive_matmul(const kax::Array<float, 2>& a, const kax::Array<float, 2>& b) {
  const auto m = a.extents()[0], k = a.extents()[1], n = b.extents()[1];
  kax::Array<float, 2> c(m, n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t l = 0; l < k; ++l) acc += static_cast<double>(a(i, l)) * b(l, j);
      c(i, j) = static_cast<float>(acc);
    }
  return c;
}

// The largest |a - b| over the elements (infinity when the shapes differ).
template <class A, class B>
double max_diff(const A& a, const B& b) {
  if (a.extents() != b.extents()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::abs(static_cast<double>(a.data()[i]) - static_cast<double>(b.data()[i])));
  return d;
}

// The largest difference between this process's blocks and the global array at their offsets.
template <class T, std::size_t R, class G>
double blocks_diff(const kax::ShardedArray<T, R>& s, const G& global) {
  const auto ge = global.extents();
  double worst = 0;
  for (const auto& shard : s.addressable_shards()) {
    const auto b = shard.data.extents();
    for (std::size_t f = 0; f < shard.data.size(); ++f) {
      std::size_t rest = f, g = 0, stride = 1;
      for (std::size_t d = R; d-- > 0;) {
        g += (shard.offset[d] + rest % b[d]) * stride;
        rest /= b[d];
        stride *= ge[d];
      }
      worst = std::max(worst, std::abs(static_cast<double>(shard.data.data()[f]) - static_cast<double>(global.data()[g])));
    }
  }
  return worst;
}

// Checks a sharded result (its gathered global array and this process's blocks) against `want`.
template <class T, std::size_t R, class G>
void check_result(const kax::ShardedArray<T, R>& s, const G& want, double tol = 0) {
  REQUIRE(s.extents() == want.extents());
  CHECK(max_diff(kax::to_host(s), want) <= tol);
  CHECK(blocks_diff(s, want) <= tol);
}

inline std::vector<kax::Mesh> square_meshes() {
  const auto all = kax::devices();
  return {kax::make_mesh({2, 2}, {"x", "y"}), kax::make_mesh({2, 2}, {"y", "x"}),
          // devices (0, 2, 1, 3): "x" within each process, "y" across the two
          kax::Mesh({2, 2}, {"x", "y"}, {all[0], all[2], all[1], all[3]})};
}

// The attention inputs of the MPI tests, (batch, t, d) = (8, 6, 4), and softmax(q k^T / sqrt(d)) v
// by naive loops in double.
struct attention_case {
  static constexpr std::size_t batch = 8, t = 6, d = 4;
  static float scale() { return 1.0f / std::sqrt(static_cast<float>(d)); }
  static kax::Array<float, 3> fill(double seed) {
    kax::Array<float, 3> a(batch, t, d);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(std::sin(seed + 0.37 * static_cast<double>(i)));
    return a;
  }
  kax::Array<float, 3> q = fill(0.1), k = fill(1.7), v = fill(2.3);
  kax::Array<double, 3> want() const {
    kax::Array<double, 3> out(batch, t, d);
    std::vector<double> s(t);
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < t; ++i) {
        double m = -std::numeric_limits<double>::infinity(), z = 0;
        for (std::size_t j = 0; j < t; ++j) {
          double acc = 0;
          for (std::size_t c = 0; c < d; ++c) acc += static_cast<double>(q(b, i, c)) * k(b, j, c);
          m = std::max(m, s[j] = acc * scale());
        }
        for (std::size_t j = 0; j < t; ++j) z += (s[j] = std::exp(s[j] - m));
        for (std::size_t c = 0; c < d; ++c) {
          double o = 0;
          for (std::size_t j = 0; j < t; ++j) o += s[j] / z * v(b, j, c);
          out(b, i, c) = o;
        }
      }
    return out;
  }
};

}  // namespace kax_mpitest
