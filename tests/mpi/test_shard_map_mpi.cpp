// shard_map across MPI processes: run as `mpirun -np 2` with KAX_HOST_DEVICES=2.  On the mesh
// make_mesh({2, 2}, {"x", "y"}) rank 0 holds positions 0, 1 and rank 1 positions 2, 3, so the groups
// along "x" span the processes (MPI) and those along "y" lie within one (shared memory); the mesh
// {"y", "x"} swaps the roles.  Every rank builds the same global inputs from a formula and checks
// the results against naive loops written here.
#define KAX_CHECK_REPLICATION 1

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kax/kax.hpp"
#include "sharding_data.hpp"
#include "kax/nn.hpp"

namespace {

using kax::none;
using kax::P;

using namespace kax_mpitest;

}  // namespace

TEST_CASE("sharded matmul: rows over 'x' times columns over 'y' gives blocks over both") {
  const kax::Array<float, 2> a = small_ints(8, 6, 1), b = small_ints(6, 10, 2);
  const kax::Array<float, 2> want = naive_matmul(a, b);
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    auto mm = kax::shard_map([](auto x, auto y) { return kax::matmul(x, y); }, mesh,
                             kax::in_specs(P("x", none), P(none, "y")), kax::out_specs(P("x", "y")));
    const kax::ShardedArray<float, 2> c = mm(a, b);
    CHECK(c.block_shape() == kax::shape<2>{4, 5});
    CHECK(c.sharding().spec() == P("x", "y"));
    check_result(c, want);
  }
}

TEST_CASE("matmul with psum over a contracted dimension split over 'x' or over 'y'") {
  const kax::Array<float, 2> a = small_ints(8, 12, 3), b = small_ints(12, 6, 4);
  const kax::Array<float, 2> want = naive_matmul(a, b);
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    auto over_x = kax::shard_map([](auto x, auto y) { return kax::psum<"x">(kax::matmul(x, y)); }, mesh,
                                 kax::in_specs(P(none, "x"), P("x", none)), kax::out_specs(P()));
    auto over_y = kax::shard_map([](auto x, auto y) { return kax::psum<"y">(kax::matmul(x, y)); }, mesh,
                                 kax::in_specs(P(none, "y"), P("y", none)), kax::out_specs(P()));
    check_result(over_x(a, b), want);
    check_result(over_y(a, b), want);
    // shard_map.hpp's example: both dimensions of a split, the partial products summed over "y".
    auto rows_x = kax::shard_map([](auto x, auto y) { return kax::psum<"y">(kax::matmul(x, y)); }, mesh,
                                 kax::in_specs(P("x", "y"), P("y", none)), kax::out_specs(P("x", none)));
    auto rows_y = kax::shard_map([](auto x, auto y) { return kax::psum<"x">(kax::matmul(x, y)); }, mesh,
                                 kax::in_specs(P("y", "x"), P("x", none)), kax::out_specs(P("y", none)));
    const auto c = rows_x(a, b);
    CHECK(c.block_shape() == kax::shape<2>{4, 6});
    check_result(c, want);
    check_result(rows_y(a, b), want);
  }
}

TEST_CASE("sharded attention: the batch split over both mesh axes") {
  const attention_case ac;
  const std::size_t t = ac.t, d = ac.d;
  const float scale = ac.scale();
  const kax::Array<float, 3>& q = ac.q;
  const kax::Array<float, 3>& k = ac.k;
  const kax::Array<float, 3>& v = ac.v;
  const kax::Array<double, 3> want = ac.want();
  auto attention = [scale](auto q, auto k, auto v) {
    auto scores = kax::einsum<"...qd,...kd->...qk">(q, k) * scale;
    return kax::matmul(kax::nn::softmax(scores, -1), v);
  };
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    const auto spec = P({"x", "y"}, none, none);
    auto f = kax::shard_map(attention, mesh, kax::in_specs(spec, spec, spec), kax::out_specs(spec));
    const kax::ShardedArray<float, 3> out = f(q, k, v);
    CHECK(out.block_shape() == kax::shape<3>{2, t, d});
    check_result(out, want, 1e-5);
  }
  auto line = kax::shard_map(attention, kax::make_mesh({4}, {"x"}),
                             kax::in_specs(P("x"), P("x"), P("x")), kax::out_specs(P("x")));
  check_result(line(q, k, v), want, 1e-5);
}

TEST_CASE("collectives over a 2x2 mesh combine the devices along one axis") {
  // X (4, 6) as P("x", "y"): the device at coordinates (cx, cy) holds X[2cx:2cx+2, 3cy:3cy+3].
  const kax::Array<float, 2> x = numbered(4, 6);
  auto at = [&](std::size_t cx, std::size_t cy, std::size_t i, std::size_t j) { return x(2 * cx + i, 3 * cy + j); };
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    auto sums = kax::shard_map(
        [](auto v) {
          return std::make_tuple(kax::psum<"x">(v), kax::psum<"y">(v), kax::pmax<"x">(v), kax::pmin<"y">(v),
                                 kax::pmean<"x">(v));
        },
        mesh, kax::in_specs(P("x", "y")), kax::out_specs(P(none, "y"), P("x"), P(none, "y"), P("x"), P(none, "y")));
    const auto [sx, sy, hx, ly, mx] = sums(x);
    kax::Array<float, 2> want_sx(2, 6), want_hx(2, 6), want_mx(2, 6), want_sy(4, 3), want_ly(4, 3);
    for (std::size_t c = 0; c < 2; ++c)
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j) {
          // along "x": block column c; along "y": block row c
          want_sx(i, 3 * c + j) = at(0, c, i, j) + at(1, c, i, j);
          want_hx(i, 3 * c + j) = std::max(at(0, c, i, j), at(1, c, i, j));
          want_mx(i, 3 * c + j) = (at(0, c, i, j) + at(1, c, i, j)) / 2;
          want_sy(2 * c + i, j) = at(c, 0, i, j) + at(c, 1, i, j);
          want_ly(2 * c + i, j) = std::min(at(c, 0, i, j), at(c, 1, i, j));
        }
    check_result(sx, want_sx);
    check_result(sy, want_sy);
    check_result(hx, want_hx);
    check_result(ly, want_ly);
    check_result(mx, want_mx);

    auto gathers = kax::shard_map(
        [](auto v) {
          return std::make_tuple(kax::all_gather<"x">(v), kax::all_gather<"y">(v, kax::tiled),
                                 v * 0.0f + kax::axis_index<"x">() * 10 + kax::axis_index<"y">());
        },
        mesh, kax::in_specs(P("x", "y")), kax::out_specs(P(none, none, "y"), P("x"), P("x", "y")));
    const auto [gx, gy, idx] = gathers(x);
    kax::Array<float, 3> want_gx(2, 2, 6);
    kax::Array<float, 2> want_gy(8, 3), want_idx(4, 6);
    for (std::size_t c = 0; c < 2; ++c)
      for (std::size_t g = 0; g < 2; ++g)
        for (std::size_t i = 0; i < 2; ++i)
          for (std::size_t j = 0; j < 3; ++j) {
            want_gx(g, i, 3 * c + j) = at(g, c, i, j);      // stacked blocks of column c
            want_gy(4 * c + 2 * g + i, j) = at(c, g, i, j);  // row c's blocks one above the other
            want_idx(2 * c + i, 3 * g + j) = static_cast<float>(10 * c + g);
          }
    check_result(gx, want_gx);
    check_result(gy, want_gy);
    check_result(idx, want_idx);

    auto moves = kax::shard_map(
        [](auto v) {
          return std::make_tuple(kax::ppermute<"x">(v, {{0, 1}, {1, 0}}), kax::ppermute<"y">(v, {{1, 0}}),
                                 kax::pbroadcast<"x">(v, 1), kax::pbroadcast<"y">(v, 1));
        },
        mesh, kax::in_specs(P("x", "y")), kax::out_specs(P("x", "y"), P("x", "y"), P(none, "y"), P("x")));
    const auto [px, py, bx, by] = moves(x);
    kax::Array<float, 2> want_px(4, 6), want_py(4, 6), want_bx(2, 6), want_by(4, 3);
    for (std::size_t cx = 0; cx < 2; ++cx)
      for (std::size_t cy = 0; cy < 2; ++cy)
        for (std::size_t i = 0; i < 2; ++i)
          for (std::size_t j = 0; j < 3; ++j) {
            want_px(2 * cx + i, 3 * cy + j) = at(1 - cx, cy, i, j);
            want_py(2 * cx + i, 3 * cy + j) = cy == 0 ? at(cx, 1, i, j) : 0.0f;
            want_bx(i, 3 * cy + j) = at(1, cy, i, j);
            want_by(2 * cx + i, j) = at(cx, 1, i, j);
          }
    check_result(px, want_px);
    check_result(py, want_py);
    check_result(bx, want_bx);
    check_result(by, want_by);
  }
}

TEST_CASE("collectives over a 1-d mesh of both processes' devices") {
  // X (8, 3) as P("x"): device k holds rows 2k, 2k + 1.
  const kax::Mesh mesh = kax::make_mesh({4}, {"x"});
  const kax::Array<float, 2> x = numbered(8, 3);
  auto f = kax::shard_map(
      [](auto v) {
        return std::make_tuple(kax::psum<"x">(v), kax::pmax<"x">(v), kax::all_gather<"x">(v, kax::tiled),
                               v * 0.0f + kax::axis_index<"x">(), kax::ppermute<"x">(v, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}),
                               kax::pbroadcast<"x">(v, 2), v / kax::psum<"x">(kax::sum(v)));
      },
      mesh, kax::in_specs(P("x")), kax::out_specs(P(), P(), P(), P("x"), P("x"), P(), P("x")));
  const auto [s, hi, gathered, idx, ring, bcast, normalized] = f(x);
  kax::Array<float, 2> want_s(2, 3), want_hi(2, 3), want_idx(8, 3), want_ring(8, 3), want_b(2, 3), want_n(8, 3);
  double total = 0;
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t j = 0; j < 3; ++j) total += x(r, j);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      want_s(i, j) = x(i, j) + x(2 + i, j) + x(4 + i, j) + x(6 + i, j);
      want_hi(i, j) = x(6 + i, j);
      want_b(i, j) = x(4 + i, j);
      for (std::size_t k = 0; k < 4; ++k) {
        want_idx(2 * k + i, j) = static_cast<float>(k);
        want_ring(2 * k + i, j) = x(2 * ((k + 3) % 4) + i, j);
        want_n(2 * k + i, j) = static_cast<float>(x(2 * k + i, j) / total);
      }
    }
  check_result(s, want_s);
  check_result(hi, want_hi);
  check_result(gathered, x);
  check_result(idx, want_idx);
  check_result(ring, want_ring);
  check_result(bcast, want_b);
  check_result(normalized, want_n, 1e-7);
}

TEST_CASE("scalar and int64 outputs, and meshes with axes of size 1") {
  const kax::Array<float, 2> x = numbered(4, 6);
  double total = 0;
  for (std::size_t i = 0; i < x.size(); ++i) total += x.data()[i];
  auto total_of = kax::shard_map([](auto v) { return kax::psum<"y">(kax::psum<"x">(kax::sum(v))); },
                                 kax::make_mesh({2, 2}, {"x", "y"}), kax::in_specs(P("x", "y")), kax::out_specs(P()));
  const kax::ShardedArray<float, 0> t = total_of(x);
  CHECK(kax::to_host(t)() == static_cast<float>(total));
  CHECK(t.blocks()[1]() == static_cast<float>(total));

  kax::Array<std::int64_t, 2> big(4, 6);
  for (std::size_t i = 0; i < big.size(); ++i) big.data()[i] = static_cast<std::int64_t>(i) * 1000000000LL;
  auto sum64 = kax::shard_map([](auto v) { return kax::psum<"x">(v); }, kax::make_mesh({2, 2}, {"x", "y"}),
                              kax::in_specs(P("x", "y")), kax::out_specs(P(none, "y")));
  kax::Array<std::int64_t, 2> want64(2, 6);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 6; ++j) want64(i, j) = big(i, j) + big(2 + i, j);
  check_result(sum64(big), want64);

  // (2, 1, 2): the groups along "z" are single devices.
  auto f = kax::shard_map(
      [](auto v) { return std::make_tuple(kax::psum<"z">(v), kax::psum<"x">(v) + kax::axis_index<"z">()); },
      kax::make_mesh({2, 1, 2}, {"x", "z", "y"}), kax::in_specs(P("x", "y")),
      kax::out_specs(P({"x", "z"}, "y"), P("z", "y")));
  const auto [same_x, sum_x] = f(x);
  kax::Array<float, 2> want_sum(2, 6);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 6; ++j) want_sum(i, j) = x(i, j) + x(2 + i, j);
  check_result(same_x, x);
  check_result(sum_x, want_sum);
  // (1, 4): "b" spans both processes with two devices each.
  auto g = kax::shard_map([](auto v) { return kax::psum<"b">(v) + kax::psum<"a">(v) * 0.0f; },
                          kax::make_mesh({1, 4}, {"a", "b"}), kax::in_specs(P("b")), kax::out_specs(P()));
  const kax::Array<float, 2> y = numbered(8, 3);
  kax::Array<float, 2> want_b(2, 3);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) want_b(i, j) = y(i, j) + y(2 + i, j) + y(4 + i, j) + y(6 + i, j);
  check_result(g(y), want_b);
}

TEST_CASE("shard_map takes sharded arrays, lazy expressions and scalars as arguments") {
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> x = numbered(4, 6);
  kax::Array<float, 2> want(4, 6);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 6; ++j) want(i, j) = 2 * x(i, j) + 1;
  auto f = kax::shard_map([](auto v, auto c) { return v * 2.0f + c; }, mesh, kax::in_specs(P("x", "y"), P()),
                          kax::out_specs(P("x", "y")));
  SECTION("a sharded array laid out as the spec asks") {
    check_result(f(kax::device_put(x, kax::NamedSharding(mesh, P("x", "y"))), 1.0f), want);
  }
  SECTION("a sharded array with another layout is resharded first") {
    check_result(f(kax::device_put(x, kax::NamedSharding(mesh, P({"y", "x"}))), 1.0f), want);
  }
  SECTION("a lazy expression is sliced per device") {
    check_result(f(x + 0.0f, 1.0f), want);
  }
  SECTION("the output of one shard_map feeds the next") {
    auto g = kax::shard_map([](auto v) { return kax::psum<"x">(v); }, mesh, kax::in_specs(P("x", "y")),
                            kax::out_specs(P(none, "y")));
    kax::Array<float, 2> want_sum(2, 6);
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 6; ++j) want_sum(i, j) = want(i, j) + want(2 + i, j);
    check_result(g(f(x, 1.0f)), want_sum);
  }
}

TEST_CASE("shard_map errors under MPI are raised on every process, which stay in step") {
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> x = numbered(4, 6);
  // Blocks differ along "y", which lies within each process: every process sees its two replicas disagree.
  auto unreduced = kax::shard_map([](auto v) { return v * 1.0f; }, mesh, kax::in_specs(P("x", "y")),
                                  kax::out_specs(P("x")));
  CHECK_THROWS_AS(unreduced(x), kax::replication_error);
  auto f = kax::shard_map([](auto v) { return kax::psum<"x">(v); }, mesh, kax::in_specs(P("x", "y")),
                          kax::out_specs(P(none, "y")));
  CHECK_THROWS_AS(f(numbered(3, 6)), kax::shape_error);
  CHECK_THROWS_WITH(f(numbered(4, 5)), Catch::Contains("not divisible"));
  // A 1-d mesh whose devices alternate between the processes cannot form its group.
  const auto all = kax::devices();
  const kax::Mesh alternating({4}, {"x"}, {all[0], all[2], all[1], all[3]});
  auto g = kax::shard_map([](auto v) { return kax::psum<"x">(v); }, alternating, kax::in_specs(P("x")),
                          kax::out_specs(P()));
  CHECK_THROWS_WITH(g(numbered(8, 3)), Catch::Contains("alternate between processes"));
  // Still in step: a collective across the processes works.
  kax::Array<float, 2> want(2, 6);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 6; ++j) want(i, j) = x(i, j) + x(2 + i, j);
  check_result(f(x), want);
}

TEST_CASE("replicas on different processes are compared, and bool values combine across processes") {
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> x = numbered(4, 6);
  // Blocks differ along "x", which crosses the processes: the hashes of the replicas disagree.
  auto unreduced = kax::shard_map([](auto v) { return v * 1.0f; }, mesh, kax::in_specs(P("x", "y")),
                                  kax::out_specs(P(none, "y")));
  CHECK_THROWS_WITH(unreduced(x), Catch::Contains("'x'") && Catch::Contains("hashes differ"));
  // pmax/pmin of bool over "x" (across the processes) are a logical or / and.
  auto any_all = kax::shard_map([](auto v) { return std::make_tuple(kax::pmax<"x">(v > 101.5f), kax::pmin<"x">(v > 101.5f)); },
                                mesh, kax::in_specs(P("x", "y")), kax::out_specs(P(none, "y"), P(none, "y")));
  const auto [any, all] = any_all(x);
  const auto any_h = kax::to_host(any);
  const auto all_h = kax::to_host(all);
  REQUIRE(any_h.extents() == kax::shape<2>{2, 6});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 6; ++j) {
      CHECK(any_h(i, j) == (x(i, j) > 101.5f || x(2 + i, j) > 101.5f));
      CHECK(all_h(i, j) == (x(i, j) > 101.5f && x(2 + i, j) > 101.5f));
    }
}
