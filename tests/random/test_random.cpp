// kax::random against Random123's known answers, against scripts/gen_random_data.py (an
// independent NumPy implementation of jax.random with jax_threefry_partitionable=True), against
// values JAX prints, and against the laws of the distributions; plus laziness (random values are
// generated in the consuming kernel) and vmap over keys.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../expr/data_file.hpp"
#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

namespace random = kax::random;
using kax::random::Key;
using kax_test::launch_counter;
using kax_test::read_data;

std::vector<std::uint32_t> words(const std::string& name) {
  std::vector<std::uint32_t> out;
  for (double v : read_data(name).values) out.push_back(static_cast<std::uint32_t>(v));
  return out;
}

template <class T, std::size_t R, class M>
std::vector<T> values(const kax::Array<T, R, M>& a) {  // any memory space (eval on Serial: host)
  return kax::to_vector(a);
}

// Elements equal bit for bit (NaN-free data).
template <class T>
void require_exact(const std::vector<T>& got, const std::string& name) {
  const auto d = read_data(name);
  REQUIRE(got.size() == d.values.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(name << " element " << i);
    REQUIRE(static_cast<double>(got[i]) == d.values[i]);
  }
}

// Elements within `ulps` units in the last place of T.
template <class T>
void require_ulps(const std::vector<T>& got, const std::string& name, int ulps) {
  const auto d = read_data(name);
  REQUIRE(got.size() == d.values.size());
  int worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const T want = static_cast<T>(d.values[i]);
    T x = want;
    int n = 0;
    while (x != got[i] && n <= ulps) x = std::nextafter(x, got[i]), ++n;
    worst = std::max(worst, n);
    INFO(name << " element " << i << ": got " << got[i] << ", want " << want);
    REQUIRE(n <= ulps);
  }
}

}  // namespace

TEST_CASE("threefry2x32 gives Random123's known answers", "[random]") {
  using W = std::array<std::uint32_t, 2>;
  // Random123 kat_vectors, threefry2x32_20 (key, counter -> result); also in JAX's random tests.
  static_assert(random::threefry2x32(W{0, 0}, W{0, 0}) == W{0x6b200159u, 0x99ba4efeu});
  CHECK(random::threefry2x32(W{0xffffffffu, 0xffffffffu}, W{0xffffffffu, 0xffffffffu}) ==
        W{0x1cb996fcu, 0xbb002be7u});
  CHECK(random::threefry2x32(W{0x13198a2eu, 0x03707344u}, W{0x243f6a88u, 0x85a308d3u}) ==
        W{0xc4923a9cu, 0x483df7a0u});
}

TEST_CASE("key(seed) holds the seed's high and low words, as jax.random.key with x64", "[random]") {
  const auto w = words("random_key_seeds");
  const std::int64_t seeds[] = {0, 42, -1, (std::int64_t{1} << 32) + 5, INT64_MAX};
  for (std::size_t i = 0; i < 5; ++i) {
    INFO("seed " << seeds[i]);
    CHECK(random::key_data(random::key(seeds[i])) == std::array<std::uint32_t, 2>{w[2 * i], w[2 * i + 1]});
  }
  CHECK(random::key_data(random::key(42)) == std::array<std::uint32_t, 2>{0, 42});
}

TEST_CASE("split and fold_in derive the keys JAX derives", "[random]") {
  // What JAX >= 0.5 prints for jax.random.key_data(jax.random.split(jax.random.key(0))).
  const auto [a, b] = random::split<2>(random::key(0));
  CHECK(random::key_data(a) == std::array<std::uint32_t, 2>{1797259609u, 2579123966u});
  CHECK(random::key_data(b) == std::array<std::uint32_t, 2>{928981903u, 3453687069u});

  const auto w0 = words("random_split_key0_4");
  const auto keys0 = values(random::split(random::key(0), 4));
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(keys0[i].w0 == w0[2 * i]);
    CHECK(keys0[i].w1 == w0[2 * i + 1]);
  }
  const auto w42 = words("random_split_key42_3");
  const auto keys42 = random::split<3>(random::key(42));
  for (std::size_t i = 0; i < 3; ++i) CHECK(keys42[i] == random::wrap_key_data({w42[2 * i], w42[2 * i + 1]}));

  const auto wf = words("random_fold_in_key42");
  const std::uint32_t data[] = {0, 1, 7, 0xffffffffu};
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(random::fold_in(random::key(42), data[i]) == random::wrap_key_data({wf[2 * i], wf[2 * i + 1]}));
  // With partitionable threefry, the i-th split key is fold_in(key, i).
  for (std::uint32_t i = 0; i < 4; ++i) CHECK(keys0[i] == random::fold_in(random::key(0), i));
}

TEST_CASE("bits, uniform and bernoulli equal jax.random's bit for bit", "[random]") {
  const Key k0 = random::key(0), k42 = random::key(42);
  require_exact(values(kax::Array<std::int64_t, 2>(random::bits(k42, {3, 5}))), "random_bits_key42_3x5");
  require_exact(values(kax::Array<float, 1>(random::uniform<float>(k0, {1000}))), "random_uniform_f32_key0_1000");
  require_exact(values(kax::Array<double, 1>(random::uniform<double>(k0, {1000}))), "random_uniform_f64_key0_1000");
  require_exact(values(kax::Array<float, 1>(random::uniform<float>(k0, {1000}, 0.0f, 1.0f))),
                "random_uniform_f32_key0_1000");
  require_exact(values(kax::Array<bool, 1>(random::bernoulli(random::key(7), 0.3, {500}))),
                "random_bernoulli_key7_p03_500");
  // minval/maxval: u * (maxval - minval) + minval as one fused multiply-add, as XLA emits it.
  require_exact(values(kax::Array<float, 2>(random::uniform<float>(k42, {4, 25}, -2.0f, 3.0f))),
                "random_uniform_f32_key42_m2_3_4x25");
}

TEST_CASE("values jax.random documents and tests come out", "[random]") {
  // The doctest of the jax.random module (JAX >= 0.5): uniform(key(0)) and uniform of split's
  // second key print as 0.947667 and 0.00729382.
  const float u0 = kax::Array<float, 0>(random::uniform<float>(random::key(0)))();
  CHECK(u0 == Approx(0.947667).epsilon(1e-6));
  const float u1 = kax::Array<float, 0>(random::uniform<float>(random::split<2>(random::key(0))[1]))();
  CHECK(u1 == Approx(0.00729382).epsilon(1e-5));
  // JAX's testPRNGValues: fold_in(PRNGKey(0), 4) (the same in every threefry mode).
  CHECK(random::key_data(random::fold_in(random::key(0), 4)) == std::array<std::uint32_t, 2>{2285895361u, 433833334u});
  // JAX's seed table (test_prng_seeds_and_keys, with x64): -1, -3 and int32 min - 100.
  CHECK(random::key_data(random::key(-1)) == std::array<std::uint32_t, 2>{4294967295u, 4294967295u});
  CHECK(random::key_data(random::key(-3)) == std::array<std::uint32_t, 2>{4294967295u, 4294967293u});
  CHECK(random::key_data(random::key(std::int64_t{INT32_MIN} - 100)) ==
        std::array<std::uint32_t, 2>{4294967295u, 2147483548u});
}

TEST_CASE("randint combines two draws modulo the span as jax.random.randint does", "[random]") {
  const Key k0 = random::key(0), k42 = random::key(42);
  require_exact(values(kax::Array<std::int32_t, 2>(random::randint<std::int32_t>(k0, {3, 3}, 0, 8))),
                "random_randint_i32_key0_0_8_3x3");
  require_exact(values(kax::Array<std::int32_t, 1>(random::randint<std::int32_t>(k42, {50}, -5, 100))),
                "random_randint_i32_key42_m5_100_50");
  require_exact(values(kax::Array<std::int32_t, 1>(random::randint<std::int32_t>(k42, {20}, INT32_MIN, INT32_MAX))),
                "random_randint_i32_key42_big_20");
  // int64 values above 2^53 do not survive the data file's doubles: compare the draws' bounds and
  // the int32 path above for exactness, and here every value to the file's precision.
  const auto big = values(kax::Array<std::int64_t, 1>(
      random::randint<std::int64_t>(k42, {20}, -(std::int64_t{1} << 62), (std::int64_t{1} << 62) + 12345)));
  const auto want = read_data("random_randint_i64_key42_big_20").values;
  for (std::size_t i = 0; i < 20; ++i) CHECK(static_cast<double>(big[i]) == Approx(want[i]).epsilon(1e-15));
  // maxval <= minval gives minval, as in JAX.
  const auto flat = values(kax::Array<std::int32_t, 1>(random::randint<std::int32_t>(k0, {4}, 7, 7)));
  CHECK(flat == std::vector<std::int32_t>{7, 7, 7, 7});
}

TEST_CASE("permutation shuffles by JAX's rounds of sorts by random bits", "[random]") {
  // One round for n <= 1625, two above.
  require_exact(values(random::permutation(random::key(0), 10)), "random_permutation_key0_10");
  const auto p = values(random::permutation(random::key(42), 2000));
  require_exact(p, "random_permutation_key42_2000");
  std::vector<std::int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) REQUIRE(sorted[i] == static_cast<std::int64_t>(i));
  CHECK(values(random::permutation(random::key(1), 1)) == std::vector<std::int64_t>{0});
  CHECK(random::permutation(random::key(1), 0).size() == 0);

  // An array's leading axis: the rows move as the indices do.
  kax::Array<float, 2> m = kax::reshape(kax::arange<float>(30), {10, 3});
  kax::Array<float, 2> pm = random::permutation(random::key(0), m);
  const auto idx = values(random::permutation(random::key(0), 10));
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(pm(i, j) == m(static_cast<std::size_t>(idx[i]), j));
  const auto keys = random::split(random::key(5), 6);
  const auto pk = values(random::permutation(random::key(0), keys));
  const auto kv = values(keys);
  const auto i6 = values(random::permutation(random::key(0), 6));
  for (std::size_t i = 0; i < 6; ++i) CHECK(pk[i] == kv[static_cast<std::size_t>(i6[i])]);
}

TEST_CASE("normal is sqrt(2) erfinv(u) with XLA's erfinv, to a few ulp of the reference", "[random]") {
  const Key k42 = random::key(42);
  // log1p and the polynomial's rounding differ between implementations (docs/random.md).
  require_ulps(values(kax::Array<float, 1>(random::normal<float>(k42, {1000}))), "random_normal_f32_key42_1000", 4);
  require_ulps(values(kax::Array<double, 1>(random::normal<double>(k42, {1000}))), "random_normal_f64_key42_1000", 4);
}

TEST_CASE("element n of a draw depends only on the key and n, not on the shape", "[random]") {
  // JAX's partitionable counters: the flat index, so a (2, 3) draw is the (6,) draw reshaped, and
  // a slice of a bigger draw is not the smaller draw's prefix only by accident.
  const Key k = random::key(5);
  const auto flat = values(kax::Array<float, 1>(random::normal<float>(k, {6})));
  const auto matrix = values(kax::Array<float, 2>(random::normal<float>(k, {2, 3})));
  CHECK(flat == matrix);
  const auto longer = values(kax::Array<float, 1>(random::normal<float>(k, {10})));
  CHECK(std::equal(flat.begin(), flat.end(), longer.begin()));
}

TEST_CASE("uniform and normal pass moment and Kolmogorov-Smirnov checks on 10^6 samples", "[random]") {
  constexpr std::size_t n = 1000000;
  // Fixed keys: the checks are deterministic; the bounds are ~5 standard errors (moments) and
  // the KS critical value at p = 0.001 (1.95 / sqrt(n)).
  auto u = values(kax::Array<double, 1>(random::uniform<double>(random::key(2024), {n})));
  double mean = 0, var = 0;
  for (double x : u) mean += x;
  mean /= n;
  for (double x : u) var += (x - mean) * (x - mean);
  var /= n;
  CHECK(std::abs(mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(var - 1.0 / 12) < 5 * std::sqrt(1.0 / 180 / n));
  CHECK(*std::min_element(u.begin(), u.end()) >= 0.0);
  CHECK(*std::max_element(u.begin(), u.end()) < 1.0);
  std::sort(u.begin(), u.end());
  double d = 0;
  for (std::size_t i = 0; i < n; ++i)
    d = std::max({d, std::abs(u[i] - double(i) / n), std::abs(double(i + 1) / n - u[i])});
  CHECK(d < 1.95 / std::sqrt(double(n)));

  auto z = values(kax::Array<float, 1>(random::normal<float>(random::key(2025), {n})));
  double zm = 0, z2 = 0, z4 = 0;
  for (float x : z) zm += x, z2 += double(x) * x, z4 += double(x) * x * x * x;
  zm /= n, z2 /= n, z4 /= n;
  CHECK(std::abs(zm) < 5 / std::sqrt(double(n)));
  CHECK(std::abs(z2 - 1) < 5 * std::sqrt(2.0 / n));
  CHECK(std::abs(z4 - 3) < 5 * std::sqrt(96.0 / n));
  std::sort(z.begin(), z.end());
  double dz = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-double(z[i]) / std::sqrt(2.0));
    dz = std::max({dz, std::abs(cdf - double(i) / n), std::abs(double(i + 1) / n - cdf)});
  }
  CHECK(dz < 1.95 / std::sqrt(double(n)));

  const auto b = values(kax::Array<bool, 1>(random::bernoulli(random::key(2026), 0.25, {n})));
  const double rate = double(std::count(b.begin(), b.end(), true)) / n;
  CHECK(std::abs(rate - 0.25) < 5 * std::sqrt(0.25 * 0.75 / n));
}

TEST_CASE("draws are the same on one thread (Serial) and on the OpenMP threads", "[random]") {
  const Key k = random::key(11);
  const auto expr = random::normal<float>(k, {300, 70}) * 3.0f + random::uniform<float>(random::fold_in(k, 1), {70});
  const auto par = values(kax::eval(expr));
  const auto one = values(kax::eval(Kokkos::Serial(), expr));
  CHECK(par == one);
  const float s_par = kax::Array<float, 0>(kax::sum(random::normal<float>(k, {100000})))();
  const float s_one = kax::eval(Kokkos::Serial(), kax::sum(random::normal<float>(k, {100000})))();
  CHECK(s_par == s_one);
}

TEST_CASE("random values are generated inside the consuming kernel", "[random][fusion]") {
  const Key k = random::key(1);
  kax::Array<float, 2> y = kax::full<float>(kax::shape<2>{64, 32}, 1.0f);
  const auto e = random::normal<float>(k, {64, 32}) * 2.0f + y;
  {
    launch_counter lc;
    kax::Array<float, 2> out = e;
    CHECK(lc.kernels == 1);
    CHECK(lc.allocations == 1);  // the output only: no random array
    const auto z = values(kax::Array<float, 2>(random::normal<float>(k, {64, 32})));
    const auto o = values(out);
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == z[i] * 2.0f + 1.0f);
  }
  const std::string plan = kax::plan_of(kax::sum(random::uniform<float>(k, {1000}) * y(0, 0)));
  INFO(plan);
  CHECK(plan.find("1 kernel, 0 temporaries") != std::string::npos);
}

TEST_CASE("vmap over split keys draws per key, as jax.vmap of a sampler does", "[random][vmap]") {
  const auto keys = random::split(random::key(3), 4);
  const auto f = kax::vmap([](auto k) { return random::normal<float>(k, {6}); });
  kax::Array<float, 2> got = f(keys);
  REQUIRE(got.extents() == kax::shape<2>{4, 6});
  require_ulps(values(got), "random_vmap_normal_f32_key3_4x6", 4);
  const auto kv = values(keys);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto row = values(kax::Array<float, 1>(random::normal<float>(kv[i], {6})));
    for (std::size_t j = 0; j < 6; ++j) REQUIRE(got(i, j) == row[j]);
  }

  // Keys derived inside f (split<2>, fold_in), an unbatched key, and a mapped data argument.
  const auto g = kax::vmap([](auto k, auto x) {
    const auto [k1, k2] = random::split<2>(k);
    return x + random::uniform<float>(k1, {3}) - random::normal<float>(random::fold_in(k2, 9), {3}) +
           random::uniform<float>(random::key(99), {3});
  });
  kax::Array<float, 2> xs = kax::reshape(kax::arange<float>(12), {4, 3});
  kax::Array<float, 2> out = g(keys, xs);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto ks = random::split<2>(kv[i]);
    const auto u = values(kax::Array<float, 1>(random::uniform<float>(ks[0], {3})));
    const auto z = values(kax::Array<float, 1>(random::normal<float>(random::fold_in(ks[1], 9), {3})));
    const auto c = values(kax::Array<float, 1>(random::uniform<float>(random::key(99), {3})));
    for (std::size_t j = 0; j < 3; ++j) REQUIRE(out(i, j) == Approx(xs(i, j) + u[j] - z[j] + c[j]).epsilon(1e-6));
  }

  // Nested: vmap over a (2, 3) key array, one scalar draw per key.
  kax::Array<Key, 2> grid = kax::reshape(random::split(random::key(8), 6), {2, 3});
  const auto h = kax::vmap(kax::vmap([](auto k) { return random::uniform<double>(k); }));
  kax::Array<double, 2> hv = h(grid);
  const auto gk = values(grid);
  for (std::size_t i = 0; i < 6; ++i)
    CHECK(hv(i / 3, i % 3) == kax::Array<double, 0>(random::uniform<double>(gk[i]))());
}
