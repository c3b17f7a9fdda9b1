// pmap across MPI processes: run as `mpirun -np 2` with KAX_HOST_DEVICES=2 (4 devices in all).
// Every expected value is computed here from the global device index g = rank * 2 + d.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kax/kax.hpp"

namespace {

constexpr int per_process = 2;

// X[d, j] = 10 * g + j with g = this process's global index of local device d.
kax::Array<float, 2> local_rows(std::size_t width) {
  kax::Array<float, 2> x(static_cast<std::size_t>(per_process), width);
  for (int d = 0; d < per_process; ++d)
    for (std::size_t j = 0; j < width; ++j)
      x(d, j) = static_cast<float>(10 * (kax::process_index() * per_process + d) + static_cast<int>(j));
  return x;
}

int global_devices() { return kax::process_count() * per_process; }

}  // namespace

TEST_CASE("the device list spans the MPI processes") {
  REQUIRE(kax::process_count() == 2);
  REQUIRE(kax::local_device_count() == per_process);
  const auto all = kax::devices();
  REQUIRE(all.size() == 4);
  for (int g = 0; g < 4; ++g) {
    CHECK(all[static_cast<std::size_t>(g)].id == g);
    CHECK(all[static_cast<std::size_t>(g)].process_index == g / per_process);
  }
  const auto mine = kax::local_devices();
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].id == kax::process_index() * per_process);
  CHECK(mine[1].process_index == kax::process_index());
}

TEST_CASE("psum, pmean, pmax and pmin combine every device of every process") {
  const auto x = local_rows(3);
  auto f = [](auto v) {
    return std::make_tuple(kax::psum<"i">(v), kax::pmean<"i">(v), kax::pmax<"i">(v), kax::pmin<"i">(v));
  };
  const auto [s, m, hi, lo] = kax::pmap<"i">(f)(x);
  const int n = global_devices();
  for (int d = 0; d < per_process; ++d)
    for (int j = 0; j < 3; ++j) {
      // sum over g of 10 g + j = 10 * n (n - 1) / 2 + n j
      const float sum = static_cast<float>(10 * n * (n - 1) / 2 + n * j);
      CHECK(s(d, j) == sum);
      CHECK(m(d, j) == Approx(sum / static_cast<float>(n)));
      CHECK(hi(d, j) == static_cast<float>(10 * (n - 1) + j));
      CHECK(lo(d, j) == static_cast<float>(j));
    }
}

TEST_CASE("the seed's parallel_with_communication normalizes by the global sum") {
  // f(x) = x / psum(sum(x)): each device's slice over the sum of all devices' slices.
  const auto x = local_rows(100);
  auto f = [](auto v) { return v / kax::psum<"devices">(kax::sum(v)); };
  const kax::Array<float, 2> y = kax::pmap<"devices">(f)(x);
  double total = 0;
  for (int g = 0; g < global_devices(); ++g)
    for (int j = 0; j < 100; ++j) total += 10.0 * g + j;
  for (int d = 0; d < per_process; ++d)
    for (int j = 0; j < 100; j += 7) CHECK(y(d, j) == Approx(x(d, j) / total).epsilon(1e-6));
}

TEST_CASE("all_gather collects every device's value in global device order") {
  const auto x = local_rows(3);
  const kax::Array<float, 3> stacked = kax::pmap<"i">([](auto v) { return kax::all_gather<"i">(v); })(x);
  const kax::Array<float, 2> tiled = kax::pmap<"i">([](auto v) { return kax::all_gather<"i">(v, kax::tiled); })(x);
  REQUIRE(stacked.extents() == kax::shape<3>{2, 4, 3});
  REQUIRE(tiled.extents() == kax::shape<2>{2, 12});
  for (int d = 0; d < per_process; ++d)
    for (int g = 0; g < 4; ++g)
      for (int j = 0; j < 3; ++j) {
        CHECK(stacked(d, g, j) == static_cast<float>(10 * g + j));
        CHECK(tiled(d, 3 * g + j) == static_cast<float>(10 * g + j));
      }
}

TEST_CASE("ppermute moves values between processes and within one") {
  const auto x = local_rows(2);
  SECTION("a ring: device g receives from g - 1 (pairs 1 -> 2 and 3 -> 0 cross processes)") {
    auto f = [](auto v) { return kax::ppermute<"i">(v, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}); };
    const kax::Array<float, 2> y = kax::pmap<"i">(f)(x);
    for (int d = 0; d < per_process; ++d) {
      const int g = kax::process_index() * per_process + d;
      const int from = (g + 3) % 4;
      for (int j = 0; j < 2; ++j) CHECK(y(d, j) == static_cast<float>(10 * from + j));
    }
  }
  SECTION("a partial permutation: devices without a source get zeros") {
    auto f = [](auto v) { return kax::ppermute<"i">(v, {{3, 0}, {0, 2}}); };
    const kax::Array<float, 2> y = kax::pmap<"i">(f)(x);
    for (int d = 0; d < per_process; ++d) {
      const int g = kax::process_index() * per_process + d;
      for (int j = 0; j < 2; ++j) {
        const float want = g == 0 ? static_cast<float>(30 + j) : g == 2 ? static_cast<float>(j) : 0.0f;
        CHECK(y(d, j) == want);
      }
    }
  }
}

TEST_CASE("pbroadcast and axis_index use global device indices") {
  const auto x = local_rows(2);
  for (int source = 0; source < 4; ++source) {
    auto f = [source](auto v) { return kax::pbroadcast<"i">(v, source); };
    const kax::Array<float, 2> y = kax::pmap<"i">(f)(x);
    for (int d = 0; d < per_process; ++d)
      for (int j = 0; j < 2; ++j) CHECK(y(d, j) == static_cast<float>(10 * source + j));
  }
  auto idx = [](auto v) { return kax::axis_index<"i">() + v * 0; };
  const kax::Array<float, 2> y = kax::pmap<"i">(idx)(x);
  for (int d = 0; d < per_process; ++d) CHECK(y(d, 0) == static_cast<float>(kax::process_index() * per_process + d));
}

TEST_CASE("pmap of vmap: collectives over the devices and over the batch") {
  // (2 local devices, batch 3, 2): z = v - pmean over devices + psum over the batch.
  kax::Array<double, 3> x(2, 3, 2);
  auto value = [](int g, int b, int j) { return 100.0 * g + 10.0 * b + j; };
  for (int d = 0; d < 2; ++d)
    for (int b = 0; b < 3; ++b)
      for (int j = 0; j < 2; ++j) x(d, b, j) = value(kax::process_index() * 2 + d, b, j);
  auto inner = [](auto v) { return v - kax::pmean<"dev">(v) + kax::psum<"batch">(v); };
  const kax::Array<double, 3> z = kax::pmap<"dev">(kax::vmap(inner, kax::axis_name<"batch">))(x);
  for (int d = 0; d < 2; ++d)
    for (int b = 0; b < 3; ++b)
      for (int j = 0; j < 2; ++j) {
        const int g = kax::process_index() * 2 + d;
        double mean = 0, bsum = 0;
        for (int h = 0; h < 4; ++h) mean += value(h, b, j) / 4;
        for (int c = 0; c < 3; ++c) bsum += value(g, c, j);
        CHECK(z(d, b, j) == Approx(value(g, b, j) - mean + bsum));
      }
}

TEST_CASE("processes that disagree on a collective's shape all get a shape_error, and continue") {
  const std::size_t width = kax::process_index() == 0 ? 3 : 4;
  const auto x = local_rows(width);
  auto f = [](auto v) { return kax::psum<"i">(v); };
  try {
    (void)kax::pmap<"i">(f)(x);
    FAIL("expected kax::shape_error");
  } catch (const kax::shape_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("processes disagree") != std::string::npos);
    CHECK(msg.find("process 0: kax::psum<\"i\"> of float32(3,)") != std::string::npos);
    CHECK(msg.find("process 1: kax::psum<\"i\"> of float32(4,)") != std::string::npos);
  }
  // The processes are still in step: the next collective works.
  const kax::Array<float, 2> y = kax::pmap<"i">(f)(local_rows(2));
  CHECK(y(0, 1) == static_cast<float>(10 * 6 + 4));
}

TEST_CASE("every process maps exactly its local devices") {
  kax::Array<float, 2> one(1, 3);
  auto f = [](auto v) { return kax::psum<"i">(v); };
  CHECK_THROWS_AS(kax::pmap<"i">(f)(one), kax::shape_error);
  CHECK_THROWS_WITH(kax::pmap<"i">(f)(one), Catch::Contains("every process maps its local devices"));
}
