// kax::jit with in_shardings / out_shardings on the devices this run was started with
// (KAX_HOST_DEVICES = 1, 2 or 4): whole-array functions on sharded arguments, the collectives the
// partitioner inserts (checked through explain), the layouts of the results, the kinds of
// arguments, the errors, and a randomized comparison.  Every value is checked against naive loops
// here (double accumulation).  2-d meshes are 2x2 with 4 devices, else 1 x n, so most cases run on
// every device count; explain's lines do not depend on the axis sizes (a size-1 axis still gets its
// collective), only the block shapes in them do.
#define KAX_CHECK_REPLICATION 1

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kax/kax.hpp"
#include "sharding_checks.hpp"

namespace {

using Catch::Matchers::Contains;
using kax::none;
using kax::P;
using kax_ptest::devices_n;
using kax_ptest::gval;
using kax_ptest::idx;
using kax_ptest::make1;
using kax_ptest::make2;
using kax_ptest::make3;
using kax_ptest::mesh_2d;
using kax_ptest::require_array;
using kax_ptest::require_sharded;
using kax_ptest::thrown_message;

// A second test array of other small values.
double hval(std::size_t i, std::size_t j) {
  return static_cast<double>((i * 5 + j * 4 + 3) % 9) - 4.0 + 0.25 * static_cast<double>((i * j) % 3);
}

constexpr double ftol = 1e-5;  // float32 results of a few operations on values of size ~10

kax::Mesh mesh_1d() { return kax::make_mesh({devices_n()}, {"x"}); }

// explain's lines.
template <std::size_t R>
std::string combine(const std::string& op, const std::string& axis, const kax::shape<R>& block,
                    const std::string& dtype = "float32") {
  return "kax::jit (" + op + " over '" + axis + "') of " + dtype + kax::shape_string(block) + "\n";
}
template <std::size_t R>
std::string gather(const std::string& axis, const kax::shape<R>& block) {
  return "kax::jit (all_gather over '" + axis + "' to reshard) of float32" + kax::shape_string(block) + "\n";
}
const std::string none_needed = "no communication\n";

}  // namespace

// ---- elementwise ---------------------------------------------------------------------------------

TEST_CASE("jit: an elementwise chain on equally sharded arguments runs on the blocks without communication",
          "[jit][elementwise]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), B = make2(8, 12, hval);
  const kax::NamedSharding s(mesh, P("x", "y"));
  const auto a = kax::device_put(A, s), b = kax::device_put(B, s);
  auto g = kax::jit([](auto x, auto y) { return kax::sin(x) * y + x / 2.0f - kax::exp(y * 0.1f); });
  const kax::ShardedArray<float, 2> c = g(a, b);
  require_sharded(c, {8, 12}, P("x", "y"), [](const idx<2>& at) {
    const double x = gval(at[0], at[1]), y = hval(at[0], at[1]);
    return std::sin(x) * y + x / 2 - std::exp(y * 0.1);
  }, ftol);
  CHECK(g.explain(a, b) == none_needed);
}

TEST_CASE("jit: mismatched shardings are resharded by all-gathers and the result is right", "[jit][elementwise]") {
  const std::size_t n = devices_n();
  const auto A = make2(8, 8, gval), B = make2(8, 8, hval);
  auto want = [](const idx<2>& at) { return gval(at[0], at[1]) * 2 - hval(at[0], at[1]); };
  auto f = [](auto x, auto y) { return x * 2.0f - y; };
  {
    const kax::Mesh mesh = mesh_1d();
    const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x")));
    const auto b = kax::device_put(B, kax::NamedSharding(mesh, P(none, "x")));
    auto g = kax::jit(f);
    // The first operand decides the layout; the second's columns are gathered, then its rows sliced.
    require_sharded(g(a, b), {8, 8}, P("x"), want);
    CHECK(g.explain(a, b) == gather("x", kax::shape<2>{8, 8 / n}));
  }
  if (n < 4) {
    WARN("the 2x2 case needs 4 devices (KAX_HOST_DEVICES=4): skipped");
    return;
  }
  const kax::Mesh mesh = kax::make_mesh({2, 2}, {"x", "y"});
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  const auto b = kax::device_put(B, kax::NamedSharding(mesh, P("y", "x")));
  auto g = kax::jit(f);
  require_sharded(g(a, b), {8, 8}, P("x", "y"), want);
  // b's dimension 0 (over 'y') is gathered, then its dimension 1 (over 'x').
  CHECK(g.explain(a, b) == gather("y", kax::shape<2>{4, 4}) + gather("x", kax::shape<2>{8, 4}));
}

TEST_CASE("jit: replicated rank-1 and column operands broadcast against a sharded rank-2 one by local slices",
          "[jit][elementwise]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval);
  const auto V = make1(12, [](std::size_t j) { return 0.5 * static_cast<double>(j) - 2; });
  const auto C = make2(8, 1, [](std::size_t i, std::size_t) { return static_cast<double>(i % 3) + 1; });
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto g = kax::jit([](auto x, auto v, auto col) { return x * v + col - v; });
  auto want = [&](const idx<2>& at) {
    const double v = 0.5 * static_cast<double>(at[1]) - 2, col = static_cast<double>(at[0] % 3) + 1;
    return gval(at[0], at[1]) * v + col - v;
  };
  // kax::Array arguments without in_shardings are replicated; each device slices the part it needs.
  require_sharded(g(a, V, C), {8, 12}, P("x", "y"), want);
  CHECK(g.explain(a, V, C) == none_needed);
  // A rank-1 operand sharded like the dimension it broadcasts along needs nothing either.
  const auto v = kax::device_put(V, kax::NamedSharding(mesh, P("y")));
  require_sharded(g(a, v, C), {8, 12}, P("x", "y"), want);
  CHECK(g.explain(a, v, C) == none_needed);
}

TEST_CASE("jit: kax::where and scalar arguments and constants", "[jit][elementwise]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), B = make2(8, 12, hval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  const auto b = kax::device_put(B, kax::NamedSharding(mesh, P("x", "y")));
  auto g = kax::jit([](auto x, auto y, float t) { return kax::where(x > t, x * t, y - t) + 1.0f; });
  const float t = 1.5f;
  require_sharded(g(a, b, t), {8, 12}, P("x", "y"), [&](const idx<2>& at) {
    const double x = gval(at[0], at[1]), y = hval(at[0], at[1]);
    return (x > t ? x * t : y - t) + 1;
  });
  CHECK(g.explain(a, b, t) == none_needed);
  // A scalar branch of where, and a comparison result in bool.
  auto clip = kax::jit([](auto x) { return kax::where(x < 0.0f, 0.0f, x); });
  require_sharded(clip(a), {8, 12}, P("x", "y"),
                  [](const idx<2>& at) { return std::max(gval(at[0], at[1]), 0.0); });
  auto positive = kax::jit([](auto x) { return x > 0.0f; });
  const kax::ShardedArray<bool, 2> p = positive(a);
  require_sharded(p, {8, 12}, P("x", "y"), [](const idx<2>& at) { return gval(at[0], at[1]) > 0 ? 1.0 : 0.0; });
}

// ---- reductions ----------------------------------------------------------------------------------

TEST_CASE("jit: sum, mean, max and min over a split axis reduce locally, then combine over exactly that mesh axis",
          "[jit][reduce]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x"), ny = mesh.axis_size("y");
  const auto A = make2(8, 12, gval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto rows = [](std::size_t j, auto op, double init) {
    double r = init;
    for (std::size_t i = 0; i < 8; ++i) r = op(r, gval(i, j));
    return r;
  };
  auto cols = [](std::size_t i, auto op, double init) {
    double r = init;
    for (std::size_t j = 0; j < 12; ++j) r = op(r, gval(i, j));
    return r;
  };
  const auto add = [](double p, double q) { return p + q; };
  const auto mx = [](double p, double q) { return std::max(p, q); };
  const auto mn = [](double p, double q) { return std::min(p, q); };
  const double inf = std::numeric_limits<double>::infinity();

  auto sum0 = kax::jit([](auto x) { return kax::sum(x, 0); });
  require_sharded(sum0(a), {12}, P("y"), [&](const idx<1>& at) { return rows(at[0], add, 0); }, ftol);
  CHECK(sum0.explain(a) == combine("psum", "x", kax::shape<1>{12 / ny}));

  auto mean1 = kax::jit([](auto x) { return kax::mean(x, 1); });
  require_sharded(mean1(a), {8}, P("x"), [&](const idx<1>& at) { return cols(at[0], add, 0) / 12; }, ftol);
  CHECK(mean1.explain(a) == combine("psum", "y", kax::shape<1>{8 / nx}));

  auto max1 = kax::jit([](auto x) { return kax::max(x, -1); });  // a negative axis
  require_sharded(max1(a), {8}, P("x"), [&](const idx<1>& at) { return cols(at[0], mx, -inf); });
  CHECK(max1.explain(a) == combine("pmax", "y", kax::shape<1>{8 / nx}));

  auto min0 = kax::jit([](auto x) { return kax::min(x, 0); });
  require_sharded(min0(a), {12}, P("y"), [&](const idx<1>& at) { return rows(at[0], mn, inf); });
  CHECK(min0.explain(a) == combine("pmin", "x", kax::shape<1>{12 / ny}));

  // A dimension split over both axes: combined over both, major first.
  const auto ab = kax::device_put(A, kax::NamedSharding(mesh, P({"x", "y"})));
  require_sharded(sum0(ab), {12}, P(), [&](const idx<1>& at) { return rows(at[0], add, 0); }, ftol);
  CHECK(sum0.explain(ab) == combine("psum", "x", kax::shape<1>{12}) + combine("psum", "y", kax::shape<1>{12}));

  // any / all over a split axis combine like max / min.
  auto any0 = kax::jit([](auto x) { return kax::any(x > 4.0f, 0); });
  require_sharded(any0(a), {12}, P("y"), [&](const idx<1>& at) { return rows(at[0], mx, -inf) > 4 ? 1.0 : 0.0; });
  CHECK_THAT(any0.explain(a), Contains("(pmax over 'x')"));
  auto all1 = kax::jit([](auto x) { return kax::all(x > -4.0f, 1); });
  require_sharded(all1(a), {8}, P("x"), [&](const idx<1>& at) { return cols(at[0], mn, inf) > -4 ? 1.0 : 0.0; });
  CHECK_THAT(all1.explain(a), Contains("(pmin over 'y')"));
}

TEST_CASE("jit: reducing an unsplit axis needs no communication; keepdims keeps the unit dimension",
          "[jit][reduce]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x"), ny = mesh.axis_size("y");
  const auto A = make2(8, 12, gval);
  const auto rows_split = kax::device_put(A, kax::NamedSharding(mesh, P("x")));
  auto row_sum = [](std::size_t i) {
    double r = 0;
    for (std::size_t j = 0; j < 12; ++j) r += gval(i, j);
    return r;
  };
  auto col_sum = [](std::size_t j) {
    double r = 0;
    for (std::size_t i = 0; i < 8; ++i) r += gval(i, j);
    return r;
  };
  auto sum1 = kax::jit([](auto x) { return kax::sum(x, 1) * 2.0f; });
  require_sharded(sum1(rows_split), {8}, P("x"), [&](const idx<1>& at) { return 2 * row_sum(at[0]); }, ftol);
  CHECK(sum1.explain(rows_split) == none_needed);
  auto max1 = kax::jit([](auto x) { return kax::max(x, 1); });
  CHECK(max1.explain(rows_split) == none_needed);

  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto keep0 = kax::jit([](auto x) { return kax::sum(x, 0, kax::keepdims); });
  require_sharded(keep0(a), {1, 12}, P(none, "y"), [&](const idx<2>& at) { return col_sum(at[1]); }, ftol);
  CHECK(keep0.explain(a) == combine("psum", "x", kax::shape<2>{1, 12 / ny}));
  // keepdims feeds broadcasting: x - mean(x, 1, keepdims) stays local apart from the psum.
  auto centered = kax::jit([](auto x) { return x - kax::mean(x, 1, kax::keepdims); });
  require_sharded(centered(a), {8, 12}, P("x", "y"),
                  [&](const idx<2>& at) { return gval(at[0], at[1]) - row_sum(at[0]) / 12; }, ftol);
  CHECK(centered.explain(a) == combine("psum", "y", kax::shape<2>{8 / nx, 1}));
}

TEST_CASE("jit: a full reduction to a scalar combines over every mesh axis the input was split on",
          "[jit][reduce]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval);
  double total = 0;
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 12; ++j) total += gval(i, j);
  auto whole = [&](const idx<0>&) { return total; };
  auto sum = kax::jit([](auto x) { return kax::sum(x); });
  const kax::shape<0> scalar{};
  for (const kax::PartitionSpec& spec : {P("x", "y"), P({"x", "y"}), P(none, {"y", "x"})}) {
    INFO(spec.to_string());
    const auto a = kax::device_put(A, kax::NamedSharding(mesh, spec));
    const kax::ShardedArray<float, 0> s = sum(a);
    require_sharded(s, scalar, P(), whole, ftol);
    const std::string first = spec == P(none, {"y", "x"}) ? "y" : "x", second = first == "x" ? "y" : "x";
    CHECK(sum.explain(a) == combine("psum", first, scalar) + combine("psum", second, scalar));
  }
  const auto only_y = kax::device_put(A, kax::NamedSharding(mesh, P(none, "y")));
  require_sharded(sum(only_y), scalar, P(), whole, ftol);
  CHECK(sum.explain(only_y) == combine("psum", "y", scalar));
  auto mean = kax::jit([](auto x) { return kax::mean(x); });
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  require_sharded(mean(a), scalar, P(), [&](const idx<0>&) { return total / 96; }, ftol);
  const auto r = kax::device_put(A, kax::NamedSharding(mesh_1d(), P("x")));
  require_sharded(sum(r), scalar, P(), whole, ftol);
  CHECK(sum.explain(r) == combine("psum", "x", scalar));
}

TEST_CASE("jit: prod and argmax over a split axis give the right values", "[jit][reduce]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x"), ny = mesh.axis_size("y");
  // Factors of both signs near 1, so the products of 8 stay well inside float's range.
  auto pval = [](std::size_t i, std::size_t j) {
    return (0.5 + 0.25 * static_cast<double>((i * 3 + j) % 4)) * ((i + 2 * j) % 3 == 0 ? -1 : 1);
  };
  // Distinct in every column and row (5 and 8 are coprime; 7 and 12 too): no ties.
  auto uval = [](std::size_t i, std::size_t j) {
    return static_cast<double>((i * 5 + j) % 8) * 12 + static_cast<double>((j * 7 + i) % 12);
  };
  const auto A = make2(8, 12, pval), U = make2(8, 12, uval);
  const kax::NamedSharding s(mesh, P("x", "y"));
  const auto a = kax::device_put(A, s), u = kax::device_put(U, s);
  auto prod0 = kax::jit([](auto x) { return kax::prod(x, 0); });
  require_sharded(prod0(a), {12}, P("y"), [&](const idx<1>& at) {
    double p = 1;
    for (std::size_t i = 0; i < 8; ++i) p *= pval(i, at[0]);
    return p;
  }, ftol);
  // prod cannot combine partial products by a psum: the reduced dimension is gathered first.
  CHECK(prod0.explain(a) == gather("x", kax::shape<2>{8 / nx, 12 / ny}));

  auto argmax0 = kax::jit([](auto x) { return kax::argmax(x, 0); });
  const kax::ShardedArray<std::int64_t, 1> am = argmax0(u);
  require_sharded(am, {12}, P("y"), [&](const idx<1>& at) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < 8; ++i)
      if (uval(i, at[0]) > uval(best, at[0])) best = i;
    return static_cast<double>(best);
  });
  // The flattened argmax reduces every (split) dimension.
  auto argmax_all = kax::jit([](auto x) { return kax::argmax(x * -1.0f); });
  require_sharded(argmax_all(u), kax::shape<0>{}, P(), [&](const idx<0>&) {
    std::size_t best = 0;
    for (std::size_t f = 1; f < 96; ++f)
      if (uval(f / 12, f % 12) < uval(best / 12, best % 12)) best = f;
    return static_cast<double>(best);
  });
  auto argmin1 = kax::jit([](auto x) { return kax::argmin(x, 1, kax::keepdims); });
  require_sharded(argmin1(u), {8, 1}, P("x"), [&](const idx<2>& at) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < 12; ++j)
      if (uval(at[0], j) < uval(at[0], best)) best = j;
    return static_cast<double>(best);
  });
}

// ---- contractions --------------------------------------------------------------------------------

namespace {

double naive_matmul(const kax::Array<float, 2>& a, const kax::Array<float, 2>& b, std::size_t i, std::size_t j) {
  double acc = 0;
  for (std::size_t l = 0; l < a.extents()[1]; ++l) acc += static_cast<double>(a(i, l)) * static_cast<double>(b(l, j));
  return acc;
}

}  // namespace

TEST_CASE("jit: rows over 'x' times columns over 'y' gives blocks over both without communication",
          "[jit][matmul]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 6, gval), B = make2(6, 12, hval);
  const kax::NamedSharding sa(mesh, P("x", none)), sb(mesh, P(none, "y")), sc(mesh, P("x", "y"));
  auto mm = kax::jit([](auto x, auto y) { return kax::matmul(x, y); }, kax::in_shardings(sa, sb), kax::out_shardings(sc));
  auto want = [&](const idx<2>& at) { return naive_matmul(A, B, at[0], at[1]); };
  require_sharded(mm(A, B), {8, 12}, P("x", "y"), want, ftol);
  CHECK(mm.explain(A, B) == none_needed);
  // The natural layout is the same.
  auto natural = kax::jit([](auto x, auto y) { return kax::matmul(x, y); }, kax::in_shardings(sa, sb));
  require_sharded(natural(A, B), {8, 12}, P("x", "y"), want, ftol);
}

TEST_CASE("jit: a contracted dimension split over 'y' gives local GEMMs and one psum over 'y'", "[jit][matmul]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x");
  const auto A = make2(8, 12, gval), B = make2(12, 6, hval);
  const kax::NamedSharding sa(mesh, P("x", "y")), sb(mesh, P("y", none)), sc(mesh, P("x", none));
  auto mm = kax::jit([](auto x, auto y) { return kax::matmul(x, y); }, kax::in_shardings(sa, sb), kax::out_shardings(sc));
  require_sharded(mm(A, B), {8, 6}, P("x"), [&](const idx<2>& at) { return naive_matmul(A, B, at[0], at[1]); },
                  ftol);
  CHECK(mm.explain(A, B) == combine("psum", "y", kax::shape<2>{8 / nx, 6}));
}

TEST_CASE("jit: matmul + bias + relu keeps the epilogue local and fused", "[jit][matmul]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x");
  const auto Bias = make1(12, [](std::size_t j) { return 0.75 * static_cast<double>(j % 5) - 1.5; });
  auto layer = [](auto x, auto w, auto bias) { return kax::maximum(kax::matmul(x, w) + bias, 0.0f); };
  auto want = [&](const kax::Array<float, 2>& a, const kax::Array<float, 2>& w) {
    return [&a, &w, &Bias](const idx<2>& at) {
      return std::max(naive_matmul(a, w, at[0], at[1]) + static_cast<double>(Bias(at[1])), 0.0);
    };
  };
  {  // the first seed layout: no communication at all
    const auto A = make2(8, 6, gval), W = make2(6, 12, hval);
    auto g = kax::jit(layer,
                      kax::in_shardings(kax::NamedSharding(mesh, P("x", none)), kax::NamedSharding(mesh, P(none, "y")),
                                        kax::NamedSharding(mesh, P())),
                      kax::out_shardings(kax::NamedSharding(mesh, P("x", "y"))));
    require_sharded(g(A, W, Bias), {8, 12}, P("x", "y"), want(A, W), ftol);
    CHECK(g.explain(A, W, Bias) == none_needed);
  }
  {  // the contracted dimension split: one psum, then the epilogue on the summed block
    const auto A = make2(8, 4, gval), W = make2(4, 12, hval);
    auto g = kax::jit(layer,
                      kax::in_shardings(kax::NamedSharding(mesh, P("x", "y")), kax::NamedSharding(mesh, P("y", none)),
                                        kax::NamedSharding(mesh, P())),
                      kax::out_shardings(kax::NamedSharding(mesh, P("x", none))));
    require_sharded(g(A, W, Bias), {8, 12}, P("x"), want(A, W), ftol);
    CHECK(g.explain(A, W, Bias) == combine("psum", "y", kax::shape<2>{8 / nx, 12}));
  }
}

TEST_CASE("jit: batched einsum with the batch split over both mesh axes, and with a split contracted label",
          "[jit][einsum]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x");
  auto av = [](std::size_t b, std::size_t i, std::size_t j) { return gval(b * 3 + i, j); };
  auto bv = [](std::size_t b, std::size_t j, std::size_t k) { return hval(b + j, k * 2 + b); };
  const auto A = make3(8, 3, 4, av), B = make3(8, 4, 5, bv);
  auto want = [&](const idx<3>& at) {
    double acc = 0;
    for (std::size_t j = 0; j < 4; ++j) acc += av(at[0], at[1], j) * bv(at[0], j, at[2]);
    return acc;
  };
  auto bmm = kax::jit([](auto x, auto y) { return kax::einsum<"bij,bjk->bik">(x, y); });
  const kax::NamedSharding batch(mesh, P({"x", "y"}));
  const auto a = kax::device_put(A, batch), b = kax::device_put(B, batch);
  require_sharded(bmm(a, b), {8, 3, 5}, P({"x", "y"}), want, ftol);
  CHECK(bmm.explain(a, b) == none_needed);
  // j split over 'y' in both operands: local products, then a psum over 'y'.
  const auto a2 = kax::device_put(A, kax::NamedSharding(mesh, P("x", none, "y")));
  const auto b2 = kax::device_put(B, kax::NamedSharding(mesh, P("x", "y")));
  require_sharded(bmm(a2, b2), {8, 3, 5}, P("x"), want, ftol);
  CHECK(bmm.explain(a2, b2) == combine("psum", "y", kax::shape<3>{8 / nx, 3, 5}));
}

TEST_CASE("jit: the dot of two vectors split over 'x' is a local dot and a psum to a scalar", "[jit][matmul]") {
  const kax::Mesh mesh = mesh_1d();
  const std::size_t n = devices_n();
  const auto V = make1(4 * n, [](std::size_t i) { return gval(i, 1); });
  const auto W = make1(4 * n, [](std::size_t i) { return hval(2, i); });
  double want = 0;
  for (std::size_t i = 0; i < 4 * n; ++i) want += gval(i, 1) * hval(2, i);
  const kax::NamedSharding s(mesh, P("x"));
  const auto v = kax::device_put(V, s), w = kax::device_put(W, s);
  auto dot = kax::jit([](auto x, auto y) { return kax::dot(x, y); });
  const kax::ShardedArray<float, 0> d = dot(v, w);
  require_sharded(d, kax::shape<0>{}, P(), [&](const idx<0>&) { return want; }, ftol);
  CHECK(dot.explain(v, w) == combine("psum", "x", kax::shape<0>{}));
}

// ---- attention -----------------------------------------------------------------------------------

TEST_CASE("jit: attention with the batch split over both mesh axes matches naive loops", "[jit][attention]") {
  const kax::Mesh mesh = mesh_2d();
  constexpr std::size_t B = 8, T = 6, D = 4;
  auto qv = [](std::size_t b, std::size_t t, std::size_t d) { return 0.25 * gval(b + t, d * 3 + b); };
  auto kv = [](std::size_t b, std::size_t t, std::size_t d) { return 0.25 * hval(b * 2 + d, t); };
  auto vv = [](std::size_t b, std::size_t t, std::size_t d) { return gval(t * 5 + d, b); };
  const auto Q = make3(B, T, D, qv), K = make3(B, T, D, kv), V = make3(B, T, D, vv);
  // Naive attention in double.
  std::vector<double> want(B * T * D);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      std::vector<double> s(T);
      double m = -std::numeric_limits<double>::infinity(), z = 0;
      for (std::size_t u = 0; u < T; ++u) {
        s[u] = 0;
        for (std::size_t d = 0; d < D; ++d) s[u] += qv(b, t, d) * kv(b, u, d);
        s[u] *= 0.5;
        m = std::max(m, s[u]);
      }
      for (std::size_t u = 0; u < T; ++u) z += (s[u] = std::exp(s[u] - m));
      for (std::size_t d = 0; d < D; ++d) {
        double acc = 0;
        for (std::size_t u = 0; u < T; ++u) acc += s[u] / z * vv(b, u, d);
        want[(b * T + t) * D + d] = acc;
      }
    }
  auto at3 = [&](const idx<3>& at) { return want[(at[0] * T + at[1]) * D + at[2]]; };
  auto attention = [](auto q, auto k, auto v) {
    auto p = kax::nn::softmax(kax::einsum<"btd,bsd->bts">(q, k) * 0.5f, -1);
    return kax::einsum<"bts,bsd->btd">(p, v);
  };
  const kax::NamedSharding s(mesh, P({"x", "y"}, none, none));
  const auto q = kax::device_put(Q, s), k = kax::device_put(K, s), v = kax::device_put(V, s);
  auto g = kax::jit(attention);
  require_sharded(g(q, k, v), {B, T, D}, P({"x", "y"}), at3, ftol);
  CHECK(g.explain(q, k, v) == none_needed);
  // The same from global arrays placed by in_shardings, gathered to every device by out_shardings.
  auto placed = kax::jit(attention, kax::in_shardings(s, s, s), kax::out_shardings(kax::NamedSharding(mesh, P())));
  require_sharded(placed(Q, K, V), {B, T, D}, P(), at3, ftol);
}

// ---- output layouts ------------------------------------------------------------------------------

TEST_CASE("jit: out_shardings lays the result out as given; without it the layout is the natural one",
          "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), B = make2(8, 12, hval);
  const kax::NamedSharding s(mesh, P("x", "y"));
  const auto a = kax::device_put(A, s), b = kax::device_put(B, s);
  auto f = [](auto x, auto y) { return x * 2.0f + y; };
  auto want = [](const idx<2>& at) { return gval(at[0], at[1]) * 2 + hval(at[0], at[1]); };
  require_sharded(kax::jit(f)(a, b), {8, 12}, P("x", "y"), want);
  auto swapped = kax::jit(f, kax::out_shardings(kax::NamedSharding(mesh, P("y", "x"))));
  require_sharded(swapped(a, b), {8, 12}, P("y", "x"), want);
  CHECK(swapped.explain(a, b) != none_needed);
  auto cols = kax::jit(f, kax::out_shardings(kax::NamedSharding(mesh, P(none, {"x", "y"}))));
  require_sharded(cols(a, b), {8, 12}, P(none, {"x", "y"}), want);

  // P(): every device holds the whole result.
  auto rep = kax::jit(f, kax::out_shardings(kax::NamedSharding(mesh, P())));
  const kax::ShardedArray<float, 2> r = rep(a, b);
  require_sharded(r, {8, 12}, P(), want);
  for (const auto& blk : r.blocks()) {
    REQUIRE(blk.extents() == kax::shape<2>{8, 12});
    require_array(blk, kax::shape<2>{}, want, 0);
  }
}

TEST_CASE("jit: a result's spec prints like the out_sharding given, and a natural one without trailing Nones",
          "[jit][layout]") {
  // The result of out_shardings(s) has sharding s, as in JAX; natural layouts print as kax::P
  // writes them, trailing Nones dropped.
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  const auto rows = kax::device_put(A, kax::NamedSharding(mesh, P("x")));
  auto f = [](auto x) { return x + 1.0f; };
  for (const kax::PartitionSpec& spec : {P(), P("x"), P("x", "y"), P(none, "y"), P({"x", "y"})}) {
    const kax::NamedSharding s(mesh, spec);
    const kax::ShardedArray<float, 2> r = kax::jit(f, kax::out_shardings(s))(a);
    CHECK(r.sharding() == s);
    CHECK(r.sharding().spec().to_string() == spec.to_string());
  }
  CHECK(kax::jit(f)(a).sharding().spec().to_string() == "PartitionSpec('x', 'y')");
  CHECK(kax::jit(f)(rows).sharding().spec().to_string() == "PartitionSpec('x',)");
  CHECK(kax::jit([](auto x) { return kax::sum(x, 1); })(a).sharding().spec().to_string() == "PartitionSpec('x',)");
  const auto both = kax::device_put(A, kax::NamedSharding(mesh, P({"x", "y"})));
  CHECK(kax::jit([](auto x) { return kax::sum(x, 0); })(both).sharding().spec().to_string() == "PartitionSpec()");
  CHECK(kax::jit([](auto x) { return kax::sum(x); })(a).sharding().spec().to_string() == "PartitionSpec()");
}

TEST_CASE("jit: a transpose's layout follows its dimensions", "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), Bt = make2(12, 8, hval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto t = kax::jit([](auto x) { return kax::transpose(x); });
  require_sharded(t(a), {12, 8}, P("y", "x"), [](const idx<2>& at) { return gval(at[1], at[0]); });
  CHECK(t.explain(a) == none_needed);
  // Added to an operand laid out like the transpose: still local.
  const auto bt = kax::device_put(Bt, kax::NamedSharding(mesh, P("y", "x")));
  auto tb = kax::jit([](auto x, auto y) { return kax::transpose(x) - y; });
  require_sharded(tb(a, bt), {12, 8}, P("y", "x"),
                  [](const idx<2>& at) { return gval(at[1], at[0]) - hval(at[0], at[1]); });
  CHECK(tb.explain(a, bt) == none_needed);
}

TEST_CASE("jit: reshape falls back to the whole operand and still gives the right blocks", "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto want = [](const idx<2>& at) {
    const std::size_t f = at[0] * 8 + at[1];
    return gval(f / 12, f % 12) + 1;
  };
  auto r = kax::jit([](auto x) { return kax::reshape(x, {12, 8}) + 1.0f; });
  require_sharded(r(a), {12, 8}, P(), want);
  CHECK_THAT(r.explain(a), Contains("all_gather"));
  auto rs = kax::jit([](auto x) { return kax::reshape(x, {12, 8}) + 1.0f; },
                     kax::out_shardings(kax::NamedSharding(mesh, P("x", "y"))));
  require_sharded(rs(a), {12, 8}, P("x", "y"), want);
  auto flat = kax::jit([](auto x) { return kax::reshape(x, {-1}); }, kax::out_shardings(kax::NamedSharding(mesh, P({"x", "y"}))));
  require_sharded(flat(a), {96}, P({"x", "y"}), [](const idx<1>& at) { return gval(at[0] / 12, at[0] % 12); });
}

TEST_CASE("jit: a tuple of results gets one out_sharding each", "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), B = make2(8, 12, hval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  const auto b = kax::device_put(B, kax::NamedSharding(mesh, P("x", "y")));
  auto f = [](auto x, auto y) { return std::make_tuple(x + y, kax::sum(x * y, 1)); };
  auto want0 = [](const idx<2>& at) { return gval(at[0], at[1]) + hval(at[0], at[1]); };
  auto want1 = [](const idx<1>& at) {
    double r = 0;
    for (std::size_t j = 0; j < 12; ++j) r += gval(at[0], j) * hval(at[0], j);
    return r;
  };
  auto g = kax::jit(f, kax::out_shardings(kax::NamedSharding(mesh, P(none, "x")), kax::NamedSharding(mesh, P())));
  const auto [c, d] = g(a, b);
  require_sharded(c, {8, 12}, P(none, "x"), want0);
  require_sharded(d, {8}, P(), want1, ftol);
  const auto [c2, d2] = kax::jit(f)(a, b);
  require_sharded(c2, {8, 12}, P("x", "y"), want0);
  require_sharded(d2, {8}, P("x"), want1, ftol);
}

// ---- arguments and errors ------------------------------------------------------------------------

TEST_CASE("jit: kax::Array arguments are placed by in_shardings; sharded ones keep or change their sharding",
          "[jit][args]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval);
  auto want = [](const idx<2>& at) { return 3 * gval(at[0], at[1]); };
  auto f = [](auto x) { return x * 3.0f; };
  auto placed = kax::jit(f, kax::in_shardings(kax::NamedSharding(mesh, P(none, "y"))));
  require_sharded(placed(A), {8, 12}, P(none, "y"), want);
  CHECK(placed.explain(A) == none_needed);
  // A sharded argument keeps its sharding without in_shardings ...
  const auto rows = kax::device_put(A, kax::NamedSharding(mesh, P("x")));
  require_sharded(kax::jit(f)(rows), {8, 12}, P("x"), want);
  // ... and is resharded to a different in_sharding (the same one leaves it as it is).
  require_sharded(placed(rows), {8, 12}, P(none, "y"), want);
  const auto cols = kax::device_put(A, kax::NamedSharding(mesh, P(none, "y")));
  require_sharded(placed(cols), {8, 12}, P(none, "y"), want);
  // Mixed: a sharded argument gives the mesh, a kax::Array one is replicated.
  auto mixed = kax::jit([](auto x, auto y) { return x - y; });
  require_sharded(mixed(rows, A), {8, 12}, P("x"), [](const idx<2>&) { return 0.0; });
  CHECK(mixed.explain(rows, A) == none_needed);
}

TEST_CASE("jit: shardings on two meshes, out_shardings that do not divide, and no mesh at all are errors",
          "[jit][errors]") {
  const std::size_t n = devices_n();
  const kax::Mesh mx = kax::make_mesh({n}, {"x"}), my = kax::make_mesh({n}, {"y"});
  const auto A = make2(8, 8, gval);
  auto f = [](auto x) { return x + 1.0f; };
  auto two = kax::jit(f, kax::in_shardings(kax::NamedSharding(mx, P("x"))), kax::out_shardings(kax::NamedSharding(my, P("y"))));
  CHECK_THAT(thrown_message<kax::shape_error>([&] { (void)two(A); }),
             Contains("Mesh('x': " + std::to_string(n) + ")") && Contains("Mesh('y': " + std::to_string(n) + ")"));
  const auto on_y = kax::device_put(A, kax::NamedSharding(my, P("y")));
  auto in_x = kax::jit(f, kax::in_shardings(kax::NamedSharding(mx, P("x"))));
  CHECK_THROWS_AS(in_x(on_y), kax::shape_error);
  const auto on_x = kax::device_put(A, kax::NamedSharding(mx, P("x")));
  CHECK_THROWS_AS(kax::jit([](auto x, auto y) { return x + y; })(on_x, on_y), kax::shape_error);

  try {
    (void)kax::jit(f)(A);
    FAIL("jit without shardings and with only kax::Array arguments ran");
  } catch (const kax::shape_error& e) {
    FAIL("a shape_error, not a plain kax::error: " << e.what());
  } catch (const kax::error& e) {
    CHECK_THAT(std::string(e.what()), Contains("no mesh"));
  }

  // Errors of f's own graph (built on global shapes) surface as they do in kax::eval.
  const auto B7 = kax::device_put(make2(8, 4, gval), kax::NamedSharding(mx, P("x")));
  CHECK_THROWS_AS(kax::jit([](auto x, auto y) { return x + y; })(on_x, B7), kax::shape_error);
  CHECK_THROWS_AS(kax::jit([](auto x) { return kax::sum(x, 2); })(on_x), kax::axis_error);

  if (n < 2) {
    WARN("the non-dividing out_shardings case needs 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  // sum over axis 0 of an (8, 7) array is (7,), which 'x' of size n >= 2 does not divide.
  const auto B = make2(8, 7, gval);
  auto bad = kax::jit([](auto x) { return kax::sum(x, 0); }, kax::in_shardings(kax::NamedSharding(mx, P("x"))),
                      kax::out_shardings(kax::NamedSharding(mx, P("x"))));
  CHECK_THAT(thrown_message<kax::shape_error>([&] { (void)bad(B); }),
             Contains("dimension 0") && Contains("extent 7") && Contains("'x' (size " + std::to_string(n) + ")"));
}

// ---- more partitioner rules ----------------------------------------------------------------------

TEST_CASE("jit: conflicts between a reduction's split axis and the wanted output layout are resolved by resharding",
          "[jit][reduce]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t nx = mesh.axis_size("x"), ny = mesh.axis_size("y");
  const auto A = make2(8, 12, gval);
  auto col_sum = [](const idx<1>& at) {
    double r = 0;
    for (std::size_t i = 0; i < 8; ++i) r += gval(i, at[0]);
    return r;
  };
  auto row_sum = [](const idx<1>& at) {
    double r = 0;
    for (std::size_t j = 0; j < 12; ++j) r += gval(at[0], j);
    return r;
  };
  // The reduced dimension is split over 'x', and the output wants 'x' for the kept one.
  const auto rows = kax::device_put(A, kax::NamedSharding(mesh, P("x")));
  auto s0 = kax::jit([](auto x) { return kax::sum(x, 0); }, kax::out_shardings(kax::NamedSharding(mesh, P("x"))));
  require_sharded(s0(rows), {12}, P("x"), col_sum, ftol);
  // The kept dimension moves from 'x' to 'y', which the reduced one was split over.
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto s1 = kax::jit([](auto x) { return kax::sum(x, 1); }, kax::out_shardings(kax::NamedSharding(mesh, P("y"))));
  require_sharded(s1(a), {8}, P("y"), row_sum, ftol);
  // A reduction of a reduction: a psum over 'y' for the inner one, one over 'x' for the outer.
  auto twice = kax::jit([](auto x) { return kax::sum(kax::sum(x, 1), 0); });
  double total = 0;
  for (std::size_t i = 0; i < 8; ++i) total += row_sum({i});
  require_sharded(twice(a), kax::shape<0>{}, P(), [&](const idx<0>&) { return total; }, ftol);
  CHECK(twice.explain(a) == combine("psum", "y", kax::shape<1>{8 / nx}) + combine("psum", "x", kax::shape<0>{}));
  // A reduction used twice is computed (and combined) once.
  auto reused = kax::jit([](auto x) {
    auto s = kax::sum(x, 0);
    return s * s + s;
  });
  require_sharded(reused(a), {12}, P("y"), [&](const idx<1>& at) { return col_sum(at) * col_sum(at) + col_sum(at); }, ftol);
  CHECK(reused.explain(a) == combine("psum", "x", kax::shape<1>{12 / ny}));
}

TEST_CASE("jit: softmax over a split axis and integer and double reductions", "[jit][reduce]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto sm = kax::jit([](auto x) { return kax::nn::softmax(x, 1); });
  // softmax's max (a max with an initial value) combines with pmax, its sum with psum: no gathers.
  const std::string plan = sm.explain(a);
  CHECK_THAT(plan, Catch::Contains("pmax over 'y'") && Catch::Contains("psum over 'y'"));
  CHECK_THAT(plan, !Catch::Contains("all_gather"));
  require_sharded(sm(a), {8, 12}, P("x", "y"), [](const idx<2>& at) {
    double m = -std::numeric_limits<double>::infinity(), z = 0;
    for (std::size_t j = 0; j < 12; ++j) m = std::max(m, gval(at[0], j));
    for (std::size_t j = 0; j < 12; ++j) z += std::exp(gval(at[0], j) - m);
    return std::exp(gval(at[0], at[1]) - m) / z;
  }, ftol);

  const auto I = make2<std::int32_t>(8, 12, [](std::size_t i, std::size_t j) { return static_cast<int>(i * 12 + j) - 40; });
  const auto D = make2<double>(8, 12, hval);
  const auto ia = kax::device_put(I, kax::NamedSharding(mesh, P("x", "y")));
  const auto da = kax::device_put(D, kax::NamedSharding(mesh, P({"x", "y"})));
  auto isum = kax::jit([](auto x) { return kax::sum(x * 3, 0); });
  require_sharded(isum(ia), {12}, P("y"), [](const idx<1>& at) {
    double r = 0;
    for (std::size_t i = 0; i < 8; ++i) r += 3.0 * (static_cast<double>(i * 12 + at[0]) - 40);
    return r;
  });
  auto imax = kax::jit([](auto x) { return kax::max(x); });
  require_sharded(imax(ia), kax::shape<0>{}, P(), [](const idx<0>&) { return 8.0 * 12 - 1 - 40; });
  auto dmean = kax::jit([](auto x) { return kax::mean(x, 0); });
  require_sharded(dmean(da), {12}, P(), [](const idx<1>& at) {
    double r = 0;
    for (std::size_t i = 0; i < 8; ++i) r += hval(i, at[0]);
    return r / 8;
  }, 1e-12);
}

TEST_CASE("jit: contractions whose wanted and split labels conflict, captured weights and broadcast batches",
          "[jit][matmul]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), B = make2(12, 8, hval);
  auto want = [&](const idx<2>& at) { return naive_matmul(A, B, at[0], at[1]); };
  auto mm = [](auto x, auto y) { return kax::matmul(x, y); };
  // The rows and the columns of the result both naturally want 'x': the columns give way.
  {
    const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x")));
    const auto b = kax::device_put(B, kax::NamedSharding(mesh, P(none, "x")));
    require_sharded(kax::jit(mm)(a, b), {8, 8}, P("x"), want, ftol);
  }
  // The contracted dimension is split over 'x' in one operand and over 'y' in the other.
  {
    const auto a = kax::device_put(A, kax::NamedSharding(mesh, P(none, "x")));
    const auto b = kax::device_put(B, kax::NamedSharding(mesh, P("y")));
    require_sharded(kax::jit(mm)(a, b), {8, 8}, P(), want, ftol);
    CHECK_THAT(kax::jit(mm).explain(a, b), Contains("(psum over 'x')"));
  }
  // The output wants 'y' for the rows, which the contracted dimension was split over.
  {
    const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
    const auto b = kax::device_put(B, kax::NamedSharding(mesh, P("y")));
    auto g = kax::jit(mm, kax::out_shardings(kax::NamedSharding(mesh, P("y", "x"))));
    require_sharded(g(a, b), {8, 8}, P("y", "x"), want, ftol);
  }
  // Weights captured by the function are sliced locally; a rank-2 right operand broadcasts over
  // a batch split over both axes; an elementwise operand of the contraction stays fused.
  const auto W = make2(4, 5, hval);
  auto bv = [](std::size_t b, std::size_t i, std::size_t j) { return gval(b * 3 + i, j); };
  const auto X = make3(8, 3, 4, bv);
  const auto x = kax::device_put(X, kax::NamedSharding(mesh, P({"x", "y"})));
  auto dense = kax::jit([&W](auto v) { return kax::matmul(kax::sin(v), W); });
  require_sharded(dense(x), {8, 3, 5}, P({"x", "y"}), [&](const idx<3>& at) {
    double acc = 0;
    for (std::size_t j = 0; j < 4; ++j) acc += std::sin(bv(at[0], at[1], j)) * hval(j, at[2]);
    return acc;
  }, ftol);
  CHECK(dense.explain(x) == none_needed);
}

TEST_CASE("jit: an argument used under two layouts, and the identity with out_shardings as a reshard",
          "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 8, gval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto sym = kax::jit([](auto x) { return x + kax::transpose(x); });
  require_sharded(sym(a), {8, 8}, P("x", "y"), [](const idx<2>& at) { return gval(at[0], at[1]) + gval(at[1], at[0]); });
  auto id = [](auto x) { return x; };
  auto want = [](const idx<2>& at) { return gval(at[0], at[1]); };
  const kax::ShardedArray<float, 2> same = kax::jit(id)(a);
  require_sharded(same, {8, 8}, P("x", "y"), want);
  CHECK(kax::jit(id).explain(a) == none_needed);
  // A result is a new array, as in JAX: it never shares an argument's buffers.
  for (std::size_t i = 0; i < same.blocks().size(); ++i) CHECK(same.blocks()[i].data() != a.blocks()[i].data());
  for (const kax::PartitionSpec& spec : {P({"y", "x"}), P(none, {"x", "y"}), P("y", "x"), P(), P("y")}) {
    INFO("to " << spec.to_string());
    require_sharded(kax::jit(id, kax::out_shardings(kax::NamedSharding(mesh, spec)))(a), {8, 8}, spec, want);
  }
  const auto ab = kax::device_put(A, kax::NamedSharding(mesh, P({"x", "y"})));
  require_sharded(kax::jit(id, kax::out_shardings(kax::NamedSharding(mesh, P({"y", "x"}))))(ab), {8, 8}, P({"y", "x"}), want);
}

TEST_CASE("jit: a 3-d transpose with a non-involutive permutation, expand_dims, squeeze and broadcast_to",
          "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  auto v3 = [](std::size_t i, std::size_t j, std::size_t k) { return gval(i * 3 + j, k * 2 + i); };
  const auto X = make3(4, 6, 8, v3);
  const auto x = kax::device_put(X, kax::NamedSharding(mesh, P("x", none, "y")));
  // out[a, b, c] = x[b, c, a] for axes (1, 2, 0): x's dimension 0 ('x') becomes 2, 2 ('y') becomes 1.
  auto t = kax::jit([](auto e) { return kax::transpose(e, {1, 2, 0}); });
  require_sharded(t(x), {6, 8, 4}, P(none, "y", "x"), [&](const idx<3>& at) { return v3(at[2], at[0], at[1]); });
  CHECK(t.explain(x) == none_needed);

  const auto A = make2(8, 12, gval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  auto ex = kax::jit([](auto e) { return kax::expand_dims(e, 1) * 2.0f; });
  require_sharded(ex(a), {8, 1, 12}, P("x", none, "y"), [](const idx<3>& at) { return 2 * gval(at[0], at[2]); });
  CHECK(ex.explain(a) == none_needed);
  auto sq = kax::jit([](auto e) { return kax::squeeze(kax::sum(e, 0, kax::keepdims), 0); });
  require_sharded(sq(a), {12}, P("y"), [](const idx<1>& at) {
    double r = 0;
    for (std::size_t i = 0; i < 8; ++i) r += gval(i, at[0]);
    return r;
  }, ftol);

  const auto V = make1(12, [](std::size_t j) { return 0.5 * static_cast<double>(j); });
  const auto v = kax::device_put(V, kax::NamedSharding(mesh, P("y")));
  auto bt = kax::jit([](auto e) { return kax::broadcast_to(e, {8, 12}); });
  require_sharded(bt(v), {8, 12}, P(none, "y"), [](const idx<2>& at) { return 0.5 * static_cast<double>(at[1]); });
  CHECK(bt.explain(v) == none_needed);
  auto bto = kax::jit([](auto e) { return kax::broadcast_to(e, {8, 12}); },
                      kax::out_shardings(kax::NamedSharding(mesh, P("x", "y"))));
  require_sharded(bto(v), {8, 12}, P("x", "y"), [](const idx<2>& at) { return 0.5 * static_cast<double>(at[1]); });
}

TEST_CASE("jit: slices and concatenations of sharded arguments", "[jit][layout]") {
  const kax::Mesh mesh = mesh_2d();
  const auto A = make2(8, 12, gval), B = make2(8, 12, hval);
  const auto a = kax::device_put(A, kax::NamedSharding(mesh, P("x", "y")));
  const auto b = kax::device_put(B, kax::NamedSharding(mesh, P(none, "x")));
  // x[1:, ::-2] has shape (7, 6): row i + 1, column 11 - 2j.
  auto sl = kax::jit([](auto e) { return kax::slice(e, {kax::range(1, std::nullopt), kax::range(std::nullopt, std::nullopt, -2)}); });
  require_sharded(sl(a), {7, 6}, P(), [](const idx<2>& at) { return gval(at[0] + 1, 11 - 2 * at[1]); });
  auto slo = kax::jit([](auto e) { return kax::slice(e, {kax::range(0, 4), kax::range(2, 10)}); },
                      kax::out_shardings(kax::NamedSharding(mesh, P("x", "y"))));
  require_sharded(slo(a), {4, 8}, P("x", "y"), [](const idx<2>& at) { return gval(at[0], at[1] + 2); });
  auto cat = kax::jit([](auto e, auto f) { return kax::concatenate(std::make_tuple(e, f * 2.0f), 1); },
                      kax::out_shardings(kax::NamedSharding(mesh, P("x", "y"))));
  require_sharded(cat(a, b), {8, 24}, P("x", "y"), [](const idx<2>& at) {
    return at[1] < 12 ? gval(at[0], at[1]) : 2 * hval(at[0], at[1] - 12);
  });
}

// ---- randomized ----------------------------------------------------------------------------------

TEST_CASE("jit: random shapes and shardings of sum(sin(a) * b, axis) + max(a, axis) / 2 match naive loops",
          "[jit][random]") {
  const kax::Mesh mesh = mesh_2d();
  const std::size_t n = mesh.size();
  const std::vector<kax::PartitionSpec> specs{P(),         P("x"),         P(none, "x"),     P("y"),          P(none, "y"),
                                              P("x", "y"), P("y", "x"),    P({"x", "y"}),    P(none, {"y", "x"})};
  std::mt19937 rng(20240611);
  auto pick = [&](std::size_t k) { return static_cast<std::size_t>(rng() % k); };
  for (int trial = 0; trial < 12; ++trial) {
    const std::size_t r = n * (1 + pick(3)), c = n * (1 + pick(3));
    const int axis = static_cast<int>(pick(2));
    const kax::PartitionSpec sa = specs[pick(specs.size())], sb = specs[pick(specs.size())];
    const bool given_out = pick(2) == 1;
    std::uniform_real_distribution<double> u(-3, 3);
    std::vector<double> va(r * c), vb(r * c);
    for (double& x : va) x = u(rng);
    for (double& x : vb) x = u(rng);
    INFO("trial " << trial << ": (" << r << ", " << c << "), axis " << axis << ", a " << sa.to_string() << ", b "
                  << sb.to_string() << (given_out ? ", out_shardings P('x')" : ""));
    const auto A = make2(r, c, [&](std::size_t i, std::size_t j) { return va[i * c + j]; });
    const auto B = make2(r, c, [&](std::size_t i, std::size_t j) { return vb[i * c + j]; });
    const auto a = kax::device_put(A, kax::NamedSharding(mesh, sa));
    const auto b = kax::device_put(B, kax::NamedSharding(mesh, sb));
    auto f = [axis](auto x, auto y) { return kax::sum(kax::sin(x) * y, axis) + kax::max(x, axis) / 2.0f; };
    const std::size_t len = axis == 0 ? c : r, along = axis == 0 ? r : c;
    auto want = [&](const idx<1>& at) {
      double s = 0, m = -std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < along; ++k) {
        const std::size_t i = axis == 0 ? k : at[0], j = axis == 0 ? at[0] : k;
        const double x = static_cast<double>(A(i, j)), y = static_cast<double>(B(i, j));
        s += std::sin(x) * y;
        m = std::max(m, x);
      }
      return s + m / 2;
    };
    if (given_out) {
      auto g = kax::jit(f, kax::out_shardings(kax::NamedSharding(mesh, P("x"))));
      require_sharded(g(a, b), {len}, P("x"), want, ftol);
    } else {
      const kax::ShardedArray<float, 1> got = kax::jit(f)(a, b);
      REQUIRE(got.extents() == kax::shape<1>{len});
      for (const auto& shard : got.addressable_shards()) require_array(shard.data, shard.offset, want, ftol);
      require_array(kax::to_host(got), kax::shape<1>{}, want, ftol);
    }
  }
}
