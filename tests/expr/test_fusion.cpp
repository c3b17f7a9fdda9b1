// The fusion rule, proved with Kokkos Tools callbacks: an elementwise/broadcast/layout expression
// is one kernel with no temporaries; the aliasing rule adds exactly one temporary and one copy.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

using kax_test::launch_counter;
using kax_test::starts_with;

// (r, c) values from a cheap deterministic formula (distinct, mixed signs).
kax::Array<double, 2> filled(std::size_t r, std::size_t c, double seed) {
  std::vector<double> v(r * c);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(seed + 0.37 * static_cast<double>(k));
  return kax::from<double, 2>(v, {r, c});
}

}  // namespace

TEST_CASE("a*b + sin(c)*2 - d/e into an existing array is one kernel with no allocation",
          "[expr][fusion]") {
  const std::size_t R = 64, C = 300;
  const auto a = filled(R, C, 0.1);
  const auto b = kax::ravel(filled(1, C, 0.2));
  const auto c = filled(R, 1, 0.3);
  const auto d = filled(R, C, 0.4);
  const auto e = kax::eval(filled(1, C, 0.5) * 0.5 + 2.0);  // in [1.5, 2.5]: no division by ~0
  const kax::Array<double, 1> b1 = b;
  auto y = kax::zeros<double>(R, C);
  {
    launch_counter count;
    y = a * b1 + kax::sin(c) * 2 - d / e;
    REQUIRE(count.kernels == 1);
    REQUIRE(count.allocations == 0);
    REQUIRE(starts_with(count.labels.at(0), "kax::eval<"));
  }
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < C; ++j)
      REQUIRE(y(i, j) == Approx(a(i, j) * b1(j) + std::sin(c(i, 0)) * 2 - d(i, j) / e(0, j)).epsilon(1e-14).margin(1e-14));
}

TEST_CASE("transpose + broadcast + slice + where + reshape fuse into one kernel",
          "[expr][fusion]") {
  const auto p = filled(6, 8, 1.0);     // transposed to (8, 6)
  const auto q = filled(16, 12, 2.0);   // sliced [::2, ::-2] to (8, 6)
  const auto r = filled(4, 12, 3.0);    // reshaped to (8, 6)
  const auto row = kax::ravel(filled(1, 6, 4.0));
  const kax::Array<double, 1> row1 = row;
  auto y = kax::zeros<double>(8, 6);
  const auto expr = kax::where(kax::transpose(p) > 0.0,
                               kax::slice(q, {kax::range(std::nullopt, std::nullopt, 2),
                                              kax::range(std::nullopt, std::nullopt, -2)}),
                               kax::reshape(r, {8, -1})) +
                    row1;
  REQUIRE_THAT(kax::plan_of(expr), Catch::Contains("1 kernel"));
  {
    launch_counter count;
    y = expr;
    REQUIRE(count.kernels == 1);
    REQUIRE(count.allocations == 0);
    REQUIRE(starts_with(count.labels.at(0), "kax::eval<"));
  }
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 6; ++j) {
      const std::size_t lin = i * 6 + j;
      const double want = (p(j, i) > 0.0 ? q(2 * i, 11 - 2 * j) : r(lin / 12, lin % 12)) + row1(j);
      REQUIRE(y(i, j) == want);
    }
}

TEST_CASE("initializing an Array from an expression allocates exactly the result",
          "[expr][fusion]") {
  const auto a = filled(100, 50, 0.7);
  const auto b = filled(1, 50, 0.8);
  launch_counter count;
  kax::Array<double, 2> y = kax::transpose(kax::exp(a) * b - kax::transpose(kax::transpose(a)));
  REQUIRE(count.kernels == 1);
  REQUIRE(count.allocations == 1);
  REQUIRE(count.bytes == 100 * 50 * sizeof(double));
  REQUIRE(starts_with(count.labels.at(0), "kax::eval<"));
  REQUIRE(y.extents() == kax::shape<2>{50, 100});
  REQUIRE(y(7, 3) == Approx(std::exp(a(3, 7)) * b(0, 7) - a(3, 7)).epsilon(1e-14));
}

TEST_CASE("kax::eval and assignment through an ArrayView are one kernel each", "[expr][fusion]") {
  const auto a = filled(32, 32, 0.9);
  auto out = kax::zeros<double>(32, 32);
  kax::ArrayView<double, 2> view(out);
  launch_counter count;
  view = kax::cos(a) + 1.0;
  REQUIRE(count.kernels == 1);
  REQUIRE(count.allocations == 0);
  auto z = kax::eval(kax::square(a));
  REQUIRE(count.kernels == 2);
  REQUIRE(count.allocations == 1);
  REQUIRE(out(5, 6) == Approx(std::cos(a(5, 6)) + 1.0).epsilon(1e-14));
  REQUIRE(z(5, 6) == a(5, 6) * a(5, 6));
}

TEST_CASE("plan_of reports one kernel and no temporaries for elementwise expressions",
          "[expr][fusion]") {
  const auto a = filled(4, 5, 0.1);
  const auto b = kax::zeros<float>(5);
  REQUIRE_THAT(kax::plan_of(a * 2.0 + kax::sin(a)), Catch::Contains("1 kernel"));
  REQUIRE_THAT(kax::plan_of(kax::transpose(a) * 2.0), Catch::Contains("1 kernel"));
  REQUIRE_THAT(kax::plan_of(a + b), Catch::Contains("0 temporaries"));
}

TEST_CASE("a = transpose(a) + a is computed through one temporary and gives the right answer",
          "[expr][fusion][alias]") {
  const std::size_t n = 70;
  auto a = filled(n, n, 1.5);
  const auto saved = kax::copy(a);
  {
    launch_counter count;
    a = kax::transpose(a) + a;
    REQUIRE(count.kernels == 2);
    REQUIRE(count.allocations == 1);
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) REQUIRE(a(i, j) == saved(j, i) + saved(i, j));
}

TEST_CASE("a = a * 2 + b reads a only where it writes: one kernel, no temporary",
          "[expr][fusion][alias]") {
  auto a = filled(40, 60, 2.5);
  const auto b = filled(40, 60, 3.5);
  const auto saved = kax::copy(a);
  {
    launch_counter count;
    a = a * 2 + b;
    REQUIRE(count.kernels == 1);
    REQUIRE(count.allocations == 0);
  }
  for (std::size_t i = 0; i < 40; ++i)
    for (std::size_t j = 0; j < 60; ++j) REQUIRE(a(i, j) == saved(i, j) * 2 + b(i, j));
}

TEST_CASE("a slice of the destination shifted by one element is read before it is overwritten",
          "[expr][fusion][alias]") {
  const std::size_t n = 100000;  // several chunks per thread
  auto a = kax::arange<double>(static_cast<double>(n));
  // Shift right: a[1:] = a[:-1].  An in-place forward loop would smear a[0] over everything.
  {
    kax::ArrayView<double, 1> tail(a.data() + 1, kax::shape<1>{n - 1});
    launch_counter count;
    tail = kax::slice(a, {kax::range(0, -1)});
    REQUIRE(count.kernels == 2);
  }
  REQUIRE(a(0) == 0.0);
  for (std::size_t i = 1; i < n; ++i) REQUIRE(a(i) == static_cast<double>(i - 1));
  // Shift left: a[:-1] = a[1:] * 10.
  auto b = kax::arange<double>(static_cast<double>(n));
  {
    kax::ArrayView<double, 1> head(b.data(), kax::shape<1>{n - 1});
    head = kax::slice(b, {kax::range(1, std::nullopt)}) * 10.0;
  }
  for (std::size_t i = 0; i + 1 < n; ++i) REQUIRE(b(i) == 10.0 * static_cast<double>(i + 1));
  REQUIRE(b(n - 1) == static_cast<double>(n - 1));
  // Reversal in place: a = a[::-1] (same shape, so it writes into a's buffer).
  auto c = kax::arange<double>(1000.0);
  c = kax::slice(c, {kax::range(std::nullopt, std::nullopt, -1)});
  for (std::size_t i = 0; i < 1000; ++i) REQUIRE(c(i) == 999.0 - static_cast<double>(i));
}

TEST_CASE("aliasing through another Array or view of the same buffer is detected",
          "[expr][fusion][alias]") {
  const std::size_t n = 50;
  auto a = filled(n, n, 4.5);
  const auto saved = kax::copy(a);
  kax::Array<double, 2> shared = a;  // second owner of the same buffer
  {
    launch_counter count;
    a = kax::transpose(shared) * 3.0;
    REQUIRE(count.kernels == 2);
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) REQUIRE(a(i, j) == saved(j, i) * 3.0);
  // A non-owning view of the buffer is an operand here.
  auto b = filled(n, n, 5.5);
  const auto saved_b = kax::copy(b);
  const kax::ArrayView<double, 2> bv(b);
  b = kax::transpose(bv) - bv;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) REQUIRE(b(i, j) == saved_b(j, i) - saved_b(i, j));
  // A broadcast of one row of the destination: every row reads row 0, which is overwritten.
  auto c = filled(8, 16, 6.5);
  const auto saved_c = kax::copy(c);
  c = c + kax::slice(c, {kax::range(0, 1), kax::colon});
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 16; ++j) REQUIRE(c(i, j) == saved_c(i, j) + saved_c(0, j));
}

TEST_CASE("the launch counter sees nothing once a test has ended", "[expr][fusion]") {
  // Guards the guard: callbacks are reset, so kernels outside a counter are not counted.
  { launch_counter count; }
  const int before = launch_counter::kernels;
  const auto a = filled(3, 3, 0.0);
  kax::Array<double, 2> y = a + 1.0;
  REQUIRE(launch_counter::kernels == before);
  REQUIRE(y(1, 1) == a(1, 1) + 1.0);
}
