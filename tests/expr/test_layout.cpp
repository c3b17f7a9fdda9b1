// Layout ops (transpose, reshape, ravel, expand_dims, squeeze, broadcast_to, slice) against NumPy
// data files (scripts/gen_test_data.py), Python's slice table and naive loops.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "data_file.hpp"
#include "kax/kax.hpp"

namespace {

// x of shape (2, 3, 4) with NumPy-generated values.
kax::Array<double, 3> layout_x() { return kax_test::load<double, 3>("layout_x"); }

// An (r, c) array whose element (i, j) is 100*i + j: easy to check by hand.
kax::Array<double, 2> grid(std::size_t r, std::size_t c) {
  std::vector<double> v;
  for (std::size_t i = 0; i < r; ++i)
    for (std::size_t j = 0; j < c; ++j) v.push_back(100.0 * i + j);
  return kax::from<double, 2>(v, {r, c});
}

constexpr auto none = std::nullopt;

}  // namespace

TEST_CASE("transpose reverses axes by default and follows a permutation with negative axes",
          "[expr][layout]") {
  const auto x = layout_x();
  kax::Array<double, 3> t = kax::transpose(x);
  kax_test::require_matches(t, "transpose_default");
  kax::Array<double, 3> p = kax::transpose(x, {1, 2, 0});
  kax_test::require_matches(p, "transpose_1_2_0");
  kax::Array<double, 3> q = kax::transpose(x, {-1, 0, -2});
  kax_test::require_matches(q, "transpose_m1_0_m2");
  // A 2-d transpose against a naive loop, big enough for several kernel pieces.
  const auto g = grid(37, 300);
  kax::Array<double, 2> gt = kax::transpose(g);
  REQUIRE(gt.extents() == kax::shape<2>{300, 37});
  for (std::size_t i = 0; i < 300; ++i)
    for (std::size_t j = 0; j < 37; ++j) REQUIRE(gt(i, j) == 100.0 * j + i);
}

TEST_CASE("transpose rejects repeated or out-of-range axes with axis_error", "[expr][layout]") {
  const auto x = layout_x();
  REQUIRE_THROWS_AS(kax::transpose(x, {0, 0, 1}), kax::axis_error);
  REQUIRE_THROWS_AS(kax::transpose(x, {0, 1, 3}), kax::axis_error);
  REQUIRE_THROWS_AS(kax::transpose(x, {-4, 1, 2}), kax::axis_error);
  REQUIRE_THROWS_AS(kax::transpose(x, {-1, 2, 0}), kax::axis_error);  // -1 and 2 are the same axis
}

TEST_CASE("reshape keeps row-major order and infers one -1 extent", "[expr][layout]") {
  const auto x = layout_x();
  kax::Array<double, 2> a = kax::reshape(x, {4, -1});
  REQUIRE(a.extents() == kax::shape<2>{4, 6});
  kax_test::require_matches(a, "reshape_4_m1");
  kax::Array<double, 4> b = kax::reshape(x, {-1, 3, 2, 2});
  kax_test::require_matches(b, "reshape_m1_3_2_2");
  // Reshaping a transposed (non-contiguous) operand reads it in its logical row-major order.
  kax::Array<double, 2> c = kax::reshape(kax::transpose(x), {6, -1});
  kax_test::require_matches(c, "reshape_of_transpose_6_m1");
  kax::Array<double, 1> r = kax::ravel(x);
  REQUIRE(kax::to_vector(r) == kax::to_vector(x));
  const auto g = grid(3, 5);
  kax::Array<double, 1> rt = kax::ravel(kax::transpose(g));
  for (std::size_t k = 0; k < 15; ++k) REQUIRE(rt(k) == 100.0 * (k % 3) + static_cast<double>(k / 3));
}

TEST_CASE("reshape to and from rank 0", "[expr][layout]") {
  const auto one = kax::from<double, 2>({7.5}, {1, 1});
  kax::Array<double, 0> s = kax::reshape(one, std::array<long, 0>{});
  REQUIRE(s() == 7.5);
  kax::Array<double, 3> back = kax::reshape(s, {1, 1, -1});
  REQUIRE(back.extents() == kax::shape<3>{1, 1, 1});
  REQUIRE(back(0, 0, 0) == 7.5);
  // The operand is not flat (a transpose), so the rank-0 result takes the strided path.
  kax::Array<double, 0> t = kax::reshape(kax::transpose(one), std::array<long, 0>{});
  REQUIRE(t() == 7.5);
}

TEST_CASE("reshape rejects sizes that do not match, two -1s and negative extents",
          "[expr][layout]") {
  const auto x = layout_x();
  REQUIRE_THROWS_AS(kax::reshape(x, {5, 5}), kax::shape_error);
  REQUIRE_THROWS_AS(kax::reshape(x, {5, -1}), kax::shape_error);
  REQUIRE_THROWS_AS(kax::reshape(x, {-1, -1}), kax::shape_error);
  REQUIRE_THROWS_AS(kax::reshape(x, {-2, -12}), kax::shape_error);
  REQUIRE_THROWS_AS(kax::reshape(x, {0, -1}), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::reshape(x, {5, 5}),
                      Catch::Contains("(2, 3, 4)") && Catch::Contains("(5, 5)"));
  REQUIRE_THROWS_WITH(kax::reshape(x, {-1, -1}), Catch::Contains("kax::reshape"));
}

TEST_CASE("expand_dims and squeeze insert and remove unit axes", "[expr][layout]") {
  const auto x = layout_x();
  kax::Array<double, 4> e1 = kax::expand_dims(x, 1);
  kax_test::require_matches(e1, "expand_dims_1");
  kax::Array<double, 4> em = kax::expand_dims(x, -1);
  kax_test::require_matches(em, "expand_dims_m1");
  const auto y = kax_test::load<double, 4>("layout_y");
  kax::Array<double, 2> s02 = kax::squeeze(y, std::array<long, 2>{0, 2});
  kax_test::require_matches(s02, "squeeze_0_2");
  kax::Array<double, 3> sm = kax::squeeze(y, -2);
  kax_test::require_matches(sm, "squeeze_m2");
  // Round trip through a non-flat operand.
  const auto g = grid(3, 4);
  kax::Array<double, 2> rt = kax::squeeze(kax::expand_dims(kax::transpose(g), 0), 0);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(rt(i, j) == 100.0 * j + i);
}

TEST_CASE("expand_dims(x, -1) broadcast along a new last axis reads x at the row's index",
          "[expr][layout]") {
  // The result is not flat, so the kernel evaluates rows: x's row is held at the output's
  // second-to-last index, not at x's first element.
  const auto g = grid(3, 4);  // g(i, j) = 100 i + j
  kax::Array<double, 3> r = kax::expand_dims(g, -1) + kax::zeros<double>(3, 4, 2);
  kax::Array<double, 3> t = kax::expand_dims(kax::transpose(g), -1) * kax::ones<double>(4, 3, 5);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      for (std::size_t k = 0; k < 2; ++k) REQUIRE(r(i, j, k) == 100.0 * i + j);
      for (std::size_t k = 0; k < 5; ++k) REQUIRE(t(j, i, k) == 100.0 * i + j);
    }
}

TEST_CASE("squeezing the last axis of a strided operand walks the axis that becomes the last",
          "[expr][layout]") {
  const auto g = grid(3, 4);  // g(i, j) = 100 i + j
  // g[:, 1:2] squeezed: the column g(:, 1); the operand's rows (its last axis) have one element.
  kax::Array<double, 1> col = kax::squeeze(kax::slice(g, {kax::colon, kax::range(1, 2)}), 1L);
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(col(i) == 100.0 * i + 1);
  kax::Array<double, 2> t = kax::squeeze(kax::expand_dims(kax::transpose(g), -1), -1L) + 0.0;
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(t(j, i) == 100.0 * i + j);
  // Reduced along that axis too.
  kax::Array<double, 0> s = kax::sum(kax::squeeze(kax::slice(g, {kax::colon, kax::range(2, 3)}), 1L));
  REQUIRE(s() == 300.0 + 6);
}

TEST_CASE("a generic row held by expand_dims(x, -1) stays held when broadcast", "[expr][layout]") {
  const auto v = kax::from(std::vector<double>{10, 20, 30});
  // reshape has no row evaluator of its own: its rows are generic rows.
  kax::Array<double, 2> r = kax::expand_dims(kax::reshape(kax::reshape(v, {3, 1}), {-1}), 1) + kax::zeros<double>(3, 2);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < 2; ++k) REQUIRE(r(i, k) == 10.0 * (i + 1));
}

TEST_CASE("expand_dims and squeeze reject bad axes", "[expr][layout]") {
  const auto x = layout_x();
  REQUIRE_THROWS_AS(kax::expand_dims(x, 4), kax::axis_error);
  REQUIRE_THROWS_AS(kax::expand_dims(x, -5), kax::axis_error);
  REQUIRE_NOTHROW(kax::expand_dims(x, 3));
  REQUIRE_NOTHROW(kax::expand_dims(x, -4));
  const auto y = kax_test::load<double, 4>("layout_y");
  REQUIRE_THROWS_AS(kax::squeeze(y, 4), kax::axis_error);
  REQUIRE_THROWS_AS(kax::squeeze(y, -5), kax::axis_error);
  REQUIRE_THROWS_AS(kax::squeeze(y, std::array<long, 2>{0, -4}), kax::axis_error);  // twice
  REQUIRE_THROWS_AS(kax::squeeze(y, 1), kax::shape_error);  // extent 3
  REQUIRE_THROWS_WITH(kax::squeeze(y, 1), Catch::Contains("(1, 3, 1, 4)"));
}

TEST_CASE("broadcast_to repeats an operand without copying it", "[expr][layout]") {
  const auto c4 = kax_test::load<double, 1>("bcast_c4");
  const auto a31 = kax_test::load<double, 2>("bcast_a31");
  kax::Array<double, 3> b1 = kax::broadcast_to(c4, {2, 3, 4});
  kax_test::require_matches(b1, "broadcast_to_c4_234");
  kax::Array<double, 3> b2 = kax::broadcast_to(a31, kax::shape<3>{2, 3, 4});
  kax_test::require_matches(b2, "broadcast_to_a31_234");
  const auto s = kax::full<double>(kax::shape<0>{}, 3.0);
  kax::Array<double, 2> b3 = kax::broadcast_to(s, {2, 2});
  REQUIRE(kax::to_vector(b3) == std::vector<double>{3, 3, 3, 3});
}

TEST_CASE("broadcast_to rejects incompatible shapes, naming both", "[expr][layout]") {
  const auto a31 = kax_test::load<double, 2>("bcast_a31");
  REQUIRE_THROWS_AS(kax::broadcast_to(a31, {2, 4, 4}), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::broadcast_to(a31, {2, 4, 4}),
                      Catch::Contains("(3, 1)") && Catch::Contains("(2, 4, 4)"));
}

TEST_CASE("slice follows Python's start:stop:step rules on every case of a table",
          "[expr][layout][slice]") {
  struct row {
    std::optional<long> start, stop;
    long step;
    std::vector<double> want;
  };
  // Made with Python: list(range(10))[start:stop:step].
  const std::vector<row> table{
      {none, none, 1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {none, none, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {2, 7, 1, {2, 3, 4, 5, 6}},
      {2, 7, 2, {2, 4, 6}},
      {-3, none, 1, {7, 8, 9}},
      {none, -3, 1, {0, 1, 2, 3, 4, 5, 6}},
      {-1, -4, -1, {9, 8, 7}},
      {8, 2, -2, {8, 6, 4}},
      {none, none, -3, {9, 6, 3, 0}},
      {-100, 100, 1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {100, -100, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {5, 100, 3, {5, 8}},
      {-100, 3, 1, {0, 1, 2}},
      {3, 3, 1, {}},
      {7, 2, 1, {}},
      {2, 7, -1, {}},
      {none, 0, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1}},
      {0, none, -1, {0}},
      {-11, none, 1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {none, -11, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {9, none, -4, {9, 5, 1}},
      {-1, none, -100, {9}},
      {1, -1, 4, {1, 5}},
  };
  const auto x = kax::arange<double>(10.0);
  for (const row& r : table) {
    INFO("start " << (r.start ? std::to_string(*r.start) : "None") << " stop "
                  << (r.stop ? std::to_string(*r.stop) : "None") << " step " << r.step);
    kax::Array<double, 1> s = kax::slice(x, {kax::range(r.start, r.stop, r.step)});
    REQUIRE(kax::to_vector(s) == r.want);
  }
}

TEST_CASE("slice of a rank-3 array matches NumPy, including negative steps and clamping",
          "[expr][layout][slice]") {
  const auto x = layout_x();
  kax::Array<double, 3> a =
      kax::slice(x, {kax::range(none, none, -1), kax::range(1, none), kax::range(none, none, -2)});
  kax_test::require_matches(a, "slice_rev_1on_rev2");
  kax::Array<double, 3> b = kax::slice(x, {kax::range(-1, -3, -1), kax::range(-2, none), kax::range(1, -1)});
  kax_test::require_matches(b, "slice_neg_start_stop");
  kax::Array<double, 3> c = kax::slice(x, {kax::range(-100, 100), kax::range(1, 100), kax::range(-100, 2)});
  kax_test::require_matches(c, "slice_clamped");
  kax::Array<double, 3> d = kax::slice(x, {kax::colon, kax::range(none, none, 2), kax::range(-1, 0, -2)});
  kax_test::require_matches(d, "slice_step2_negstop");
}

TEST_CASE("slice may be empty, and a zero step throws", "[expr][layout][slice]") {
  const auto g = grid(3, 4);
  kax::Array<double, 2> e = kax::slice(g, {kax::range(2, 1), kax::colon});
  REQUIRE(e.extents() == kax::shape<2>{0, 4});
  kax::Array<double, 2> e2 = kax::slice(g, {kax::colon, kax::range(10, 20)}) + 1.0;
  REQUIRE(e2.extents() == kax::shape<2>{3, 0});
  REQUIRE_THROWS_AS(kax::slice(g, {kax::colon, kax::range(none, none, 0)}), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::slice(g, {kax::range(0, 1, 0), kax::colon}), Catch::Contains("kax::slice"));
}

TEST_CASE("layout ops compose with arithmetic and with each other", "[expr][layout]") {
  const auto x = layout_x();
  const auto c4 = kax_test::load<double, 1>("bcast_c4");
  const auto a31 = kax_test::load<double, 2>("bcast_a31");
  // transpose(x, (1,0,2))[::-1] * c4 + expand_dims(a31, 1)
  kax::Array<double, 3> y =
      kax::slice(kax::transpose(x, {1, 0, 2}), {kax::range(none, none, -1), kax::colon, kax::colon}) * c4 +
      kax::expand_dims(a31, 1);
  kax_test::require_matches(y, "layout_composed");

  // A chain against a naive loop: slice(reshape(transpose(g)), ...) * 2 - broadcast row.
  const auto g = grid(6, 8);  // g(i, j) = 100 i + j
  const auto row = kax::arange<double>(4.0);
  // transpose -> (8, 6) with t(i, j) = g(j, i); reshape -> (4, 12); keep rows 3,1 and cols 0,3,6,9.
  auto e = kax::slice(kax::reshape(kax::transpose(g), {4, 12}),
                      {kax::range(none, none, -2), kax::range(none, none, 3)}) * 2.0 - row;
  kax::Array<double, 2> z = e;
  REQUIRE(z.extents() == kax::shape<2>{2, 4});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      const std::size_t r = 3 - 2 * i, c = 3 * j;    // index into the (4, 12) reshape
      const std::size_t lin = r * 12 + c;              // row-major in the (8, 6) transpose
      const std::size_t ti = lin / 6, tj = lin % 6;    // t(ti, tj) = g(tj, ti)
      REQUIRE(z(i, j) == (100.0 * tj + ti) * 2.0 - j);
    }

  // A layout op of an arithmetic expression (not of a leaf).
  kax::Array<double, 2> w = kax::transpose(g * 2.0 + 1.0);
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 6; ++j) REQUIRE(w(i, j) == (100.0 * j + i) * 2.0 + 1.0);

  // where over broadcast_to and a reversed slice.
  kax::Array<double, 2> v = kax::where(kax::broadcast_to(kax::expand_dims(row, 0), {6, 4}) > 1.0,
                                       kax::slice(g, {kax::range(none, none, -1), kax::range(0, 4)}),
                                       -1.0);
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(v(i, j) == (j > 1 ? 100.0 * (5 - i) + j : -1.0));
}
