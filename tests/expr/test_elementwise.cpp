#include <catch2/catch.hpp>

#include "kax/kax.hpp"

TEST_CASE("a*b + sin(c) matches a naive loop", "[expr]") {
  const int n = 1000;
  auto a = kax::arange<double>(n);
  auto b = kax::full<double>(kax::shape<1>{n}, 2.0);
  auto c = kax::arange<double>(0.0, n * 0.01, 0.01);
  kax::Array<double, 1> y = a * b + kax::sin(c);
  for (int i = 0; i < n; ++i) REQUIRE(y(i) == Approx(i * 2.0 + std::sin(i * 0.01)));
}
