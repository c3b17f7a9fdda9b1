// Meshes and sharded arrays across MPI processes: run as `mpirun -np 2` with KAX_HOST_DEVICES=2
// (devices 0, 1 on rank 0 and 2, 3 on rank 1).  Every rank builds the same global arrays from a
// formula; the expected block offsets are written out by hand for each mesh and spec.
#define KAX_CHECK_REPLICATION 1

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kax/kax.hpp"

namespace {

// A distinct value per element, so a misplaced block shows.
kax::Array<float, 2> numbered(std::size_t rows, std::size_t cols) {
  kax::Array<float, 2> a(rows, cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) a(i, j) = static_cast<float>(100 * i + j);
  return a;
}

// Whether every block of this process holds global[offset + index].
template <class T>
bool blocks_match(const kax::ShardedArray<T, 2>& s, const kax::Array<T, 2>& global) {
  for (const auto& shard : s.addressable_shards()) {
    const auto b = shard.data.extents();
    for (std::size_t i = 0; i < b[0]; ++i)
      for (std::size_t j = 0; j < b[1]; ++j)
        if (shard.data(i, j) != global(shard.offset[0] + i, shard.offset[1] + j)) return false;
  }
  return true;
}

template <class A, class B>
bool same(const A& a, const B& b) {
  if (a.extents() != b.extents()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

using offsets = std::array<kax::shape<2>, 2>;  // this rank's two shards, in mesh order

struct layout_case {
  const char* what;
  kax::Mesh mesh;
  kax::PartitionSpec spec;
  kax::shape<2> block;
  std::array<offsets, 2> by_rank;          // [rank][shard]
  std::array<std::array<int, 2>, 2> ids;   // device ids of each rank's shards
};

}  // namespace

TEST_CASE("make_mesh under MPI lays the processes' devices out in order and must use all of them") {
  REQUIRE(kax::process_count() == 2);
  REQUIRE(kax::device_count() == 4);
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  CHECK(mesh.to_string() == "Mesh('x': 2, 'y': 2)");
  const int r = kax::process_index();
  CHECK(mesh.local_positions() == std::vector<std::size_t>{static_cast<std::size_t>(2 * r), static_cast<std::size_t>(2 * r + 1)});
  for (int k = 0; k < 4; ++k) {
    CHECK(mesh.devices()[static_cast<std::size_t>(k)].id == k);
    CHECK(mesh.devices()[static_cast<std::size_t>(k)].process_index == k / 2);
  }
  CHECK_THROWS_AS(kax::make_mesh({2}, {"x"}), kax::shape_error);
  CHECK_THROWS_WITH(kax::make_mesh({1, 2}, {"x", "y"}), Catch::Contains("must use all 4 devices, not 2"));
  CHECK_THROWS_AS(kax::make_mesh({3}, {"x"}), kax::shape_error);
  CHECK_THROWS_AS(kax::make_mesh({8}, {"x"}), kax::shape_error);
  CHECK_THROWS_AS(kax::make_mesh({2, 4}, {"x", "y"}), kax::shape_error);
}

TEST_CASE("device_put gives each process the blocks of its own devices, and to_host gathers all of them") {
  using kax::none;
  using kax::P;
  const kax::Mesh xy = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Mesh yx = kax::make_mesh({2, 2}, {"y", "x"});
  const kax::Mesh line = kax::make_mesh({4}, {"x"});
  const kax::Array<float, 2> g = numbered(8, 12);
  const std::array<std::array<int, 2>, 2> own{{{0, 1}, {2, 3}}};
  // Mesh position k of a 2x2 mesh has coordinates (k / 2, k % 2) in the mesh's axis order.
  const std::vector<layout_case> cases = {
      {"xy P('x', 'y')", xy, P("x", "y"), {4, 6}, {{{{{0, 0}, {0, 6}}}, {{{4, 0}, {4, 6}}}}}, own},
      {"xy P(('x', 'y'))", xy, P({"x", "y"}), {2, 12}, {{{{{0, 0}, {2, 0}}}, {{{4, 0}, {6, 0}}}}}, own},
      {"xy P(None, 'x')", xy, P(none, "x"), {8, 6}, {{{{{0, 0}, {0, 0}}}, {{{0, 6}, {0, 6}}}}}, own},
      {"xy P(None, 'y')", xy, P(none, "y"), {8, 6}, {{{{{0, 0}, {0, 6}}}, {{{0, 0}, {0, 6}}}}}, own},
      {"xy P()", xy, P(), {8, 12}, {{{{{0, 0}, {0, 0}}}, {{{0, 0}, {0, 0}}}}}, own},
      {"xy P('y', 'x')", xy, P("y", "x"), {4, 6}, {{{{{0, 0}, {4, 0}}}, {{{0, 6}, {4, 6}}}}}, own},
      {"xy P(('y', 'x'))", xy, P({"y", "x"}), {2, 12}, {{{{{0, 0}, {4, 0}}}, {{{2, 0}, {6, 0}}}}}, own},
      {"yx P('x', 'y')", yx, P("x", "y"), {4, 6}, {{{{{0, 0}, {4, 0}}}, {{{0, 6}, {4, 6}}}}}, own},
      {"yx P(('x', 'y'))", yx, P({"x", "y"}), {2, 12}, {{{{{0, 0}, {4, 0}}}, {{{2, 0}, {6, 0}}}}}, own},
      {"yx P(None, 'x')", yx, P(none, "x"), {8, 6}, {{{{{0, 0}, {0, 6}}}, {{{0, 0}, {0, 6}}}}}, own},
      {"yx P()", yx, P(), {8, 12}, {{{{{0, 0}, {0, 0}}}, {{{0, 0}, {0, 0}}}}}, own},
      {"line P('x')", line, P("x"), {2, 12}, {{{{{0, 0}, {2, 0}}}, {{{4, 0}, {6, 0}}}}}, own},
      {"line P(None, 'x')", line, P(none, "x"), {8, 3}, {{{{{0, 0}, {0, 3}}}, {{{0, 6}, {0, 9}}}}}, own},
      {"line P()", line, P(), {8, 12}, {{{{{0, 0}, {0, 0}}}, {{{0, 0}, {0, 0}}}}}, own},
  };
  const auto r = static_cast<std::size_t>(kax::process_index());
  for (const layout_case& c : cases) {
    INFO(c.what);
    const auto s = kax::device_put(g, kax::NamedSharding(c.mesh, c.spec));
    CHECK(s.extents() == kax::shape<2>{8, 12});
    CHECK(s.block_shape() == c.block);
    const auto shards = s.addressable_shards();
    REQUIRE(shards.size() == 2);
    for (std::size_t t = 0; t < 2; ++t) {
      CHECK(shards[t].device.id == c.ids[r][t]);
      CHECK(shards[t].device.process_index == static_cast<int>(r));
      CHECK(shards[t].offset == c.by_rank[r][t]);
      CHECK(shards[t].data.extents() == c.block);
    }
    CHECK(blocks_match(s, g));
    CHECK(same(kax::to_host(s), g));
  }
}

TEST_CASE("to_host gathers integer and rank-3 arrays across processes") {
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  kax::Array<std::int32_t, 3> g(4, 2, 6);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      for (std::size_t k = 0; k < 6; ++k) g(i, j, k) = static_cast<std::int32_t>(1000 * i + 100 * j + k) - 2000;
  for (const kax::PartitionSpec& spec : {kax::P(kax::none, "y", "x"), kax::P({"y", "x"}), kax::P("x", kax::none, "y")}) {
    INFO(spec.to_string());
    const auto s = kax::device_put(g, kax::NamedSharding(mesh, spec));
    CHECK(same(kax::to_host(s), g));
  }
  kax::Array<double, 1> v(8);
  for (std::size_t i = 0; i < 8; ++i) v(i) = 0.5 * static_cast<double>(i) - 1.25;
  const auto s = kax::device_put(v, kax::NamedSharding(kax::make_mesh({4}, {"x"}), kax::P("x")));
  CHECK(s.addressable_shards()[1].data(0) == v(static_cast<std::size_t>(2 * (2 * kax::process_index() + 1))));
  CHECK(same(kax::to_host(s), v));
}

TEST_CASE("resharding across processes moves every block to its new devices") {
  using kax::none;
  using kax::P;
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> g = numbered(8, 12);
  const std::vector<kax::PartitionSpec> specs = {P("x", "y"), P({"x", "y"}), P(none, "x"), P(), P("y", "x"),
                                                 P(none, {"y", "x"})};
  for (const auto& from : specs)
    for (const auto& to : specs) {
      INFO(from.to_string() << " -> " << to.to_string());
      const auto a = kax::device_put(g, kax::NamedSharding(mesh, from));
      const auto b = kax::device_put(a, kax::NamedSharding(mesh, to));
      CHECK(b.sharding().spec() == to);
      CHECK(blocks_match(b, g));
      CHECK(same(kax::to_host(b), g));
    }
  SECTION("onto another mesh of the same devices") {
    const auto a = kax::device_put(g, kax::NamedSharding(mesh, P("x", "y")));
    const auto b = kax::device_put(a, kax::NamedSharding(kax::make_mesh({4}, {"i"}), P(none, "i")));
    CHECK(b.block_shape() == kax::shape<2>{8, 3});
    CHECK(b.addressable_shards()[0].offset == kax::shape<2>{0, static_cast<std::size_t>(6 * kax::process_index())});
    CHECK(blocks_match(b, g));
    CHECK(same(kax::to_host(b), g));
  }
}

TEST_CASE("a mesh with its devices in another order places the blocks by mesh position") {
  // Devices (0, 2, 1, 3) as a 2x2 mesh: rank 0 holds positions 0 and 2, so axis "x" lies within
  // each process and "y" spans the two.
  const auto all = kax::devices();
  const kax::Mesh mesh({2, 2}, {"x", "y"}, {all[0], all[2], all[1], all[3]});
  const auto r = static_cast<std::size_t>(kax::process_index());
  CHECK(mesh.local_positions() == std::vector<std::size_t>{r, r + 2});
  const kax::Array<float, 2> g = numbered(4, 6);
  const auto s = kax::device_put(g, kax::NamedSharding(mesh, kax::P("x", "y")));
  const auto shards = s.addressable_shards();
  REQUIRE(shards.size() == 2);
  CHECK(shards[0].device.id == static_cast<int>(2 * r));
  CHECK(shards[1].device.id == static_cast<int>(2 * r + 1));
  CHECK(shards[0].offset == kax::shape<2>{0, 3 * r});
  CHECK(shards[1].offset == kax::shape<2>{2, 3 * r});
  CHECK(blocks_match(s, g));
  CHECK(same(kax::to_host(s), g));
}
