// kax::jit with shardings across MPI processes: run as `mpirun -np 2` with KAX_HOST_DEVICES=2.  On
// make_mesh({2, 2}, {"x", "y"}) rank 0 holds positions 0, 1 and rank 1 positions 2, 3, so the
// groups along "x" span the processes (MPI) and those along "y" lie within one; the mesh
// {"y", "x"} and the mesh of devices (0, 2, 1, 3) swap the roles.  Every rank builds the same
// global inputs from a formula and checks the results (its blocks and the gathered global array)
// against naive loops written here.
#define KAX_CHECK_REPLICATION 1  // as in the other files of this loop (jit itself does not check replicas)

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "kax/kax.hpp"
#include "sharding_data.hpp"

namespace {

using namespace kax_mpitest;

using kax::none;
using kax::P;

// The product in double (the jit tests compare float results with a tolerance).
kax::Array<double, 2> naive_matmul_double(const kax::Array<float, 2>& a, const kax::Array<float, 2>& b) {
  const auto m = a.extents()[0], k = a.extents()[1], n = b.extents()[1];
  kax::Array<double, 2> c(m, n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t l = 0; l < k; ++l) acc += static_cast<double>(a(i, l)) * static_cast<double>(b(l, j));
      c(i, j) = acc;
    }
  return c;
}

// A jit result: the layout, this process's two blocks, and check_result's checks.
template <class T, std::size_t R, class G>
void check_result(const kax::ShardedArray<T, R>& s, const kax::PartitionSpec& spec, const G& want, double tol = 0) {
  INFO("result spec " << s.sharding().spec().to_string());
  CHECK(s.sharding().spec() == spec);
  CHECK(s.blocks().size() == 2);
  kax_mpitest::check_result(s, want, tol);
}

kax::NamedSharding ns(const kax::Mesh& m, const kax::PartitionSpec& p) { return kax::NamedSharding(m, p); }

}  // namespace

TEST_CASE("jit over 2 processes: rows over 'x' times columns over 'y' needs no communication") {
  REQUIRE(kax::process_count() == 2);
  REQUIRE(kax::device_count() == 4);
  const kax::Array<float, 2> a = small_ints(8, 6, 1), b = small_ints(6, 10, 2);
  const kax::Array<double, 2> want = naive_matmul_double(a, b);
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    auto mm = kax::jit([](auto x, auto y) { return kax::matmul(x, y); },
                       kax::in_shardings(ns(mesh, P("x", none)), ns(mesh, P(none, "y"))),
                       kax::out_shardings(ns(mesh, P("x", "y"))));
    const kax::ShardedArray<float, 2> c = mm(a, b);
    CHECK(c.block_shape() == kax::shape<2>{4, 5});
    check_result(c, P("x", "y"), want);
    CHECK(mm.explain(a, b) == "no communication\n");
  }
}

TEST_CASE("jit over 2 processes: a contracted dimension split over 'y' gives one psum over 'y'") {
  const kax::Array<float, 2> a = small_ints(8, 12, 3), b = small_ints(12, 6, 4);
  const kax::Array<double, 2> want = naive_matmul_double(a, b);
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    auto mm = kax::jit([](auto x, auto y) { return kax::matmul(x, y); },
                       kax::in_shardings(ns(mesh, P("x", "y")), ns(mesh, P("y", none))),
                       kax::out_shardings(ns(mesh, P("x", none))));
    check_result(mm(a, b), P("x"), want);
    CHECK(mm.explain(a, b) == "kax::jit (psum over 'y') of float32(4, 6)\n");
    // From sharded arguments without in_shardings: the same program.
    const auto sa = kax::device_put(a, ns(mesh, P("x", "y")));
    const auto sb = kax::device_put(b, ns(mesh, P("y", none)));
    auto natural = kax::jit([](auto x, auto y) { return kax::matmul(x, y); });
    check_result(natural(sa, sb), P("x"), want);
  }
}

TEST_CASE("jit over 2 processes: matmul + bias + relu keeps the epilogue local") {
  const kax::Array<float, 2> a = small_ints(8, 4, 5), w = small_ints(4, 12, 6);
  kax::Array<float, 1> bias(12);
  for (std::size_t j = 0; j < 12; ++j) bias(j) = static_cast<float>(static_cast<int>(j % 5) - 2);
  const kax::Array<double, 2> prod = naive_matmul_double(a, w);
  kax::Array<double, 2> want(8, 12);
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 12; ++j) want(i, j) = std::max(prod(i, j) + static_cast<double>(bias(j)), 0.0);
  auto layer = [](auto x, auto y, auto c) { return kax::maximum(kax::matmul(x, y) + c, 0.0f); };
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    auto local = kax::jit(layer, kax::in_shardings(ns(mesh, P("x", none)), ns(mesh, P(none, "y")), ns(mesh, P())),
                          kax::out_shardings(ns(mesh, P("x", "y"))));
    check_result(local(a, w, bias), P("x", "y"), want);
    CHECK(local.explain(a, w, bias) == "no communication\n");
    auto summed = kax::jit(layer, kax::in_shardings(ns(mesh, P("x", "y")), ns(mesh, P("y", none)), ns(mesh, P())),
                           kax::out_shardings(ns(mesh, P("x", none))));
    check_result(summed(a, w, bias), P("x"), want);
    CHECK(summed.explain(a, w, bias) == "kax::jit (psum over 'y') of float32(4, 12)\n");
  }
}

TEST_CASE("jit over 2 processes: reductions over an axis split across the processes") {
  // On make_mesh({2, 2}, {"x", "y"}) dimension 0 of P("x", "y") is split across the processes.
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> x = small_ints(8, 6, 7);
  const auto a = kax::device_put(x, ns(mesh, P("x", "y")));
  kax::Array<double, 1> sum0(6), max0(6), mean1(8);
  double total = 0;
  for (std::size_t j = 0; j < 6; ++j) {
    sum0(j) = 0;
    max0(j) = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < 8; ++i) {
      sum0(j) += x(i, j);
      max0(j) = std::max(max0(j), static_cast<double>(x(i, j)));
    }
    total += sum0(j);
  }
  for (std::size_t i = 0; i < 8; ++i) {
    mean1(i) = 0;
    for (std::size_t j = 0; j < 6; ++j) mean1(i) += x(i, j) / 6.0;
  }
  auto s0 = kax::jit([](auto v) { return kax::sum(v, 0); });
  check_result(s0(a), P("y"), sum0);
  CHECK(s0.explain(a) == "kax::jit (psum over 'x') of float32(3,)\n");
  auto m0 = kax::jit([](auto v) { return kax::max(v, 0); });
  check_result(m0(a), P("y"), max0);
  CHECK(m0.explain(a) == "kax::jit (pmax over 'x') of float32(3,)\n");
  auto mean = kax::jit([](auto v) { return kax::mean(v, 1); });
  check_result(mean(a), P("x"), mean1, 1e-5);
  CHECK(mean.explain(a) == "kax::jit (psum over 'y') of float32(4,)\n");
  auto all = kax::jit([](auto v) { return kax::sum(v); });
  kax::Array<double, 0> want_total = kax::full<double>(kax::shape<0>{}, total);
  check_result(all(a), P(), want_total);
  CHECK(all.explain(a) == "kax::jit (psum over 'x') of float32()\nkax::jit (psum over 'y') of float32()\n");
  // Split over both axes, major across the processes.
  const auto both = kax::device_put(x, ns(mesh, P({"x", "y"})));
  check_result(s0(both), P(), sum0);
  // prod cannot combine partial results: the dimension is gathered across the processes first.
  auto p0 = kax::jit([](auto v) { return kax::prod(v * 0.25f + 1.5f, 0); });
  kax::Array<double, 1> prod0(6);
  for (std::size_t j = 0; j < 6; ++j) {
    prod0(j) = 1;
    for (std::size_t i = 0; i < 8; ++i) prod0(j) *= x(i, j) * 0.25 + 1.5;
  }
  double largest = 1;
  for (std::size_t j = 0; j < 6; ++j) largest = std::max(largest, std::abs(prod0(j)));
  check_result(p0(a), P("y"), prod0, 1e-5 * largest);
  CHECK(p0.explain(a) == "kax::jit (all_gather over 'x' to reshard) of float32(4, 3)\n");
}

TEST_CASE("jit over 2 processes: attention with the batch split over both mesh axes") {
  const attention_case ac;
  const float scale = ac.scale();
  const kax::Array<float, 3>& q = ac.q;
  const kax::Array<float, 3>& k = ac.k;
  const kax::Array<float, 3>& v = ac.v;
  const kax::Array<double, 3> want = ac.want();
  auto attention = [scale](auto qq, auto kk, auto vv) {
    auto p = kax::nn::softmax(kax::einsum<"btd,bsd->bts">(qq, kk) * scale, -1);
    return kax::einsum<"bts,bsd->btd">(p, vv);
  };
  for (const kax::Mesh& mesh : square_meshes()) {
    INFO(mesh.to_string());
    const auto spec = ns(mesh, P({"x", "y"}, none, none));
    auto f = kax::jit(attention, kax::in_shardings(spec, spec, spec));
    check_result(f(q, k, v), P({"x", "y"}), want, 1e-5);
    CHECK(f.explain(q, k, v) == "no communication\n");
    // Every device gets the whole result.
    auto rep = kax::jit(attention, kax::in_shardings(spec, spec, spec), kax::out_shardings(ns(mesh, P())));
    check_result(rep(q, k, v), P(), want, 1e-5);
  }
}

TEST_CASE("jit over 2 processes: arguments resharded across the processes") {
  const kax::Array<float, 2> x = small_ints(8, 8, 8), y = small_ints(8, 8, 9);
  kax::Array<double, 2> sum(8, 8), twice(8, 8);
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 8; ++j) {
      sum(i, j) = static_cast<double>(x(i, j)) + y(i, j);
      twice(i, j) = 2.0 * x(i, j);
    }
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  // y's layout does not fit x's: its dimension 0 is gathered over 'y' (within a process), its
  // dimension 1 over 'x' (across the processes).
  const auto a = kax::device_put(x, ns(mesh, P("x", "y")));
  const auto b = kax::device_put(y, ns(mesh, P("y", "x")));
  auto add = kax::jit([](auto u, auto v) { return u + v; });
  check_result(add(a, b), P("x", "y"), sum);
  CHECK(add.explain(a, b) == "kax::jit (all_gather over 'y' to reshard) of float32(4, 4)\n"
                             "kax::jit (all_gather over 'x' to reshard) of float32(8, 4)\n");
  // A sharded argument moved by in_shardings, and by out_shardings of the identity.
  auto dbl = kax::jit([](auto u) { return u * 2.0f; }, kax::in_shardings(ns(mesh, P(none, {"y", "x"}))));
  check_result(dbl(a), P(none, {"y", "x"}), twice);
  for (const kax::PartitionSpec& spec : {P({"y", "x"}), P("y", "x"), P(none, "x"), P()}) {
    INFO("to " << spec.to_string());
    auto id = kax::jit([](auto u) { return u; }, kax::out_shardings(ns(mesh, spec)));
    check_result(id(a), spec, x);
  }
}

TEST_CASE("jit errors under MPI are raised on every process, which stay in step") {
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const kax::Array<float, 2> x = small_ints(8, 6, 10);
  auto bad = kax::jit([](auto v) { return kax::sum(v, 0); }, kax::in_shardings(ns(mesh, P("x", "y"))),
                      kax::out_shardings(ns(mesh, P({"x", "y"}))));
  CHECK_THROWS_WITH(bad(x), Catch::Contains("dimension 0") && Catch::Contains("extent 6"));
  CHECK_THROWS_AS(kax::jit([](auto v) { return v; })(x), kax::error);
  auto s0 = kax::jit([](auto v) { return kax::sum(v, 0); }, kax::in_shardings(ns(mesh, P("x", "y"))));
  kax::Array<double, 1> want(6);
  for (std::size_t j = 0; j < 6; ++j) {
    want(j) = 0;
    for (std::size_t i = 0; i < 8; ++i) want(j) += x(i, j);
  }
  check_result(s0(x), P("y"), want);
}
