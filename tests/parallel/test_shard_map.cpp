// kax::Mesh, kax::P, kax::NamedSharding, kax::ShardedArray and kax::shard_map on the devices this
// run was started with (KAX_HOST_DEVICES = 1, 2 or 4; the 2x2 mesh needs 4): JAX's block layout,
// resharding, the seed's shard_map examples (sharded matmul, contracted axis, attention),
// collectives over mesh axes, the kinds of arguments, and the errors, against naive loops here.
#define KAX_CHECK_REPLICATION 1  // the replication check also in release builds

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kax/kax.hpp"
#include "sharding_checks.hpp"

namespace {

using Catch::Matchers::Contains;
using kax::P;
using kax_ptest::contains;
using kax_ptest::gval;
using kax_ptest::idx;
using kax_ptest::make2;
using kax_ptest::mesh_2d;
using kax_ptest::require_array;
using kax_ptest::require_sharded;
using kax_ptest::devices_n;
using kax_ptest::thrown_message;

kax::Array<float, 2> global2(std::size_t r, std::size_t c) { return make2(r, c, gval); }

// The mesh position of the calling device program.
std::size_t position_here(std::size_t ny) {
  return static_cast<std::size_t>(kax::axis_index<"x">().value) * ny + static_cast<std::size_t>(kax::axis_index<"y">().value);
}

}  // namespace

TEST_CASE("a mesh lays its devices out row-major and prints like JAX", "[mesh]") {
  const std::size_t n = devices_n();
  const kax::Mesh m = kax::make_mesh({n}, {"x"});
  CHECK(m.shape() == std::vector<std::size_t>{n});
  CHECK(m.axis_names() == std::vector<std::string>{"x"});
  CHECK(m.size() == n);
  CHECK(m.axis_size("x") == n);
  CHECK(m.to_string() == "Mesh('x': " + std::to_string(n) + ")");
  for (std::size_t k = 0; k < n; ++k) {
    CHECK(m.devices()[k].id == static_cast<int>(k));
    CHECK(m.coords(k) == std::vector<std::size_t>{k});
    CHECK(m.local_positions()[k] == k);
  }
  CHECK_THROWS_AS(m.axis_size("q"), kax::axis_error);
  if (n < 4) {
    WARN("the 2x2 mesh needs 4 devices (KAX_HOST_DEVICES=4): skipped");
    return;
  }
  const kax::Mesh g = kax::make_mesh({2, 2}, {"x", "y"});
  CHECK(g.shape() == std::vector<std::size_t>{2, 2});
  CHECK(g.axis_names() == std::vector<std::string>{"x", "y"});
  CHECK(g.size() == 4);
  CHECK(g.to_string() == "Mesh('x': 2, 'y': 2)");
  const std::vector<std::vector<std::size_t>> coords{{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(g.coords(k) == coords[k]);
    CHECK(g.position(coords[k]) == k);
    CHECK(g.devices()[k] == kax::devices()[k]);
  }
}

TEST_CASE("make_mesh rejects too many devices, a name count mismatch and repeated names", "[mesh][errors]") {
  const std::size_t n = devices_n();
  const std::string many = thrown_message<kax::shape_error>([&] { (void)kax::make_mesh({n + 1}, {"x"}); });
  CHECK_THAT(many, Contains("needs " + std::to_string(n + 1) + " devices") && Contains(std::to_string(n) + " are available"));
  const std::string names = thrown_message<kax::shape_error>([] { (void)kax::make_mesh({1, 1}, {"x"}); });
  CHECK_THAT(names, Contains("2 axes but 1 names"));
  const std::string twice = thrown_message<kax::axis_error>([] { (void)kax::make_mesh({1, 1}, {"x", "x"}); });
  CHECK_THAT(twice, Contains("'x' is used twice"));
}

TEST_CASE("PartitionSpec drops trailing nones and prints like JAX; NamedSharding checks its axis names",
          "[mesh][spec]") {
  CHECK(P("x") == P("x", kax::none));
  CHECK(P("x", kax::none).size() == 2);  // kept as written, as JAX does
  CHECK(P(kax::none, kax::none) == P());
  CHECK_FALSE(P("x") == P(kax::none, "x"));
  CHECK(P("x").to_string() == "PartitionSpec('x',)");
  CHECK(P(kax::none, "x").to_string() == "PartitionSpec(None, 'x')");
  CHECK(P().to_string() == "PartitionSpec()");
  CHECK(P({"x", "y"}, "z").to_string() == "PartitionSpec(('x', 'y'), 'z')");
  // As JAX's repr(P(('x', 'y'), None)): the trailing None is printed, though it does not matter.
  CHECK(P({"x", "y"}, kax::none).to_string() == "PartitionSpec(('x', 'y'), None)");
  CHECK(P({"x", "y"}, kax::none) == P({"x", "y"}));

  const kax::Mesh m = kax::make_mesh({devices_n()}, {"x"});
  CHECK(kax::NamedSharding(m, P("x")).to_string() ==
        "NamedSharding(Mesh('x': " + std::to_string(devices_n()) + "), PartitionSpec('x',))");
  CHECK_THAT(thrown_message<kax::axis_error>([&] { kax::NamedSharding(m, P("z")); }), Contains("no axis 'z'"));
  CHECK_THAT(thrown_message<kax::axis_error>([&] { kax::NamedSharding(m, P("x", "x")); }),
             Contains("uses the mesh axis 'x' twice"));
  CHECK_THROWS_AS(kax::NamedSharding(m, P(kax::none, {"x", "x"})), kax::axis_error);
}

TEST_CASE("device_put splits an (8, 6) array over a 2x2 mesh into JAX's blocks for every kind of spec",
          "[sharding]") {
  if (devices_n() < 4) {
    WARN("needs 4 devices (KAX_HOST_DEVICES=4): skipped");
    return;
  }
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> g = global2(8, 6);
  auto want = [](const idx<2>& at) { return gval(at[0], at[1]); };
  struct layout {
    kax::PartitionSpec spec;
    kax::shape<2> block;
    std::function<kax::shape<2>(std::size_t, std::size_t)> offset;  // of the device at coords (x, y)
  };
  const std::vector<layout> layouts{
      {P("x", "y"), {4, 3}, [](std::size_t x, std::size_t y) { return kax::shape<2>{x * 4, y * 3}; }},
      {P({"x", "y"}), {2, 6}, [](std::size_t x, std::size_t y) { return kax::shape<2>{(x * 2 + y) * 2, 0}; }},
      {P({"y", "x"}), {2, 6}, [](std::size_t x, std::size_t y) { return kax::shape<2>{(y * 2 + x) * 2, 0}; }},
      {P(kax::none, "x"), {8, 3}, [](std::size_t x, std::size_t) { return kax::shape<2>{0, x * 3}; }},
      {P("y"), {4, 6}, [](std::size_t, std::size_t y) { return kax::shape<2>{y * 4, 0}; }},
      {P(), {8, 6}, [](std::size_t, std::size_t) { return kax::shape<2>{0, 0}; }},
  };
  for (const layout& l : layouts) {
    INFO(l.spec.to_string());
    const kax::NamedSharding s(mesh, l.spec);
    CHECK(s.block_shape(kax::shape<2>{8, 6}, "test") == l.block);
    const kax::ShardedArray<float, 2> a = kax::device_put(g, s);
    CHECK(a.extents() == kax::shape<2>{8, 6});
    CHECK(a.block_shape() == l.block);
    CHECK(a.sharding() == s);
    const auto shards = a.addressable_shards();
    REQUIRE(shards.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
      const auto c = mesh.coords(k);
      INFO("device " << k);
      CHECK(shards[k].device.id == static_cast<int>(k));
      CHECK(shards[k].offset == l.offset(c[0], c[1]));
      REQUIRE(shards[k].data.extents() == l.block);
      require_array(shards[k].data, l.offset(c[0], c[1]), want, 0);
    }
    require_array(kax::to_host(a), kax::shape<2>{}, want, 0);
  }
  // Replicas are equal blocks: P(none, "x") gives devices (x, 0) and (x, 1) the same columns.
  const auto r = kax::device_put(g, kax::NamedSharding(mesh, P(kax::none, "x")));
  CHECK(kax::to_vector(r.blocks()[0]) == kax::to_vector(r.blocks()[1]));
  CHECK(kax::to_vector(r.blocks()[2]) == kax::to_vector(r.blocks()[3]));
}

TEST_CASE("device_put over a 1-d mesh gives device k rows or columns block k", "[sharding]") {
  const std::size_t n = devices_n();
  const kax::Mesh mesh = kax::make_mesh({n}, {"x"});
  auto want = [](const idx<2>& at) { return gval(at[0], at[1]); };
  const auto rows = kax::device_put(global2(2 * n, 3), kax::NamedSharding(mesh, P("x")));
  const auto cols = kax::device_put(global2(3, 2 * n), kax::NamedSharding(mesh, P(kax::none, "x")));
  for (std::size_t k = 0; k < n; ++k) {
    CHECK(rows.addressable_shards()[k].offset == kax::shape<2>{2 * k, 0});
    CHECK(cols.addressable_shards()[k].offset == kax::shape<2>{0, 2 * k});
  }
  require_sharded(rows, {2 * n, 3}, want);
  require_sharded(cols, {3, 2 * n}, want);
}

TEST_CASE("an extent the mesh axes do not divide makes device_put throw shape_error naming the dimension",
          "[sharding][errors]") {
  const std::size_t n = devices_n();
  const kax::Mesh mesh = kax::make_mesh({n}, {"x"});
  // A spec longer than the array's rank is an error on any mesh.
  CHECK_THROWS_AS(kax::device_put(global2(n, 2), kax::NamedSharding(mesh, P(kax::none, kax::none, "x"))), kax::shape_error);
  if (n < 2) {
    WARN("the non-divisible cases need 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  const std::string line = thrown_message<kax::shape_error>(
      [&] { (void)kax::device_put(global2(n + 1, 2), kax::NamedSharding(mesh, P("x"))); });
  CHECK_THAT(line, Contains("dimension 0") && Contains("extent " + std::to_string(n + 1)) &&
                       Contains("'x' (size " + std::to_string(n) + ")"));
  if (n < 4) {
    WARN("the 2x2 mesh needs 4 devices (KAX_HOST_DEVICES=4): skipped");
    return;
  }
  const kax::Mesh grid = kax::make_mesh({2, 2}, {"x", "y"});
  const std::string msg = thrown_message<kax::shape_error>(
      [&] { (void)kax::device_put(global2(8, 5), kax::NamedSharding(grid, P(kax::none, "y"))); });
  CHECK_THAT(msg, Contains("dimension 1") && Contains("extent 5") && Contains("'y' (size 2)"));
  const std::string both = thrown_message<kax::shape_error>(
      [&] { (void)kax::device_put(global2(6, 2), kax::NamedSharding(grid, P({"x", "y"}))); });
  CHECK_THAT(both, Contains("dimension 0") && Contains("extent 6") && Contains("'x' (size 2) x 'y' (size 2) = 4"));
}

TEST_CASE("resharding a sharded array keeps its global values through a chain of specs", "[sharding][reshard]") {
  const kax::Mesh mesh = mesh_2d();
  auto want = [](const idx<2>& at) { return gval(at[0], at[1]); };
  kax::ShardedArray<float, 2> a = kax::device_put(global2(8, 6), kax::NamedSharding(mesh, P("x", "y")));
  for (const kax::PartitionSpec& spec : {P({"x", "y"}), P(kax::none, "x"), P(), P("y", "x"), P("x", "y")}) {
    INFO("to " << spec.to_string());
    const kax::NamedSharding s(mesh, spec);
    a = kax::device_put(a, s);
    CHECK(a.sharding() == s);
    CHECK(a.block_shape() == s.block_shape(kax::shape<2>{8, 6}, "test"));
    require_sharded(a, {8, 6}, want);
  }
  // To its own sharding: the same blocks, not copies.
  const auto same = kax::device_put(a, a.sharding());
  for (std::size_t k = 0; k < a.blocks().size(); ++k) CHECK(same.blocks()[k].data() == a.blocks()[k].data());
}

TEST_CASE("shard_map computes a matmul from row blocks of a and column blocks of b", "[shard_map][examples]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.shape()[0], ny = mesh.shape()[1];
  const auto a = global2(8, 4);
  const auto b = make2(4, 6, [](std::size_t i, std::size_t j) { return gval(i + 3, 2 * j); });
  auto mm = kax::shard_map([](const auto& x, const auto& y) { return kax::matmul(x, y); }, mesh,
                           kax::in_specs(P("x", kax::none), P(kax::none, "y")), kax::out_specs(P("x", "y")));
  const kax::ShardedArray<float, 2> c = mm(a, b);
  CHECK(c.block_shape() == kax::shape<2>{8 / nx, 6 / ny});
  require_sharded(c, {8, 6}, [](const idx<2>& at) {
    double s = 0;
    for (std::size_t k = 0; k < 4; ++k) s += gval(at[0], k) * gval(k + 3, 2 * at[1]);
    return s;
  }, 1e-6);  // halves times halves: exact in float
}

TEST_CASE("shard_map with the contracted axis sharded sums the partial products with psum over y",
          "[shard_map][examples]") {
  const kax::Mesh mesh = mesh_2d();
  const auto a = global2(8, 6);
  const auto b = make2(6, 4, [](std::size_t i, std::size_t j) { return gval(j + 1, i); });
  auto mm = kax::shard_map([](const auto& x, const auto& y) { return kax::psum<"y">(kax::matmul(x, y)); }, mesh,
                           kax::in_specs(P("x", "y"), P("y", kax::none)), kax::out_specs(P("x", kax::none)));
  const kax::ShardedArray<float, 2> c = mm(a, b);
  require_sharded(c, {8, 4}, [](const idx<2>& at) {
    double s = 0;
    for (std::size_t k = 0; k < 6; ++k) s += gval(at[0], k) * gval(at[1] + 1, k);
    return s;
  }, 1e-6);
}

TEST_CASE("shard_map runs attention on the batch split over both mesh axes", "[shard_map][examples]") {
  constexpr std::size_t B = 8, T = 5, D = 4;
  const kax::Mesh mesh = mesh_2d();
  std::vector<float> qv(B * T * D), kv(qv.size()), vv(qv.size());
  for (std::size_t i = 0; i < qv.size(); ++i) {
    qv[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
    kv[i] = static_cast<float>(std::cos(0.23 * static_cast<double>(i) + 1.0));
    vv[i] = static_cast<float>(0.01 * static_cast<double>(i % 17) - 0.08);
  }
  const kax::shape<3> ext{B, T, D};
  const auto q = kax::from(qv, ext), k = kax::from(kv, ext), v = kax::from(vv, ext);
  auto attention = [](const auto& qb, const auto& kb, const auto& vb) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(qb.extents()[2]));
    const auto scores = kax::einsum<"btd,bsd->bts">(qb, kb) * scale;
    return kax::einsum<"bts,bsd->btd">(kax::nn::softmax(scores), vb);
  };
  const auto spec = P({"x", "y"}, kax::none, kax::none);
  const kax::ShardedArray<float, 3> out =
      kax::shard_map(attention, mesh, kax::in_specs(spec, spec, spec), kax::out_specs(spec))(q, k, v);
  CHECK(out.block_shape() == kax::shape<3>{B / mesh.size(), T, D});
  // softmax(q k^T / sqrt(D)) v in double.
  std::vector<double> ref(B * T * D);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      std::vector<double> w(T);
      double top = -1e300, total = 0;
      for (std::size_t s = 0; s < T; ++s) {
        for (std::size_t d = 0; d < D; ++d) w[s] += double(qv[(b * T + t) * D + d]) * double(kv[(b * T + s) * D + d]);
        w[s] /= std::sqrt(double(D));
        top = std::max(top, w[s]);
      }
      for (double& x : w) total += (x = std::exp(x - top));
      for (std::size_t d = 0; d < D; ++d)
        for (std::size_t s = 0; s < T; ++s) ref[(b * T + t) * D + d] += w[s] / total * double(vv[(b * T + s) * D + d]);
    }
  // float32 scores, exp and sums over 5 and 4 terms: 1e-5 relative to 1 + |value|.
  require_sharded(out, ext, [&](const idx<3>& at) { return ref[(at[0] * T + at[1]) * D + at[2]]; }, 1e-5);
}

TEST_CASE("shard_map over a 1-d mesh normalizes row blocks by a psum of local sums", "[shard_map][collectives]") {
  const std::size_t n = devices_n();
  const kax::Mesh mesh = kax::make_mesh({n}, {"x"});
  const auto x = make2(3 * n, 2, [](std::size_t i, std::size_t j) { return 1.0 + static_cast<double>(i * 2 + j); });
  const double total = [&] {
    double s = 0;
    for (std::size_t i = 0; i < 6 * n; ++i) s += 1.0 + static_cast<double>(i);
    return s;
  }();
  const auto y = kax::shard_map([](const auto& a) { return a / kax::psum<"x">(kax::sum(a)); }, mesh,
                                kax::in_specs(P("x")), kax::out_specs(P("x")))(x);
  require_sharded(y, {3 * n, 2}, [&](const idx<2>& at) { return (1.0 + double(at[0] * 2 + at[1])) / total; }, 1e-6);
}

TEST_CASE("psum, pmean and pmax over one mesh axis combine only the devices that share the other coordinate",
          "[shard_map][collectives]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.shape()[0], ny = mesh.shape()[1];
  const auto g = global2(nx * 2, ny * 3);  // blocks (2, 3)
  auto over_x = [&](const idx<2>& at, auto op) {  // block of device (., y) at (i, j): over its x
    double r = gval(at[0], at[1]);
    for (std::size_t x = 1; x < nx; ++x) r = op(r, gval(x * 2 + at[0], at[1]));
    return r;
  };
  auto over_y = [&](const idx<2>& at, auto op) {  // rows of device (x, .), column j of its block: over its y
    double r = gval(at[0], at[1]);
    for (std::size_t y = 1; y < ny; ++y) r = op(r, gval(at[0], y * 3 + at[1]));
    return r;
  };
  const auto plus = [](double a, double b) { return a + b; };
  const auto larger = [](double a, double b) { return std::max(a, b); };
  const auto in = kax::in_specs(P("x", "y"));
  const auto psum_x = kax::shard_map([](const auto& a) { return kax::psum<"x">(a); }, mesh, in, kax::out_specs(P(kax::none, "y")))(g);
  require_sharded(psum_x, {2, ny * 3}, [&](const idx<2>& at) { return over_x(at, plus); });
  const auto pmax_x = kax::shard_map([](const auto& a) { return kax::pmax<"x">(a); }, mesh, in, kax::out_specs(P(kax::none, "y")))(g);
  require_sharded(pmax_x, {2, ny * 3}, [&](const idx<2>& at) { return over_x(at, larger); });
  const auto pmean_y = kax::shard_map([](const auto& a) { return kax::pmean<"y">(a); }, mesh, in, kax::out_specs(P("x")))(g);
  require_sharded(pmean_y, {nx * 2, 3}, [&](const idx<2>& at) { return over_y(at, plus) / double(ny); }, 1e-6);
  const auto psum_y = kax::shard_map([](const auto& a) { return kax::psum<"y">(a); }, mesh, in, kax::out_specs(P("x")))(g);
  require_sharded(psum_y, {nx * 2, 3}, [&](const idx<2>& at) { return over_y(at, plus); });
}

TEST_CASE("all_gather over y stacks or concatenates the blocks of the devices in a row of the mesh",
          "[shard_map][collectives]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.shape()[0], ny = mesh.shape()[1];
  const auto g = global2(nx * 2, ny * 3);  // blocks (2, 3)
  const auto stacked = kax::shard_map([](const auto& a) { return kax::all_gather<"y">(a); }, mesh,
                                      kax::in_specs(P("x", "y")), kax::out_specs(P(kax::none, "x")))(g);
  // Device (x, .) holds (ny, 2, 3): entry c is block (x, c).
  require_sharded(stacked, {ny, nx * 2, 3}, [](const idx<3>& at) { return gval(at[1], at[0] * 3 + at[2]); });
  const auto tiled = kax::shard_map([](const auto& a) { return kax::all_gather<"y">(a, kax::tiled); }, mesh,
                                    kax::in_specs(P("x", "y")), kax::out_specs(P("x")))(g);
  // Device (x, .) holds (ny * 2, 3): rows c * 2 + i are row i of block (x, c).
  require_sharded(tiled, {nx * ny * 2, 3}, [&](const idx<2>& at) {
    const std::size_t x = at[0] / (ny * 2), c = at[0] % (ny * 2) / 2, i = at[0] % 2;
    return gval(x * 2 + i, c * 3 + at[1]);
  });
}

TEST_CASE("axis_index over x and y are the device's mesh coordinates, returned as a tuple", "[shard_map][collectives]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.shape()[0], ny = mesh.shape()[1];
  const auto zero = kax::zeros<std::int32_t>(nx, ny);
  auto [ix, iy] = kax::shard_map(
      [](const auto& a) { return std::make_tuple(a + kax::axis_index<"x">(), a + kax::axis_index<"y">()); }, mesh,
      kax::in_specs(P("x", "y")), kax::out_specs(P("x", "y"), P("x", "y")))(zero);
  static_assert(std::is_same_v<decltype(ix), kax::ShardedArray<std::int32_t, 2>>);
  for (std::size_t k = 0; k < mesh.size(); ++k) {
    CHECK(kax::to_vector(ix.blocks()[k]) == std::vector<std::int32_t>{static_cast<std::int32_t>(mesh.coords(k)[0])});
    CHECK(kax::to_vector(iy.blocks()[k]) == std::vector<std::int32_t>{static_cast<std::int32_t>(mesh.coords(k)[1])});
  }
  require_sharded(ix, {nx, ny}, [](const idx<2>& at) { return double(at[0]); });
  require_sharded(iy, {nx, ny}, [](const idx<2>& at) { return double(at[1]); });
}

TEST_CASE("a sharded argument laid out as its in_spec is used as is; one laid out otherwise is resharded",
          "[shard_map][arguments]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t ny = mesh.shape()[1];
  const auto g = global2(8, 6);
  const auto as_spec = kax::device_put(g, kax::NamedSharding(mesh, P("x", "y")));
  const auto replicated = kax::device_put(g, kax::NamedSharding(mesh, P()));
  std::vector<const float*> seen(mesh.size(), nullptr);
  auto twice = [&seen, ny](const auto& a) {
    seen[position_here(ny)] = a.data();
    return a * 2.0f;
  };
  auto doubled = kax::shard_map(twice, mesh, kax::in_specs(P("x", "y")), kax::out_specs(P("x", "y")));
  auto want = [](const idx<2>& at) { return 2 * gval(at[0], at[1]); };
  require_sharded(doubled(as_spec), {8, 6}, want);
  for (std::size_t k = 0; k < mesh.size(); ++k) CHECK(seen[k] == as_spec.blocks()[k].data());
  require_sharded(doubled(replicated), {8, 6}, want);
  CHECK(replicated.sharding().spec() == P());  // the argument itself is unchanged
  require_sharded(replicated, {8, 6}, [](const idx<2>& at) { return gval(at[0], at[1]); });
}

TEST_CASE("shard_map slices an expression argument lazily and passes a scalar argument with spec P()",
          "[shard_map][arguments]") {
  const kax::Mesh mesh = mesh_2d();
  const auto g = global2(8, 6);
  std::atomic<int> arrays{0}, calls{0};
  auto f = [&](const auto& e, float s) {
    ++calls;
    if (std::is_same_v<std::remove_cvref_t<decltype(e)>, kax::Array<float, 2>>) ++arrays;
    return e + s;
  };
  const auto y = kax::shard_map(f, mesh, kax::in_specs(P("x", "y"), P()), kax::out_specs(P("x", "y")))(g * 2.0f, 0.5f);
  require_sharded(y, {8, 6}, [](const idx<2>& at) { return 2 * gval(at[0], at[1]) + 0.5; });
  CHECK(calls == static_cast<int>(mesh.size()));
  CHECK(arrays == 0);  // each device got a slice expression of g * 2, not an evaluated block
  const std::string msg = thrown_message<kax::shape_error>(
      [&] { (void)kax::shard_map(f, mesh, kax::in_specs(P("x", "y"), P("x")), kax::out_specs(P("x", "y")))(g, 0.5f); });
  CHECK_THAT(msg, Contains("scalar"));
}

TEST_CASE("shard_map returns a tuple of sharded arrays laid out by one out_spec each", "[shard_map][arguments]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t ny = mesh.shape()[1];
  auto [plus, summed] = kax::shard_map([](const auto& a) { return std::make_tuple(a + 1.0f, kax::psum<"y">(a)); }, mesh,
                                       kax::in_specs(P("x", "y")), kax::out_specs(P("x", "y"), P("x")))(global2(8, 6));
  require_sharded(plus, {8, 6}, [](const idx<2>& at) { return gval(at[0], at[1]) + 1; });
  require_sharded(summed, {8, 6 / ny}, [&](const idx<2>& at) {
    double s = 0;
    for (std::size_t y = 0; y < ny; ++y) s += gval(at[0], y * (6 / ny) + at[1]);
    return s;
  });
}

TEST_CASE("shard_map places each device's result where out_specs puts that device, not where its input came from",
          "[shard_map][arguments]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.shape()[0], ny = mesh.shape()[1];
  const std::size_t bx = 8 / nx, by = 6 / ny;
  // Device (x, y) gets block (x, y) of g and its result goes to block row y, block column x.
  const auto moved = kax::shard_map([](const auto& a) { return a * 1.0f; }, mesh, kax::in_specs(P("x", "y")),
                                    kax::out_specs(P("y", "x")))(global2(8, 6));
  require_sharded(moved, {bx * ny, by * nx}, [&](const idx<2>& at) {
    const std::size_t y = at[0] / bx, x = at[1] / by;
    return gval(x * bx + at[0] % bx, y * by + at[1] % by);
  });
}

TEST_CASE("an output replicated over a mesh axis whose blocks differ throws replication_error naming the axis",
          "[shard_map][errors]") {
  const std::size_t n = devices_n();
  if (n < 2) {
    WARN("needs 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  const kax::Mesh mesh = mesh_2d();
  auto same = [](const auto& a) { return a * 1.0f; };
  const std::string msg = thrown_message<kax::replication_error>(
      [&] { (void)kax::shard_map(same, mesh, kax::in_specs(P("x", "y")), kax::out_specs(P("x")))(global2(8, 6)); });
  CHECK_THAT(msg, Contains("replicated over mesh axis 'y'"));
  const kax::Mesh line = kax::make_mesh({n}, {"x"});
  const std::string all = thrown_message<kax::replication_error>(
      [&] { (void)kax::shard_map(same, line, kax::in_specs(P("x")), kax::out_specs(P()))(global2(2 * n, 3)); });
  CHECK_THAT(all, Contains("'x'"));
  // Equal replicas pass the check.
  const auto ok = kax::shard_map([](const auto& a) { return kax::psum<"x">(a); }, line, kax::in_specs(P("x")),
                                 kax::out_specs(P()))(global2(2 * n, 3));
  CHECK(ok.extents() == kax::shape<2>{2, 3});
}

TEST_CASE("shard_map inside the device program of a pmap or of another shard_map throws kax::error",
          "[shard_map][errors]") {
  const std::size_t n = devices_n();
  const kax::Mesh mesh = kax::make_mesh({n}, {"x"});
  const auto small = global2(2, 2);
  const auto inner = kax::shard_map([](const auto& a) { return a * 1.0f; }, mesh, kax::in_specs(P()), kax::out_specs(P()));
  auto calls_inner = [&](const auto& a) {
    (void)inner(small);
    return a * 1.0f;
  };
  const std::string in_pmap = thrown_message<kax::error>([&] { (void)kax::pmap<"i">(calls_inner)(global2(n, 2)); });
  CHECK_THAT(in_pmap, Contains("nested"));
  const std::string in_shard_map = thrown_message<kax::error>([&] {
    (void)kax::shard_map(calls_inner, mesh, kax::in_specs(P("x")), kax::out_specs(P("x")))(global2(n, 2));
  });
  CHECK_THAT(in_shard_map, Contains("nested"));
}

TEST_CASE("an argument the mesh does not divide throws shape_error before any device program runs",
          "[shard_map][errors]") {
  if (devices_n() < 2) {
    WARN("needs 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  const kax::Mesh mesh = mesh_2d();
  std::atomic<int> calls{0};
  auto f = [&](const auto& a, const auto& b) {
    ++calls;
    return kax::matmul(a, b);
  };
  const std::string msg = thrown_message<kax::shape_error>([&] {
    (void)kax::shard_map(f, mesh, kax::in_specs(P(kax::none, "y"), P("y")), kax::out_specs(P()))(global2(4, 6), global2(5, 2));
  });
  CHECK_THAT(msg, Contains("argument 1") && Contains("dimension 0") && Contains("extent 5"));
  CHECK(calls == 0);
}

TEST_CASE("a collective over a name the mesh does not have throws kax::error naming the unbound axis",
          "[shard_map][errors]") {
  const kax::Mesh mesh = mesh_2d();
  const std::string msg = thrown_message<kax::error>([&] {
    (void)kax::shard_map([](const auto& a) { return kax::psum<"z">(a); }, mesh, kax::in_specs(P("x", "y")),
                         kax::out_specs(P("x", "y")))(global2(8, 6));
  });
  CHECK_THAT(msg, Contains("unbound axis name 'z'") && Contains("'x', 'y'"));
  CHECK_THROWS_AS(kax::shard_map([](const auto& a) { return a; }, mesh, kax::in_specs(P("z")), kax::out_specs(P())),
                  kax::axis_error);
}

TEST_CASE("a sharded argument over another mesh throws shape_error naming both meshes", "[shard_map][errors]") {
  const std::size_t n = devices_n();
  const kax::Mesh mesh = kax::make_mesh({n}, {"x"});
  const kax::Mesh other = kax::make_mesh({n}, {"y"});
  const auto a = kax::device_put(global2(2 * n, 2), kax::NamedSharding(other, P("y")));
  const std::string msg = thrown_message<kax::shape_error>([&] {
    (void)kax::shard_map([](const auto& b) { return b * 1.0f; }, mesh, kax::in_specs(P("x")), kax::out_specs(P("x")))(a);
  });
  CHECK_THAT(msg, Contains("Mesh('y': " + std::to_string(n) + ")") && Contains("Mesh('x': " + std::to_string(n) + ")"));
}
