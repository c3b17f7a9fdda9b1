// kax::Array: factories, reference semantics, element access, dtypes, zero-size and rank-0 arrays.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kax/kax.hpp"

TEST_CASE("zeros makes a zero-filled row-major array of the requested shape", "[array]") {
  auto a = kax::zeros<float>(3, 4);
  REQUIRE(a.extents() == kax::shape<2>{3, 4});
  REQUIRE(a.size() == 12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) REQUIRE(a(i, j) == 0.0f);
  auto b = kax::zeros<std::int64_t>(kax::shape<3>{2, 1, 5});
  REQUIRE(b.extents() == kax::shape<3>{2, 1, 5});
  for (std::int64_t v : kax::to_vector(b)) REQUIRE(v == 0);
}

TEST_CASE("ones and full fill every element with the value", "[array]") {
  auto a = kax::ones<double>(2, 3);
  for (double v : kax::to_vector(a)) REQUIRE(v == 1.0);
  auto b = kax::full<std::int32_t>(kax::shape<1>{7}, -3);
  REQUIRE(b.size() == 7);
  for (std::int32_t v : kax::to_vector(b)) REQUIRE(v == -3);
  auto c = kax::full<bool>(kax::shape<2>{2, 2}, true);
  for (bool v : kax::to_vector(c)) REQUIRE(v);
}

TEST_CASE("empty has the requested shape and can be written", "[array]") {
  auto a = kax::empty<float>(4, 5);
  REQUIRE(a.extents() == kax::shape<2>{4, 5});
  a(3, 4) = 2.5f;
  REQUIRE(a(3, 4) == 2.5f);
}

TEST_CASE("arange produces NumPy's values for ints, floats, negative steps and empty ranges",
          "[array]") {
  {
    auto a = kax::arange<std::int32_t>(5);
    REQUIRE(kax::to_vector(a) == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  }
  {
    auto a = kax::arange<std::int64_t>(2, 11, 3);  // np.arange(2, 11, 3)
    REQUIRE(kax::to_vector(a) == std::vector<std::int64_t>{2, 5, 8});
  }
  {
    auto a = kax::arange<std::int32_t>(10, 0, -3);  // np.arange(10, 0, -3)
    REQUIRE(kax::to_vector(a) == std::vector<std::int32_t>{10, 7, 4, 1});
  }
  {
    auto a = kax::arange<double>(0.0, 1.0, 0.25);
    REQUIRE(kax::to_vector(a) == std::vector<double>{0.0, 0.25, 0.5, 0.75});
  }
  {
    auto a = kax::arange<float>(1.0f, -1.0f, -0.5f);  // np.arange(1, -1, -0.5)
    REQUIRE(kax::to_vector(a) == std::vector<float>{1.0f, 0.5f, 0.0f, -0.5f});
  }
  {
    auto a = kax::arange<double>(0.0, 1.0, 0.1);  // np.arange(0, 1, 0.1) has 10 elements
    REQUIRE(a.size() == 10);
    for (int i = 0; i < 10; ++i) REQUIRE(a(i) == Approx(0.1 * i).margin(1e-15));
  }
  REQUIRE(kax::arange<std::int32_t>(5, 2).size() == 0);
  REQUIRE(kax::arange<std::int32_t>(2, 5, -1).size() == 0);
  REQUIRE(kax::arange<double>(3.0, 3.0).size() == 0);
  REQUIRE(kax::arange<std::int32_t>(0).size() == 0);
  REQUIRE_THROWS_AS(kax::arange<std::int32_t>(0, 5, 0), kax::shape_error);
}

TEST_CASE("from copies host data in row-major order", "[array]") {
  const std::vector<double> v{1, 2, 3, 4, 5, 6};
  auto a = kax::from<double, 2>(v, {2, 3});
  REQUIRE(a(0, 0) == 1);
  REQUIRE(a(0, 2) == 3);
  REQUIRE(a(1, 0) == 4);
  REQUIRE(a(1, 2) == 6);
  auto r = kax::from(std::vector<std::int32_t>{7, 8, 9});
  REQUIRE(r.extents() == kax::shape<1>{3});
  REQUIRE(r(2) == 9);
  auto b = kax::from<bool, 1>(std::vector<bool>{true, false, true}, {3});
  REQUIRE(kax::to_vector(b) == std::vector<bool>{true, false, true});
}

TEST_CASE("from rejects a vector whose size differs from the shape, naming both sizes", "[array]") {
  const std::vector<float> v{1, 2, 3, 4, 5};
  REQUIRE_THROWS_AS((kax::from<float, 2>(v, {2, 3})), kax::shape_error);
  REQUIRE_THROWS_WITH((kax::from<float, 2>(v, {2, 3})),
                      Catch::Contains("5") && Catch::Contains("(2, 3)") &&
                          Catch::Contains("kax::from"));
}

TEST_CASE("copying an Array shares its buffer; kax::copy does not", "[array]") {
  auto a = kax::zeros<double>(2, 2);
  REQUIRE(a.use_count() == 1);
  {
    kax::Array<double, 2> b = a;
    REQUIRE(a.use_count() == 2);
    REQUIRE(b.data() == a.data());
    b(1, 1) = 5.0;
    REQUIRE(a(1, 1) == 5.0);
  }
  REQUIRE(a.use_count() == 1);
  auto c = kax::copy(a);
  REQUIRE(c.data() != a.data());
  REQUIRE(c(1, 1) == 5.0);
  c(0, 0) = -1.0;
  REQUIRE(a(0, 0) == 0.0);
  a(0, 1) = 3.0;
  REQUIRE(c(0, 1) == 0.0);
}

TEST_CASE("assigning an expression to an Array of the same shape writes in place", "[array]") {
  auto a = kax::from<double, 2>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = kax::from<double, 2>({10, 20, 30, 40, 50, 60}, {2, 3});
  kax::Array<double, 2> other = a;  // a second handle on a's buffer
  const double* before = a.data();
  a = b + 1.0;
  REQUIRE(a.data() == before);
  REQUIRE(a.use_count() == 2);
  const std::vector<double> want{11, 21, 31, 41, 51, 61};
  REQUIRE(kax::to_vector(other) == want);
}

TEST_CASE("assigning an expression of a different shape rebinds the Array", "[array]") {
  auto a = kax::zeros<double>(2, 3);
  kax::Array<double, 2> other = a;
  auto b = kax::ones<double>(4, 1);
  a = b * 2.0;
  REQUIRE(a.extents() == kax::shape<2>{4, 1});
  REQUIRE(a.data() != other.data());
  for (double v : kax::to_vector(a)) REQUIRE(v == 2.0);
  REQUIRE(other.extents() == kax::shape<2>{2, 3});
  for (double v : kax::to_vector(other)) REQUIRE(v == 0.0);
  REQUIRE(other.use_count() == 1);
}

TEST_CASE("at() checks bounds and names the index and the shape", "[array]") {
  auto a = kax::zeros<std::int32_t>(2, 3);
  a.at(1, 2) = 4;
  REQUIRE(a(1, 2) == 4);
  REQUIRE_THROWS_AS(a.at(2, 0), kax::shape_error);
  REQUIRE_THROWS_AS(a.at(0, 3), kax::shape_error);
  REQUIRE_THROWS_WITH(a.at(0, 3), Catch::Contains("(0, 3)") && Catch::Contains("(2, 3)"));
  auto r = kax::zeros<float>(4);
  REQUIRE_THROWS_AS(r.at(4), kax::shape_error);
  REQUIRE_NOTHROW(r.at(3));
}

TEST_CASE("zero-size arrays evaluate and assign without error", "[array]") {
  auto a = kax::zeros<float>(0, 3);
  REQUIRE(a.size() == 0);
  REQUIRE(a.empty());
  REQUIRE(a.extents() == kax::shape<2>{0, 3});
  kax::Array<float, 2> b = a * 2.0f + kax::sin(a);
  REQUIRE(b.extents() == kax::shape<2>{0, 3});
  a = b + 1.0f;
  REQUIRE(a.extents() == kax::shape<2>{0, 3});
  auto c = kax::zeros<double>(3, 0);
  kax::Array<double, 2> t = kax::transpose(c);
  REQUIRE(t.extents() == kax::shape<2>{0, 3});
  auto row = kax::zeros<double>(0);
  kax::Array<double, 2> bc = row + kax::zeros<double>(4, 1);  // (0,) + (4, 1) -> (4, 0)
  REQUIRE(bc.extents() == kax::shape<2>{4, 0});
  REQUIRE(kax::to_vector(bc).empty());
}

TEST_CASE("rank-0 arrays hold one element and take part in expressions", "[array]") {
  auto s = kax::full<double>(kax::shape<0>{}, 2.5);
  REQUIRE(s.size() == 1);
  REQUIRE(s() == 2.5);
  auto z = kax::zeros<float>();
  REQUIRE(z.size() == 1);
  REQUIRE(z() == 0.0f);
  kax::Array<double, 0> t = s * 4.0 + 1.0;
  REQUIRE(t() == 11.0);
  REQUIRE(kax::to_vector(t) == std::vector<double>{11.0});
}

TEST_CASE("bool, int32 and int64 arrays store and compute in their dtype", "[array]") {
  auto i32 = kax::from<std::int32_t, 1>({-2, 0, 2147483647}, {3});
  auto i64 = kax::from<std::int64_t, 1>({std::int64_t(1) << 40, -5, 0}, {3});
  auto b = kax::from<bool, 1>(std::vector<bool>{true, false, true}, {3});
  kax::Array<std::int64_t, 1> s = i64 + i32;  // int32 + int64 -> int64, no overflow
  REQUIRE(s(0) == (std::int64_t(1) << 40) - 2);
  REQUIRE(s(1) == -5);
  REQUIRE(s(2) == 2147483647);
  kax::Array<bool, 1> nb = !b;
  REQUIRE(kax::to_vector(nb) == std::vector<bool>{false, true, false});
  static_assert(std::is_same_v<decltype(i32)::value_type, std::int32_t>);
  static_assert(std::is_same_v<decltype(b)::value_type, bool>);
}

TEST_CASE("to_host shares host memory and to_vector returns row-major values", "[array]") {
  auto a = kax::from<float, 2>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto h = kax::to_host(a);
  REQUIRE(h.extents() == kax::shape<2>{3, 2});
  REQUIRE(h(2, 1) == 6.0f);
  if constexpr (std::is_same_v<kax::default_memory_space, Kokkos::HostSpace>)
    REQUIRE(h.data() == a.data());
  kax::Array<float, 2> t = kax::transpose(a);
  REQUIRE(kax::to_vector(t) == std::vector<float>{1, 3, 5, 2, 4, 6});
}
