// kax::concatenate and kax::stack against a naive reference written here (row-major index
// arithmetic over plain vectors), plus their errors and the fusion rule.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

using kax_test::launch_counter;

// A host copy of an array: its shape and its elements in row-major order, as doubles.
struct host_array {
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

// Element k of an operand made with `seed`: distinct integers, exact in every dtype used here.
double value_at(std::size_t k, int seed) { return static_cast<double>(seed * 1000 + static_cast<int>(k)); }

template <class T, std::size_t R>
kax::Array<T, R> make(const kax::shape<R>& s, int seed) {
  std::vector<T> v(kax::size_of(s));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<T>(value_at(k, seed));
  return kax::from<T, R>(v, s);
}

template <class T, std::size_t R>
host_array host(const kax::Array<T, R>& a) {
  host_array h;
  const auto s = a.extents();
  h.shape.assign(s.begin(), s.end());
  const auto c = kax::to_host(a);  // a fresh row-major copy
  for (std::size_t k = 0; k < c.size(); ++k) h.values.push_back(static_cast<double>(c.data()[k]));
  return h;
}

// numpy.concatenate, by brute force: for each output element, find the operand that holds it.
host_array ref_concatenate(const std::vector<host_array>& ops, std::size_t axis) {
  host_array out;
  out.shape = ops[0].shape;
  out.shape[axis] = 0;
  for (const auto& o : ops) out.shape[axis] += o.shape[axis];
  std::size_t n = 1;
  for (std::size_t e : out.shape) n *= e;
  const std::size_t rank = out.shape.size();
  for (std::size_t lin = 0; lin < n; ++lin) {
    std::vector<std::size_t> idx(rank);
    std::size_t rest = lin;
    for (std::size_t d = rank; d-- > 0;) {
      idx[d] = rest % out.shape[d];
      rest /= out.shape[d];
    }
    std::size_t k = 0;
    while (idx[axis] >= ops[k].shape[axis]) idx[axis] -= ops[k++].shape[axis];
    std::size_t off = 0;
    for (std::size_t d = 0; d < rank; ++d) off = off * ops[k].shape[d] + idx[d];
    out.values.push_back(ops[k].values[off]);
  }
  return out;
}

// numpy.stack: the same elements with a unit axis inserted, then concatenated.
host_array ref_stack(std::vector<host_array> ops, std::size_t axis) {
  for (auto& o : ops) o.shape.insert(o.shape.begin() + static_cast<long>(axis), 1);
  return ref_concatenate(ops, axis);
}

template <class T, std::size_t R>
void require_equal(const kax::Array<T, R>& y, const host_array& ref) {
  const host_array got = host(y);
  REQUIRE(got.shape == ref.shape);
  REQUIRE(got.values == ref.values);
}

}  // namespace

TEST_CASE("concatenate joins rank-1 arrays end to end", "[expr][concatenate]") {
  const auto a = kax::from<double, 1>({1, 2, 3}, {3});
  const auto b = kax::from<double, 1>({4, 5}, {2});
  kax::Array<double, 1> y = kax::concatenate({a, b});
  REQUIRE(y.extents() == kax::shape<1>{5});
  for (std::size_t k = 0; k < 5; ++k) REQUIRE(y(k) == static_cast<double>(k + 1));
  kax::Array<double, 1> z = kax::concatenate({b, a, b}, -1);
  REQUIRE(host(z).values == std::vector<double>{4, 5, 1, 2, 3, 4, 5});
}

TEST_CASE("concatenate along axis 0, 1 and -1 of rank-2 arrays matches a naive loop",
          "[expr][concatenate]") {
  const auto a = make<double, 2>({2, 3}, 1);
  const auto b = make<double, 2>({4, 3}, 2);
  const auto c = make<double, 2>({2, 5}, 3);
  kax::Array<double, 2> y0 = kax::concatenate({a, b}, 0);
  require_equal(y0, ref_concatenate({host(a), host(b)}, 0));
  kax::Array<double, 2> y1 = kax::concatenate({a, c}, 1);
  require_equal(y1, ref_concatenate({host(a), host(c)}, 1));
  kax::Array<double, 2> ym1 = kax::concatenate({c, a}, -1);
  require_equal(ym1, ref_concatenate({host(c), host(a)}, 1));
  // Long rows split into several kernel pieces; the boundary falls inside a piece.
  const auto p = make<float, 2>({7, 700}, 4);
  const auto q = make<float, 2>({7, 333}, 5);
  kax::Array<float, 2> pq = kax::concatenate({p, q}, 1);
  require_equal(pq, ref_concatenate({host(p), host(q)}, 1));
}

TEST_CASE("concatenate of rank-3 arrays matches a naive loop along every axis",
          "[expr][concatenate]") {
  const auto a = make<std::int32_t, 3>({2, 3, 4}, 1);
  const std::array<kax::shape<3>, 3> other{kax::shape<3>{5, 3, 4}, kax::shape<3>{2, 1, 4},
                                           kax::shape<3>{2, 3, 6}};
  for (std::size_t axis = 0; axis < 3; ++axis) {
    const auto b = make<std::int32_t, 3>(other[axis], 2);
    kax::Array<std::int32_t, 3> y = kax::concatenate({a, b, a}, static_cast<long>(axis));
    require_equal(y, ref_concatenate({host(a), host(b), host(a)}, axis));
    kax::Array<std::int32_t, 3> z = kax::concatenate({b, a}, static_cast<long>(axis) - 3);
    require_equal(z, ref_concatenate({host(b), host(a)}, axis));
  }
}

TEST_CASE("concatenate promotes mixed dtypes as jnp.concatenate does", "[expr][concatenate]") {
  const auto i = make<std::int32_t, 2>({2, 3}, 1);
  const auto f = make<float, 2>({1, 3}, 2);
  const auto e = kax::concatenate(std::make_tuple(i, f), 0);
  static_assert(std::is_same_v<kax::value_type_of<decltype(e)>, float>);
  kax::Array<float, 2> y = e;
  require_equal(y, ref_concatenate({host(i), host(f)}, 0));
  const auto l = make<std::int64_t, 2>({2, 2}, 3);
  const auto m = kax::zeros<bool>(2, 1);
  const auto e2 = kax::concatenate(std::make_tuple(m, i, l), 1);
  static_assert(std::is_same_v<kax::value_type_of<decltype(e2)>, std::int64_t>);
  kax::Array<std::int64_t, 2> y2 = e2;
  require_equal(y2, ref_concatenate({host(m), host(i), host(l)}, 1));
  // A concatenation feeding arithmetic promotes like any other operand.
  kax::Array<double, 2> y3 = kax::concatenate(std::make_tuple(i, f), 0) * 0.5;
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 3; ++c) REQUIRE(y3(r, c) == static_cast<double>(y(r, c)) * 0.5);
}

TEST_CASE("concatenate accepts expressions, std::array and std::tie operands",
          "[expr][concatenate]") {
  const auto a = make<double, 2>({3, 4}, 1);
  const auto b = make<double, 2>({3, 4}, 2);
  const auto c = make<double, 2>({3, 2}, 3);
  host_array ab = host(a);
  const host_array hb = host(b);
  for (std::size_t k = 0; k < ab.values.size(); ++k) ab.values[k] = ab.values[k] * 2 + hb.values[k];
  kax::Array<double, 2> y = kax::concatenate(std::make_tuple(a * 2 + b, c), 1);
  require_equal(y, ref_concatenate({ab, host(c)}, 1));
  kax::Array<double, 2> y0 = kax::concatenate(std::make_tuple(c, a * 2 + b, c), -1);
  require_equal(y0, ref_concatenate({host(c), ab, host(c)}, 1));
  kax::Array<double, 2> z = kax::concatenate(std::array<kax::Array<double, 2>, 3>{a, b, a}, 0);
  require_equal(z, ref_concatenate({host(a), host(b), host(a)}, 0));
  kax::Array<double, 2> t = kax::concatenate(std::tie(a, c), 1);
  require_equal(t, ref_concatenate({host(a), host(c)}, 1));
  // Operands of one node type use the row path, transposed (strided) leaves included.
  kax::Array<double, 2> tt = kax::concatenate({kax::transpose(a), kax::transpose(b)}, 1);
  host_array at{{4, 3}, {}}, bt{{4, 3}, {}};
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      at.values.push_back(a(j, i));
      bt.values.push_back(b(j, i));
    }
  require_equal(tt, ref_concatenate({at, bt}, 1));
  kax::Array<double, 2> tt0 = kax::concatenate({kax::transpose(a), kax::transpose(b)}, 0);
  require_equal(tt0, ref_concatenate({at, bt}, 0));
}

TEST_CASE("a concatenation node can be rebuilt from its operands and normalized axis",
          "[expr][concatenate]") {
  const auto a = make<double, 2>({2, 3}, 1);
  const auto b = make<double, 2>({2, 4}, 2);
  const auto e = kax::concatenate({a, b}, -1);
  REQUIRE(e.axis == 1);
  REQUIRE(e.extents() == kax::shape<2>{2, 7});
  const decltype(e) rebuilt(e.args, e.axis);
  kax::Array<double, 2> y = rebuilt;
  require_equal(y, ref_concatenate({host(a), host(b)}, 1));
  REQUIRE_THROWS_AS(decltype(e)(e.args, 2), kax::axis_error);
  REQUIRE_THROWS_AS(decltype(e)(e.args, 0), kax::shape_error);
}

TEST_CASE("stack inserts a new axis at 0, 1 and -1", "[expr][stack]") {
  const auto a = make<double, 2>({3, 4}, 1);
  const auto b = make<double, 2>({3, 4}, 2);
  const auto c = make<double, 2>({3, 4}, 3);
  kax::Array<double, 3> s0 = kax::stack({a, b, c});
  REQUIRE(s0.extents() == kax::shape<3>{3, 3, 4});
  require_equal(s0, ref_stack({host(a), host(b), host(c)}, 0));
  kax::Array<double, 3> s1 = kax::stack({a, b, c}, 1);
  REQUIRE(s1.extents() == kax::shape<3>{3, 3, 4});
  require_equal(s1, ref_stack({host(a), host(b), host(c)}, 1));
  kax::Array<double, 3> sm1 = kax::stack({a, b}, -1);
  REQUIRE(sm1.extents() == kax::shape<3>{3, 4, 2});
  require_equal(sm1, ref_stack({host(a), host(b)}, 2));
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      REQUIRE(sm1(i, j, 0) == a(i, j));
      REQUIRE(sm1(i, j, 1) == b(i, j));
    }
  // Rank-1 operands, mixed operand types, and a std::array.
  const auto v = make<float, 1>({5}, 4);
  const auto w = make<std::int32_t, 1>({5}, 5);
  const auto e = kax::stack(std::make_tuple(v, w * 2), 1);
  static_assert(std::is_same_v<kax::value_type_of<decltype(e)>, float>);
  kax::Array<float, 2> vw = e;
  host_array w2 = host(w);
  for (auto& x : w2.values) x *= 2;
  require_equal(vw, ref_stack({host(v), w2}, 1));
  kax::Array<float, 2> vv = kax::stack(std::array<kax::Array<float, 1>, 2>{v, v}, -2);
  require_equal(vv, ref_stack({host(v), host(v)}, 0));
}

TEST_CASE("concatenate and stack handle zero-size operands", "[expr][concatenate][stack]") {
  const auto empty = kax::zeros<double>(0, 3);
  const auto a = make<double, 2>({2, 3}, 1);
  kax::Array<double, 2> y = kax::concatenate({empty, a, empty}, 0);
  require_equal(y, ref_concatenate({host(empty), host(a), host(empty)}, 0));
  kax::Array<double, 2> e2 = kax::concatenate({empty, empty}, 0);
  REQUIRE(e2.extents() == kax::shape<2>{0, 3});
  const auto thin = kax::zeros<double>(2, 0);
  kax::Array<double, 2> z = kax::concatenate({thin, a, thin}, 1);
  require_equal(z, ref_concatenate({host(thin), host(a), host(thin)}, 1));
  kax::Array<double, 3> s = kax::stack({empty, empty}, 1);
  REQUIRE(s.extents() == kax::shape<3>{0, 2, 3});
  // Zero-size operands still have to agree off the axis.
  REQUIRE_THROWS_AS(kax::concatenate({empty, kax::zeros<double>(0, 4)}, 0), kax::shape_error);
}

TEST_CASE("a concatenation broadcasts like any operand, empty leading segments included",
          "[expr][concatenate]") {
  const auto col = kax::concatenate({make<double, 2>({2, 1}, 1), make<double, 2>({3, 1}, 2)}, 0);
  const auto m = make<double, 2>({5, 4}, 3);
  kax::Array<double, 2> y = col + m;
  // Last axis of extent 1 made of an empty segment and a one-element segment.
  const auto last = kax::concatenate({kax::zeros<double>(5, 0), make<double, 2>({5, 1}, 4)}, 1);
  kax::Array<double, 2> z = last * m;
  const host_array hc = host(kax::Array<double, 2>(col)), hl = host(kax::Array<double, 2>(last));
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      REQUIRE(y(i, j) == hc.values[i] + m(i, j));
      REQUIRE(z(i, j) == hl.values[i] * m(i, j));
    }
  REQUIRE(hc.values == std::vector<double>{1000, 1001, 2000, 2001, 2002});
  REQUIRE(hl.values == std::vector<double>{4000, 4001, 4002, 4003, 4004});
  // expand_dims(..., -1) reads each concatenated row at one element for a whole output row.
  const auto a = make<double, 2>({3, 4}, 5);
  const auto b = make<double, 2>({3, 2}, 6);
  kax::Array<double, 3> e1 = kax::expand_dims(kax::concatenate({a, b}, 1), -1) + kax::zeros<double>(3, 6, 2);
  kax::Array<double, 3> e0 = kax::expand_dims(kax::concatenate({a, a}, 0), -1) + kax::zeros<double>(6, 4, 2);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < 2; ++k) {
      for (std::size_t j = 0; j < 6; ++j) REQUIRE(e1(i, j, k) == (j < 4 ? a(i, j) : b(i, j - 4)));
      for (std::size_t j = 0; j < 4; ++j) REQUIRE(e0(i + 3, j, k) == a(i, j));
    }
}

TEST_CASE("concatenate errors show every shape, and bad axes throw axis_error",
          "[expr][concatenate][errors]") {
  const auto a = kax::zeros<double>(2, 3);
  const auto b = kax::zeros<double>(2, 4);
  REQUIRE_THROWS_AS(kax::concatenate({a, b}, 0), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::concatenate({a, b}, 0),
                      Catch::Contains("kax::concatenate") && Catch::Contains("along dimension 1") &&
                          Catch::Contains("the array at index 0 has size 3") &&
                          Catch::Contains("the array at index 1 has size 4") &&
                          Catch::Contains("(2, 3)") && Catch::Contains("(2, 4)"));
  REQUIRE_NOTHROW(kax::concatenate({a, b}, 1));
  REQUIRE_THROWS_WITH(kax::concatenate({a, a, kax::zeros<double>(5, 2)}, 1),
                      Catch::Contains("index 2") && Catch::Contains("(5, 2)"));
  REQUIRE_THROWS_AS(kax::concatenate({a, a}, 2), kax::axis_error);
  REQUIRE_THROWS_AS(kax::concatenate({a, a}, -3), kax::axis_error);
  REQUIRE_THROWS_WITH(kax::concatenate({a, a}, 2), Catch::Contains("kax::concatenate"));
}

TEST_CASE("stack requires equal shapes and normalizes its axis against rank + 1",
          "[expr][stack][errors]") {
  const auto a = kax::zeros<double>(2, 3);
  const auto b = kax::zeros<double>(3, 2);
  REQUIRE_THROWS_AS(kax::stack({a, b}), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::stack({a, a, b}),
                      Catch::Contains("kax::stack") && Catch::Contains("same shape") &&
                          Catch::Contains("(2, 3)") && Catch::Contains("(3, 2)"));
  REQUIRE_NOTHROW(kax::stack({a, a}, 2));
  REQUIRE_NOTHROW(kax::stack({a, a}, -3));
  REQUIRE_THROWS_AS(kax::stack({a, a}, 3), kax::axis_error);
  REQUIRE_THROWS_AS(kax::stack({a, a}, -4), kax::axis_error);
  REQUIRE_THROWS_WITH(kax::stack({a, a}, 3), Catch::Contains("kax::stack"));
}

TEST_CASE("concatenate and stack fuse into their consumer's kernel", "[expr][concatenate][fusion]") {
  const auto a = make<double, 2>({64, 300}, 1);
  const auto b = make<double, 2>({64, 100}, 2);
  const auto e = kax::concatenate({a, b}, 1) + 1;
  REQUIRE_THAT(kax::plan_of(e), Catch::StartsWith("1 kernel, 0 temporaries"));
  REQUIRE_THAT(kax::plan_of(kax::stack({a, a}, 1) * 2.0), Catch::StartsWith("1 kernel, 0 temporaries"));
  auto y = kax::zeros<double>(64, 400);
  {
    launch_counter count;
    y = e;
    REQUIRE(count.kernels == 1);
    REQUIRE(count.allocations == 0);
  }
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t j = 0; j < 400; ++j) REQUIRE(y(i, j) == (j < 300 ? a(i, j) : b(i, j - 300)) + 1);
}

TEST_CASE("concatenate along a leading axis of contiguous operands evaluates flat",
          "[expr][concatenate][fusion]") {
  const auto a = make<float, 2>({300, 50}, 1);
  const auto b = make<float, 2>({200, 50}, 2);
  const auto c = make<float, 2>({500, 50}, 3);
  REQUIRE(kax::concatenate({a, b}, 0).is_flat());
  REQUIRE_FALSE(kax::concatenate({a, a}, 1).is_flat());
  REQUIRE(kax::stack({a, a}, 0).is_flat());
  REQUIRE_FALSE(kax::concatenate({kax::transpose(a), kax::transpose(a)}, 0).is_flat());
  const auto e = kax::concatenate({a, b}, 0) * c;
  REQUIRE_THAT(kax::plan_of(e), Catch::Contains("flat"));
  kax::Array<float, 2> y = e;
  for (std::size_t i = 0; i < 500; ++i)
    for (std::size_t j = 0; j < 50; ++j) REQUIRE(y(i, j) == (i < 300 ? a(i, j) : b(i - 300, j)) * c(i, j));
  // A flat concatenation inside a reshape (which reads it by linear index).
  kax::Array<float, 1> r = kax::reshape(kax::concatenate({a, b}, 0), {-1});
  REQUIRE(r(299 * 50 + 7) == a(299, 7));
  REQUIRE(r(300 * 50 + 7) == b(0, 7));
}

TEST_CASE("concatenate reads reductions once and is safe when the destination is an operand",
          "[expr][concatenate][alias]") {
  const auto a = make<double, 2>({4, 6}, 1);
  const auto s = kax::concatenate(std::make_tuple(kax::sum(a, 1), kax::ravel(a)), 0);
  kax::Array<double, 1> y = s;
  REQUIRE(y.extents() == kax::shape<1>{28});
  for (std::size_t i = 0; i < 4; ++i) {
    double t = 0;
    for (std::size_t j = 0; j < 6; ++j) t += a(i, j);
    REQUIRE(y(i) == t);
  }
  for (std::size_t k = 0; k < 24; ++k) REQUIRE(y(4 + k) == a(k / 6, k % 6));
  REQUIRE_THAT(kax::plan_of(s), Catch::StartsWith("2 kernels, 1 temporary"));
  // Rotating rows in place: every output row reads a different row of the destination.
  auto m = kax::copy(a);
  m = kax::concatenate({kax::slice(m, {kax::range(1, std::nullopt), kax::colon}),
                        kax::slice(m, {kax::range(std::nullopt, 1), kax::colon})},
                       0);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 6; ++j) REQUIRE(m(i, j) == a((i + 1) % 4, j));
  // A reduction over a concatenation.
  kax::Array<double, 1> cs = kax::sum(kax::concatenate({a, a}, 1), 0);
  for (std::size_t j = 0; j < 12; ++j) {
    double t = 0;
    for (std::size_t i = 0; i < 4; ++i) t += a(i, j % 6);
    REQUIRE(cs(j) == t);
  }
}
