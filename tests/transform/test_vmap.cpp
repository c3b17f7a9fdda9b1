// kax::vmap against JAX's semantics, with tiny inputs and expected values written out by hand (the
// cases of jax.vmap's documentation and tests: in_axes None/ints/negatives, out_axes, nested maps,
// scalar and tuple outputs, axis_size), the errors JAX raises, and the fusion vmap promises: f is
// called once, and the batch runs as the kernels of one big expression.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

using kax_test::launch_counter;

template <class T, std::size_t R>
void require_values(const kax::Array<T, R>& got, const kax::shape<R>& shape, const std::vector<T>& want) {
  REQUIRE(got.extents() == shape);
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == want.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    if constexpr (std::is_floating_point_v<T>) REQUIRE(v[i] == Approx(want[i]).epsilon(1e-6));
    else REQUIRE(v[i] == want[i]);
  }
}

// x = [[0, 1, 2], [3, 4, 5]]
kax::Array<float, 2> x23() { return kax::from(std::vector<float>{0, 1, 2, 3, 4, 5}, kax::shape<2>{2, 3}); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("vmap maps every argument along axis 0 by default", "[vmap]") {
  const auto x = kax::from(std::vector<float>{1, 2, 3});
  const auto y = kax::from(std::vector<float>{10, 20, 30});
  kax::Array<float, 1> r = kax::vmap([](auto a, auto b) { return a * 2 + b; })(x, y);
  require_values(r, {3}, {12, 24, 36});
}

TEST_CASE("vmap with in_axes none broadcasts that argument to every example", "[vmap]") {
  // jax.vmap(lambda a, b: a + b, in_axes=(0, None))(x, y): each scalar of x plus all of y.
  const auto x = kax::from(std::vector<float>{1, 2, 3});
  const auto y = kax::from(std::vector<float>{10, 20});
  kax::Array<float, 2> r = kax::vmap([](auto a, auto b) { return a + b; }, kax::in_axes(0, kax::none))(x, y);
  require_values(r, {3, 2}, {11, 21, 12, 22, 13, 23});
}

TEST_CASE("vmap maps along the axis in_axes names, negative axes counting from the end", "[vmap]") {
  const auto x = x23();
  auto column_sum = [](auto c) { return kax::sum(c); };
  kax::Array<float, 1> rows = kax::vmap(column_sum)(x);
  require_values(rows, {2}, {3, 12});
  kax::Array<float, 1> cols = kax::vmap(column_sum, kax::in_axes(1))(x);
  require_values(cols, {3}, {3, 5, 7});
  kax::Array<float, 1> last = kax::vmap(column_sum, kax::in_axes(-1))(x);
  require_values(last, {3}, {3, 5, 7});
  // Mapping axis 1 of a rank-3 array: the example is x[:, b, :].
  const auto z = kax::from(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, kax::shape<3>{2, 3, 2});
  kax::Array<int, 3> moved = kax::vmap([](auto e) { return e; }, kax::in_axes(1))(z);
  require_values(moved, {3, 2, 2}, {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
}

TEST_CASE("vmap places the batch axis where out_axes says", "[vmap]") {
  const auto x = x23();
  auto twice = [](auto r) { return r * 2; };
  kax::Array<float, 2> first = kax::vmap(twice, kax::out_axes(0))(x);
  require_values(first, {2, 3}, {0, 2, 4, 6, 8, 10});
  kax::Array<float, 2> second = kax::vmap(twice, kax::out_axes(1))(x);
  require_values(second, {3, 2}, {0, 6, 2, 8, 4, 10});
  kax::Array<float, 2> back = kax::vmap(twice, kax::in_axes(1), kax::out_axes(-1))(x);
  require_values(back, {2, 3}, {0, 2, 4, 6, 8, 10});
  // A rank-3 result with the batch axis in the middle.
  kax::Array<float, 3> mid = kax::vmap([](auto r) { return kax::expand_dims(r, 0) * r; }, kax::out_axes(1))(x);
  require_values(mid, {1, 2, 3}, {0, 1, 4, 9, 16, 25});
}

TEST_CASE("vmap of a function returning a scalar gives one value per example", "[vmap]") {
  const auto x = x23();
  kax::Array<float, 1> m = kax::vmap([](auto r) { return kax::max(r); })(x);
  require_values(m, {2}, {2, 5});
  kax::Array<std::int64_t, 1> am = kax::vmap([](auto r) { return kax::argmax(r); }, kax::in_axes(1))(x);
  require_values(am, {3}, {1, 1, 1});
  kax::Array<float, 1> d = kax::vmap([](auto a, auto b) { return kax::dot(a, b); })(x, x);
  require_values(d, {2}, {5, 50});
}

TEST_CASE("vmap broadcasts an output that does not depend on a mapped argument", "[vmap]") {
  const auto x = kax::from(std::vector<float>{1, 2, 3});
  const auto y = kax::from(std::vector<float>{7, 8});
  kax::Array<float, 1> five = kax::vmap([](auto) { return 5.0f; })(x);
  require_values(five, {3}, {5, 5, 5});
  kax::Array<float, 2> ys = kax::vmap([](auto, auto b) { return b; }, kax::in_axes(0, kax::none))(x, y);
  require_values(ys, {3, 2}, {7, 8, 7, 8, 7, 8});
  // out_axes none keeps it unbatched: the function's own value.
  auto same = kax::vmap([](auto, auto b) { return b * 1; }, kax::in_axes(0, kax::none), kax::out_axes(kax::none))(x, y);
  kax::Array<float, 1> s = same;
  require_values(s, {2}, {7, 8});
}

TEST_CASE("vmap returns a tuple for a function returning a tuple, out_axes per output", "[vmap]") {
  const auto x = x23();
  const auto w = kax::from(std::vector<float>{1, -1, 2});
  auto [scaled, total] = kax::vmap([](auto r) { return std::make_tuple(r * 10, kax::sum(r)); })(x);
  kax::Array<float, 2> a = scaled;
  kax::Array<float, 1> b = total;
  require_values(a, {2, 3}, {0, 10, 20, 30, 40, 50});
  require_values(b, {2}, {3, 12});

  // Mixed: a batched output moved to axis 1, an unbatched one left alone.
  auto [moved, kept] = kax::vmap([](auto r, auto v) { return std::make_tuple(r * v, v + 0.5f); },
                                 kax::in_axes(0, kax::none), kax::out_axes(1, kax::none))(x, w);
  kax::Array<float, 2> c = moved;
  kax::Array<float, 1> d = kept;
  require_values(c, {3, 2}, {0, 3, -1, -4, 4, 10});
  require_values(d, {3}, {1.5f, -0.5f, 2.5f});
}

TEST_CASE("vmap maps tuple arguments with one entry or one entry per element", "[vmap]") {
  const auto x = kax::from(std::vector<float>{1, 2, 3});
  const auto y = kax::from(std::vector<float>{10, 20});
  // in_axes=((0, None),): the tuple's first element mapped, the second broadcast.
  kax::Array<float, 2> r = kax::vmap([](auto t) { return std::get<0>(t) * std::get<1>(t); },
                                     kax::in_axes(kax::in_axes(0, kax::none)))(std::make_tuple(x, y));
  require_values(r, {3, 2}, {10, 20, 20, 40, 30, 60});
  // A std::array of arrays mapped as a whole stays a std::array.
  const std::array<kax::Array<float, 1>, 2> pair{x, x};
  kax::Array<float, 1> s = kax::vmap([](const auto& arr) { return arr[0] * arr[1]; })(pair);
  require_values(s, {3}, {1, 4, 9});
}

TEST_CASE("nested vmap with different in_axes at each level", "[vmap]") {
  const auto x = kax::from(std::vector<float>{1, 2});
  const auto y = kax::from(std::vector<float>{10, 20, 30});
  // Outer product: vmap(vmap(mul, (None, 0)), (0, None)).
  auto outer = kax::vmap(kax::vmap([](auto a, auto b) { return a * b; }, kax::in_axes(kax::none, 0)),
                         kax::in_axes(0, kax::none));
  kax::Array<float, 2> o = outer(x, y);
  require_values(o, {2, 3}, {10, 20, 30, 20, 40, 60});

  // A batch of matrices, mapped over columns inside and over the batch outside: per-column sums.
  const auto m = kax::from(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, kax::shape<3>{2, 2, 3});
  auto col_sums = kax::vmap(kax::vmap([](auto c) { return kax::sum(c); }, kax::in_axes(1)));
  kax::Array<float, 2> cs = col_sums(m);
  require_values(cs, {2, 3}, {3, 5, 7, 15, 17, 19});
  // The same with the outer level mapping the last axis and the inner one axis 0.
  auto row_sums = kax::vmap(kax::vmap([](auto c) { return kax::sum(c); }, kax::in_axes(0)), kax::in_axes(-1));
  kax::Array<float, 2> rs = row_sums(m);  // rs[c][i] = sum_j m[i][j][c]... mapped over c then i
  require_values(rs, {3, 2}, {3, 15, 5, 17, 7, 19});
}

TEST_CASE("an inner vmap may capture the outer vmap's example", "[vmap]") {
  const auto x = kax::from(std::vector<float>{1, 2});
  const auto y = kax::from(std::vector<float>{10, 20, 30});
  kax::Array<float, 2> o = kax::vmap([&y](auto a) { return kax::vmap([a](auto b) { return a + b; })(y); })(x);
  require_values(o, {2, 3}, {11, 21, 31, 12, 22, 32});
}

TEST_CASE("vmap with axis_size maps a function of no mapped argument", "[vmap]") {
  const auto c = kax::from(std::vector<float>{1, 2});
  kax::Array<float, 2> r = kax::vmap([](auto v) { return v * 3; }, kax::in_axes(kax::none), kax::axis_size(3))(c);
  require_values(r, {3, 2}, {3, 6, 3, 6, 3, 6});
  kax::Array<float, 1> k = kax::vmap([] { return 1.5f; }, kax::axis_size(4))();
  require_values(k, {4}, {1.5f, 1.5f, 1.5f, 1.5f});
}

TEST_CASE("vmap batches reductions over axes, contractions and layout operations", "[vmap]") {
  // z[b] is 2x3: z = arange(12).reshape(2, 2, 3)
  const auto z = kax::from(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, kax::shape<3>{2, 2, 3});
  kax::Array<float, 2> s0 = kax::vmap([](auto e) { return kax::sum(e, 0); })(z);
  require_values(s0, {2, 3}, {3, 5, 7, 15, 17, 19});
  kax::Array<float, 3> k = kax::vmap([](auto e) { return kax::max(e, -1, kax::keepdims); })(z);
  require_values(k, {2, 2, 1}, {2, 5, 8, 11});
  kax::Array<float, 3> t = kax::vmap([](auto e) { return kax::transpose(e); })(z);
  require_values(t, {2, 3, 2}, {0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11});
  kax::Array<float, 2> flat = kax::vmap([](auto e) { return kax::reshape(e, {-1}); })(z);
  require_values(flat, {2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  kax::Array<float, 3> sl = kax::vmap([](auto e) { return kax::slice(e, {kax::colon, kax::range(std::nullopt, std::nullopt, -2)}); })(z);
  require_values(sl, {2, 2, 2}, {2, 0, 5, 3, 8, 6, 11, 9});
  // Batched matrix products: e @ e^T per example (2x2), and each example times one shared vector.
  kax::Array<float, 3> g = kax::vmap([](auto e) { return kax::matmul(e, kax::transpose(e)); })(z);
  require_values(g, {2, 2, 2}, {5, 14, 14, 50, 149, 212, 212, 302});
  const auto v = kax::from(std::vector<float>{1, 0, -1});
  kax::Array<float, 2> mv = kax::vmap([](auto e, auto w) { return kax::dot(e, w); }, kax::in_axes(0, kax::none))(z, v);
  require_values(mv, {2, 2}, {-2, -2, -2, -2});
  kax::Array<float, 2> tr = kax::vmap([](auto e) { return kax::einsum<"ij->j">(e); })(z);
  require_values(tr, {2, 3}, {3, 5, 7, 15, 17, 19});
  kax::Array<float, 3> op = kax::vmap([](auto a, auto b) { return kax::einsum<"i,j->ij">(a, b); }, kax::in_axes(0, kax::none))(
      kax::from(std::vector<float>{1, 2}, kax::shape<2>{2, 1}), kax::from(std::vector<float>{3, 4}));
  require_values(op, {2, 1, 2}, {3, 4, 6, 8});
}

TEST_CASE("vmap batches where, broadcasting between per-example ranks and nn functions", "[vmap]") {
  const auto x = x23();
  const auto m = kax::from(std::vector<float>{1, 0, 0, 0, 2, 0}, kax::shape<2>{2, 3});
  // Per-example (3,) against an unmapped (2, 3): each example broadcasts to (2, 3).
  kax::Array<float, 3> b = kax::vmap([](auto r, auto mm) { return r * mm; }, kax::in_axes(0, kax::none))(x, m);
  require_values(b, {2, 2, 3}, {0, 0, 0, 0, 2, 0, 3, 0, 0, 0, 8, 0});
  kax::Array<float, 2> w = kax::vmap([](auto r) { return kax::where(r > 1.5f, r, -r); })(x);
  require_values(w, {2, 3}, {0, -1, 2, 3, 4, 5});
  kax::Array<float, 2> sm = kax::vmap([](auto r) { return kax::nn::softmax(r); })(x);
  const float e1 = 0.09003057f, e2 = 0.24472847f, e3 = 0.66524096f;
  require_values(sm, {2, 3}, {e1, e2, e3, e1, e2, e3});
}

TEST_CASE("vmap calls the function once and runs the batch as fused kernels", "[vmap][fusion]") {
  const kax::Array<float, 2> X = kax::ones<float>(64, 16);
  const kax::Array<float, 1> w = kax::ones<float>(16);
  int calls = 0;
  auto f = [&calls](auto x, auto v) {
    ++calls;
    return kax::dot(x, v) + kax::sin(x);
  };
  auto batched = kax::vmap(f, kax::in_axes(0, kax::none))(X, w);
  REQUIRE(calls == 1);
  // The seed's dot(x, w) + sin(x) over rows of 16: one matrix-vector stage, one elementwise
  // kernel (rows shorter than 256 keep the staged plan, exec/batch_rows.hpp).
  const std::string plan = kax::plan_of(batched);
  INFO(plan);
  REQUIRE(kax_test::starts_with(plan, "2 kernels, 1 temporary"));
  REQUIRE(contains(plan, "kax::gemv"));
  kax::Array<float, 2> y(64, 16);
  {
    launch_counter counter;
    y = batched;
    REQUIRE(counter.kernels == 2);
  }
  REQUIRE(calls == 1);
  REQUIRE(y(3, 4) == Approx(16 + std::sin(1.0f)));

  // Pure elementwise work is one kernel and no temporary.
  const std::string ew = kax::plan_of(kax::vmap([](auto a, auto b) { return a * b + kax::exp(a); })(X, X));
  REQUIRE(kax_test::starts_with(ew, "1 kernel, 0 temporaries"));
  // Batched softmax: two batched stages (its max, computed once, and its sum), then the rows.
  // Two or more stages keep the staged plan (exec/batch_rows.hpp).
  const std::string sm = kax::plan_of(kax::vmap([](auto r) { return kax::nn::softmax(r); })(X));
  INFO(sm);
  REQUIRE(kax_test::starts_with(sm, "3 kernels, 2 temporaries"));
  REQUIRE(!contains(sm, "batch rows"));
  {
    launch_counter counter;
    y = kax::vmap([](auto r) { return kax::nn::softmax(r); })(X);
    REQUIRE(counter.kernels == 3);
  }
  REQUIRE(y(5, 7) == Approx(1.0f / 16));
  // One batched inner reduction over rows of at least 256 elements: the sum and the row in one
  // kernel over blocks of batch rows.  Rows of 16 keep the staged plan.
  const kax::Array<float, 2> L = kax::ones<float>(40, 256);
  const auto normalize = [](auto r) { return r / kax::sum(r); };
  const std::string nl = kax::plan_of(kax::vmap(normalize)(L));
  INFO(nl);
  REQUIRE(kax_test::starts_with(nl, "1 kernel, 1 temporary"));
  REQUIRE(contains(nl, "kax::eval<batch rows,float32,rank2>"));
  REQUIRE(contains(nl, "per row: kax::reduce<sum,inner,float32,rank2->1> -> kax::eval<elementwise,"));
  kax::Array<float, 2> yl(40, 256);
  {
    launch_counter counter;
    yl = kax::vmap(normalize)(L);
    REQUIRE(counter.kernels == 1);
  }
  REQUIRE(yl(39, 255) == Approx(1.0f / 256));
  REQUIRE(kax_test::starts_with(kax::plan_of(kax::vmap(normalize)(X)), "2 kernels, 1 temporary"));
  // The seed over rows of 256: each batch row's dot and then its output row, in one kernel.
  const kax::Array<float, 2> S = kax::ones<float>(40, 256);
  const kax::Array<float, 1> v = kax::ones<float>(256);
  const std::string seed = kax::plan_of(kax::vmap(f, kax::in_axes(0, kax::none))(S, v));
  INFO(seed);
  REQUIRE(kax_test::starts_with(seed, "1 kernel, 1 temporary"));
  REQUIRE(contains(seed, "per row: kax::gemv<float32> row -> kax::eval<elementwise,strided,float32,rank2>)"));
  {
    launch_counter counter;
    yl = kax::vmap(f, kax::in_axes(0, kax::none))(S, v);
    REQUIRE(counter.kernels == 1);
  }
  REQUIRE(yl(39, 255) == Approx(256 + std::sin(1.0f)));
  // The same dot node read twice (one stage buffer): still one kernel, each dot computed once.
  const auto twice = [](auto x, auto w) {
    const auto d = kax::dot(x, w);
    return d * kax::sin(x) + d;
  };
  REQUIRE(kax_test::starts_with(kax::plan_of(kax::vmap(twice, kax::in_axes(0, kax::none))(S, v)), "1 kernel, 1 temporary"));
  {
    launch_counter counter;
    yl = kax::vmap(twice, kax::in_axes(0, kax::none))(S, v);
    REQUIRE(counter.kernels == 1);
  }
  REQUIRE(yl(17, 3) == Approx(256 * std::sin(1.0f) + 256));
  // Rows of more than 4096 floats read by the dot keep the staged plan (they leave L1).
  const kax::Array<float, 2> S8 = kax::ones<float>(4, 8192);
  const kax::Array<float, 1> v8 = kax::ones<float>(8192);
  const std::string seed8 = kax::plan_of(kax::vmap(f, kax::in_axes(0, kax::none))(S8, v8));
  INFO(seed8);
  REQUIRE(kax_test::starts_with(seed8, "2 kernels, 1 temporary"));
  REQUIRE(contains(seed8, "kax::gemv<float32> (RangePolicy, 4 rows of 8192)"));
  // A stage that does not run row by row (a batched GEMM) keeps the staged plan.
  const kax::Array<float, 3> Z = kax::ones<float>(8, 20, 20);
  const std::string gemm = kax::plan_of(kax::vmap([](auto a) { return kax::matmul(a, a) + 1.0f; })(Z));
  INFO(gemm);
  REQUIRE(kax_test::starts_with(gemm, "2 kernels, 1 temporary"));
  REQUIRE(contains(gemm, "kax::gemm<float32>"));
  // A batched matmul is one batched GEMM.
  const kax::Array<float, 3> A = kax::ones<float>(8, 16, 16);
  const std::string mm = kax::plan_of(kax::vmap([](auto a, auto b) { return kax::matmul(a, b); })(A, A));
  INFO(mm);
  REQUIRE(contains(mm, "8 batches of 16x16 @ 16x16"));
}

TEST_CASE("vmap reports inconsistent mapped sizes with every argument's axis and shape", "[vmap][errors]") {
  const kax::Array<float, 2> a = kax::zeros<float>(3, 2);
  const kax::Array<float, 1> b = kax::zeros<float>(4);
  auto f = kax::vmap([](auto x, auto y) { return kax::sum(x) + y; });
  try {
    (void)f(a, b);
    FAIL("expected kax::shape_error");
  } catch (const kax::shape_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    REQUIRE(contains(msg, "vmap got inconsistent sizes for array axes to be mapped"));
    REQUIRE(contains(msg, "axis 0 of argument 0, of shape (3, 2), has size 3"));
    REQUIRE(contains(msg, "axis 0 of argument 1, of shape (4,), has size 4"));
  }
  // axis_size that disagrees with the mapped axes is reported too.
  REQUIRE_THROWS_WITH(kax::vmap([](auto x) { return x; }, kax::axis_size(5))(b),
                      Catch::Contains("kax::axis_size is 5") && Catch::Contains("has size 4"));
}

TEST_CASE("vmap rejects in_axes outside the argument's rank and calls without a mapped axis", "[vmap][errors]") {
  const kax::Array<float, 2> a = kax::zeros<float>(3, 4);
  auto id = [](auto x) { return x; };
  REQUIRE_THROWS_AS(kax::vmap(id, kax::in_axes(2))(a), kax::axis_error);
  REQUIRE_THROWS_WITH(kax::vmap(id, kax::in_axes(2))(a),
                      Catch::Contains("along axis 2, which implies that its rank should be at least 3, but is only 2") &&
                          Catch::Contains("(3, 4)"));
  REQUIRE_THROWS_AS(kax::vmap(id, kax::in_axes(-3))(a), kax::axis_error);
  // A scalar cannot be mapped.
  REQUIRE_THROWS_AS(kax::vmap([](auto s) { return s; })(2.0f), kax::axis_error);
  // Nothing mapped and no axis_size.
  REQUIRE_THROWS_WITH(kax::vmap(id, kax::in_axes(kax::none))(a),
                      Catch::Contains("at least one non-none value in in_axes"));
  // out_axes beyond the result's rank.
  REQUIRE_THROWS_AS(kax::vmap(id, kax::out_axes(3))(a), kax::axis_error);
  // Shape errors inside f show the per-example shapes, as JAX's do.
  REQUIRE_THROWS_WITH(kax::vmap([](auto x, auto y) { return x + y; }, kax::in_axes(0, kax::none))(a, kax::zeros<float>(3)),
                      Catch::Contains("(4,) (3,)"));
}

TEST_CASE("a batch of zero examples gives empty results", "[vmap]") {
  const kax::Array<float, 2> e = kax::zeros<float>(0, 3);
  kax::Array<float, 2> r = kax::vmap([](auto x) { return x * 2 + 1; })(e);
  REQUIRE(r.extents() == kax::shape<2>{0, 3});
  kax::Array<float, 1> s = kax::vmap([](auto x) { return kax::sum(x); })(e);
  REQUIRE(s.extents() == kax::shape<1>{0});
}

TEST_CASE("vmap batches concatenate and stack, broadcasting unmapped operands", "[vmap]") {
  const auto x = x23();
  const auto c = kax::from(std::vector<float>{-1, -2});
  kax::Array<float, 2> cat = kax::vmap([](auto r, auto k) { return kax::concatenate(std::make_tuple(r, k)); },
                                       kax::in_axes(0, kax::none))(x, c);
  require_values(cat, {2, 5}, {0, 1, 2, -1, -2, 3, 4, 5, -1, -2});
  kax::Array<float, 3> st = kax::vmap([](auto r) { return kax::stack(std::make_tuple(r, r * 10), -1); })(x);
  require_values(st, {2, 3, 2}, {0, 0, 1, 10, 2, 20, 3, 30, 4, 40, 5, 50});
}

TEST_CASE("the row-fused plan gives the staged plan's values, also for unbatched stages and aliasing", "[vmap][fusion]") {
  // Rows of different lengths and batch sizes around the block size; x(b, d) = sin(b + 0.1 d).
  // The row-fused plan runs for one batched reduction over rows of at least 256 (D = 300).
  for (const std::size_t B : {2, 3, 17, 1000}) {
    for (const std::size_t D : {1, 7, 300}) {
      kax::Array<double, 2> X(B, D);
      kax::Array<double, 1> w(D);
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t d = 0; d < D; ++d) X(b, d) = std::sin(double(b) + 0.1 * double(d));
      for (std::size_t d = 0; d < D; ++d) w(d) = 1.0 / double(d + 1);
      // One batched reduction and an unbatched one (sum(w), computed once before the kernel),
      // written through the strided row loop.
      auto f1 = [](auto x, auto v) { return x / kax::sum(kax::exp(x)) + kax::sum(v); };
      const auto e1 = kax::vmap(f1, kax::in_axes(0, kax::none))(X, w);
      REQUIRE(contains(kax::plan_of(e1), "kax::eval<batch rows") == (D >= 256));
      const kax::Array<double, 2> Y1 = e1;
      // The same reduction as the whole output row, (B, D) from examples of shape (D, 3): the
      // flat row loop.
      const kax::Array<double, 3> X3 = kax::reshape(X, {long(B), long(D), 1}) *
                                       kax::from(std::vector<double>{1, -2, 3}, kax::shape<3>{1, 1, 3});
      const auto e3 = kax::vmap([](auto m) { return kax::sum(m, -1) * 2.0 + 1.0; })(X3);
      REQUIRE(contains(kax::plan_of(e3), "kax::eval<batch rows") == (D >= 256));
      REQUIRE(contains(kax::plan_of(e3), "-> kax::eval<elementwise,flat,float64,rank2>)") == (D >= 256));
      const kax::Array<double, 2> Y3 = e3;
      // A batched dot, a batched softmax, and an unbatched stage (sum(w)) computed once before.
      auto f = [](auto x, auto v) { return kax::dot(x, v) * kax::nn::softmax(x) + kax::sum(v); };
      kax::Array<double, 2> Y = kax::vmap(f, kax::in_axes(0, kax::none))(X, w);
      double sw = 0;
      for (std::size_t d = 0; d < D; ++d) sw += w(d);
      for (std::size_t b = 0; b < B; b += (B > 20 ? 37 : 1)) {
        double dt = 0, mx = -1e300, se = 0;
        for (std::size_t d = 0; d < D; ++d) {
          dt += X(b, d) * w(d);
          mx = std::max(mx, X(b, d));
        }
        for (std::size_t d = 0; d < D; ++d) se += std::exp(X(b, d) - mx);
        double sx = 0;
        for (std::size_t d = 0; d < D; ++d) sx += std::exp(X(b, d));
        for (std::size_t d = 0; d < D; ++d) {
          INFO("B " << B << " D " << D << " b " << b << " d " << d);
          REQUIRE(Y(b, d) == Approx(dt * std::exp(X(b, d) - mx) / se + sw).epsilon(1e-12));
          REQUIRE(Y1(b, d) == Approx(X(b, d) / sx + sw).epsilon(1e-12));
          REQUIRE(Y3(b, d) == Approx(4 * X(b, d) + 1).margin(1e-12));
        }
      }
      // A batched matrix-vector product computed row by row just before each output row (D = 300),
      // into examples of shape (D,) and of shape (3, D) (three output rows per batch row), and in
      // place, where the destination is the product's matrix: the staged plan runs.
      auto seed = [](auto x, auto v) { return kax::dot(x, v) + kax::sin(x); };
      const auto es = kax::vmap(seed, kax::in_axes(0, kax::none))(X, w);
      REQUIRE(contains(kax::plan_of(es), "kax::gemv<float64> row ->") == (D >= 256));
      const kax::Array<double, 2> Ys = es;
      const kax::Array<double, 2> M3 = kax::from(std::vector<double>{1, -2, 3}, kax::shape<2>{3, 1}) * kax::ones<double>(3, D);
      auto scaled = [](auto x, auto v, auto m) { return kax::dot(x, v) * m - x; };
      const auto e33 = kax::vmap(scaled, kax::in_axes(0, kax::none, kax::none))(X, w, M3);
      REQUIRE(contains(kax::plan_of(e33), "kax::gemv<float64> row ->") == (D >= 256));
      const kax::Array<double, 3> Y33 = e33;
      kax::Array<double, 2> Xs = kax::vmap([](auto x) { return x * 1.0; })(X);
      Xs = kax::vmap(seed, kax::in_axes(0, kax::none))(Xs, w);
      for (std::size_t b = 0; b < B; b += (B > 20 ? 37 : 1)) {
        double dt = 0;
        for (std::size_t d = 0; d < D; ++d) dt += X(b, d) * w(d);
        for (std::size_t d = 0; d < D; ++d) {
          INFO("B " << B << " D " << D << " b " << b << " d " << d);
          REQUIRE(Ys(b, d) == Approx(dt + std::sin(X(b, d))).epsilon(1e-12));
          REQUIRE(Xs(b, d) == Approx(Ys(b, d)).epsilon(1e-12));
          for (std::size_t k = 0; k < 3; ++k) REQUIRE(Y33(b, k, d) == Approx(dt * M3(k, d) - X(b, d)).margin(1e-12));
        }
      }
      // A reduction over the example's first axis, row by row as well.
      if (D > 1) {
        kax::Array<double, 3> Z3 = kax::reshape(X, {long(B), 1, long(D)}) * kax::from(std::vector<double>{1, -2, 3}, kax::shape<3>{1, 3, 1});
        kax::Array<double, 3> c = kax::vmap([](auto e) { return e - kax::mean(e, 0); })(Z3);
        for (std::size_t b = 0; b < B; b += (B > 20 ? 37 : 1))
          for (std::size_t d = 0; d < D; ++d) {
            const double m = (1 - 2 + 3) * X(b, d) / 3;
            REQUIRE(c(b, 0, d) == Approx(X(b, d) - m).margin(1e-12));
            REQUIRE(c(b, 1, d) == Approx(-2 * X(b, d) - m).margin(1e-12));
          }
      }
      // A scalar per example from two stages, read through a transpose (not flat): each batch row
      // writes one element (regression: the row-fused kernel, which no longer takes rank-1
      // results, once wrote nothing for them).
      kax::Array<double, 2> XT = kax::transpose(X);
      kax::Array<double, 1> spread = kax::vmap([](auto x) { return kax::max(x) - kax::min(x); }, kax::in_axes(1))(XT);
      for (std::size_t b = 0; b < B; ++b) {
        double hi = -1e300, lo = 1e300;
        for (std::size_t d = 0; d < D; ++d) hi = std::max(hi, X(b, d)), lo = std::min(lo, X(b, d));
        REQUIRE(spread(b) == hi - lo);
      }
      // The destination is an input of a stage (M = X inside every row's product): the staged plan
      // runs, computing every row's product before writing any row.
      auto h = [](auto x, auto m) { return kax::sum(m * x, 0) + kax::max(x); };
      kax::Array<double, 2> want_h = kax::vmap(h, kax::in_axes(0, kax::none))(X, X);
      kax::Array<double, 2> X2 = kax::vmap([](auto x) { return x * 1.0; })(X);
      X2 = kax::vmap(h, kax::in_axes(0, kax::none))(X2, X2);
      REQUIRE(kax::to_vector(X2) == kax::to_vector(want_h));
      // In place, one batched reduction: the destination is an input, so the staged plan (with its
      // alias check) runs rather than the row-fused one.
      auto g = [](auto x) { return x - kax::max(x); };
      kax::Array<double, 2> want = kax::vmap(g)(X);
      X = kax::vmap(g)(X);
      REQUIRE(kax::to_vector(X) == kax::to_vector(want));
    }
  }
}

TEST_CASE("vmap of a reduction of a per-example scalar (a sum over no axes)", "[vmap]") {
  // jax.vmap(lambda v: jnp.sum(v * 2))(jnp.array([1., 2., 3.])) == [2, 4, 6]: once a kernel that
  // reduced nothing and wrote nothing.
  const kax::Array<float, 1> y = kax::from(std::vector<float>{1, 2, 3}, kax::shape<1>{3});
  const kax::Array<float, 1> got = kax::vmap([](const auto& v) { return kax::sum(v * 2.0f); })(y);
  require_values(got, kax::shape<1>{3}, {2, 4, 6});
}
