#include <catch2/catch.hpp>

#include "kax/kax.hpp"

TEST_CASE("zeros makes a zero-filled row-major array of the requested shape", "[array]") {
  auto a = kax::zeros<float>(3, 4);
  REQUIRE(a.extents() == kax::shape<2>{3, 4});
  REQUIRE(a.size() == 12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) REQUIRE(a(i, j) == 0.0f);
}
