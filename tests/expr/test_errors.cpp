// Run-time errors: every message names the function and shows the shapes in NumPy's spelling.
#include <catch2/catch.hpp>

#include <array>

#include "kax/kax.hpp"

TEST_CASE("broadcasting mismatched extents throws shape_error showing both shapes",
          "[expr][errors]") {
  const auto a = kax::zeros<double>(3, 4);
  const auto b = kax::zeros<double>(5);
  REQUIRE_THROWS_AS(a + b, kax::shape_error);
  REQUIRE_THROWS_WITH(a + b, Catch::Contains("(3, 4)") && Catch::Contains("(5,)"));
  REQUIRE_THROWS_WITH(a * b, Catch::Contains("kax::multiply"));
  REQUIRE_THROWS_WITH(kax::maximum(b, a), Catch::Contains("(5,)") && Catch::Contains("(3, 4)"));
  const auto c = kax::zeros<double>(2, 1, 3);
  const auto d = kax::zeros<double>(4, 2);
  REQUIRE_THROWS_WITH(c - d, Catch::Contains("(2, 1, 3)") && Catch::Contains("(4, 2)"));
  // Nested: the failing node is the inner one, and it still shows its operands' shapes.
  REQUIRE_THROWS_WITH(kax::sin(a) + kax::transpose(a),
                      Catch::Contains("(3, 4)") && Catch::Contains("(4, 3)"));
}

TEST_CASE("where with mismatched operands throws shape_error", "[expr][errors]") {
  const auto a = kax::zeros<double>(3, 4);
  const auto m = kax::zeros<bool>(3, 5);
  REQUIRE_THROWS_AS(kax::where(m, a, 0.0), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::where(m, a, 0.0),
                      Catch::Contains("kax::where") && Catch::Contains("(3, 5)") &&
                          Catch::Contains("(3, 4)"));
}

TEST_CASE("bad axes throw axis_error naming the axis and the rank", "[expr][errors]") {
  const auto a = kax::zeros<double>(2, 3);
  REQUIRE_THROWS_AS(kax::transpose(a, {0, 2}), kax::axis_error);
  REQUIRE_THROWS_AS(kax::transpose(a, {1, 1}), kax::axis_error);
  REQUIRE_THROWS_AS(kax::expand_dims(a, 3), kax::axis_error);
  REQUIRE_THROWS_AS(kax::squeeze(kax::zeros<double>(1, 3), 2), kax::axis_error);
  REQUIRE_THROWS_WITH(kax::expand_dims(a, -4),
                      Catch::Contains("kax::expand_dims") && Catch::Contains("-4"));
  REQUIRE_THROWS_WITH(kax::transpose(a, {0, 5}),
                      Catch::Contains("kax::transpose") && Catch::Contains("5"));
  // axis_error is a shape_error, so callers can catch both together.
  REQUIRE_THROWS_AS(kax::transpose(a, {0, 2}), kax::shape_error);
  REQUIRE_THROWS_AS(kax::transpose(a, {0, 2}), kax::error);
}

TEST_CASE("assigning to an ArrayView of a different shape throws shape_error", "[expr][errors]") {
  auto out = kax::zeros<double>(3, 4);
  kax::ArrayView<double, 2> view(out);
  const auto src = kax::ones<double>(4, 3);
  REQUIRE_THROWS_AS(view = src * 2.0, kax::shape_error);
  REQUIRE_THROWS_WITH(view = src * 2.0, Catch::Contains("(4, 3)") && Catch::Contains("(3, 4)"));
  for (double v : kax::to_vector(out)) REQUIRE(v == 0.0);  // nothing was written
  REQUIRE_NOTHROW(view = kax::transpose(src) * 2.0);
  for (double v : kax::to_vector(out)) REQUIRE(v == 2.0);
}

TEST_CASE("reshape, broadcast_to and slice errors name the function and the shapes",
          "[expr][errors]") {
  const auto a = kax::zeros<double>(3, 4);
  REQUIRE_THROWS_WITH(kax::reshape(a, {5, -1}),
                      Catch::Contains("kax::reshape") && Catch::Contains("(3, 4)"));
  REQUIRE_THROWS_WITH(kax::broadcast_to(a, {3, 5}),
                      Catch::Contains("kax::broadcast_to") && Catch::Contains("(3, 4)") &&
                          Catch::Contains("(3, 5)"));
  REQUIRE_THROWS_WITH(kax::slice(a, {kax::colon, kax::range(0, 4, 0)}), Catch::Contains("kax::slice"));
}
