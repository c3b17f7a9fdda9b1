// kax::pmap on the devices this run was started with (KAX_HOST_DEVICES = 1, 2 or 4): JAX's
// canonical pmap example, in_axes and out_axes, tuple outputs, repeated calls, the errors of
// jax.pmap, failing and stalling device programs, and collectives over a vmap's axis name (alone
// and inside a pmap), against naive loops written here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kax/kax.hpp"
#include "device_data.hpp"

namespace {

using kax_ptest::contains;
using kax_ptest::devices_n;
using kax_ptest::make_per_device;
using kax_ptest::per_device;
using kax_ptest::require_values;
using kax_ptest::thrown_message;

using seconds = std::chrono::duration<double>;

seconds elapsed_since(std::chrono::steady_clock::time_point t0) { return std::chrono::steady_clock::now() - t0; }

// psum(a) + psum(a * a): one collective used twice in one device program.
constexpr auto sum_and_squares = [](const auto& a) { return kax::psum<"i">(a) + kax::psum<"i">(a * a); };

template <class T, std::size_t R>
std::vector<T> sum_and_squares_ref(const per_device<T, R>& x) {
  std::vector<T> want(x.n * x.m);
  for (std::size_t d = 0; d < x.n; ++d)
    for (std::size_t k = 0; k < x.m; ++k) {
      T s = 0, q = 0;
      for (std::size_t e = 0; e < x.n; ++e) {
        s += x.at(e, k);
        q += x.at(e, k) * x.at(e, k);
      }
      want[d * x.m + k] = s + q;
    }
  return want;
}

// Throws on device `failing` while it builds its graph; the others reach the psum.
struct throw_on_device {
  int failing = 0;
  template <class A>
  auto operator()(const A& a) const {
    if (kax::axis_index<"i">().value == failing) throw std::runtime_error("device program failed on purpose");
    return kax::psum<"i">(a);
  }
};

}  // namespace

TEST_CASE("pmap normalizes by a global psum of local sums (JAX's canonical pmap example)", "[pmap]") {
  // The seed's parallel_with_communication: f(x) = x / psum(sum(x)) over a (n, 1000) array.
  const std::size_t n = devices_n();
  constexpr std::size_t d = 1000;
  std::vector<float> values(n * d);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      values[i * d + j] = static_cast<float>(i + 1) + static_cast<float>(j) * 0.001f;
      total += values[i * d + j];
    }
  const auto x = kax::from(values, kax::shape<2>{n, d});
  auto f = [](const auto& xs) { return xs / kax::psum<"devices">(kax::sum(xs)); };
  const kax::Array<float, 2> y = kax::pmap<"devices">(f)(x);

  REQUIRE(y.extents() == kax::shape<2>{n, d});
  double sum_y = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      INFO("device " << i << ", element " << j);
      REQUIRE(y(i, j) == Approx(values[i * d + j] / total).epsilon(1e-5));
      sum_y += y(i, j);
    }
  CHECK(sum_y == Approx(1.0).epsilon(1e-5));
}

TEST_CASE("pmap over fewer devices than available runs on the first ones", "[pmap]") {
  const std::size_t n = devices_n();
  for (std::size_t m = 1; m <= n; ++m) {
    INFO(m << " of " << n << " devices");
    const auto x = make_per_device<float>(m, kax::shape<1>{3}, 1);
    const kax::Array<float, 2> y = kax::pmap<"i">(sum_and_squares)(x.array());
    require_values(y, x.stacked(), sum_and_squares_ref(x));
  }
}

TEST_CASE("a pmapped callable called again with other data gives the new results", "[pmap]") {
  const std::size_t n = devices_n();
  const auto pf = kax::pmap<"i">(sum_and_squares);
  const auto x1 = make_per_device<float>(n, kax::shape<1>{3}, 2);
  const auto x2 = make_per_device<float>(n, kax::shape<1>{3}, 7);
  const kax::Array<float, 2> y1 = pf(x1.array());
  const kax::Array<float, 2> y2 = pf(x2.array());
  require_values(y1, x1.stacked(), sum_and_squares_ref(x1));
  require_values(y2, x2.stacked(), sum_and_squares_ref(x2));
  const kax::Array<float, 2> y3 = pf(x1.array());
  require_values(y3, x1.stacked(), sum_and_squares_ref(x1));
}

TEST_CASE("pmap with in_axes none gives the whole argument to every device", "[pmap][in_axes]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 3);
  const auto w = kax::from(std::vector<float>{2.0f, -1.0f, 0.5f});
  const kax::Array<float, 2> y = kax::pmap<"i">([](const auto& a, const auto& ws) { return a * ws + kax::psum<"i">(a); },
                                                kax::in_axes(0, kax::none))(x.array(), w);
  const std::vector<float> wv{2.0f, -1.0f, 0.5f};
  std::vector<float> want(n * 3);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < 3; ++k) {
      float s = 0;
      for (std::size_t e = 0; e < n; ++e) s += x.at(e, k);
      want[d * 3 + k] = x.at(d, k) * wv[k] + s;
    }
  require_values(y, kax::shape<2>{n, 3}, want);
}

TEST_CASE("pmap with in_axes 1 (or -1) maps the columns of the argument", "[pmap][in_axes]") {
  const std::size_t n = devices_n();
  // x: (3, n), x[k][d] = v(d, k); device d gets column d.
  const auto cols = make_per_device<float>(n, kax::shape<1>{3}, 4);
  std::vector<float> xt(3 * n);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t d = 0; d < n; ++d) xt[k * n + d] = cols.at(d, k);
  const auto x = kax::from(xt, kax::shape<2>{3, n});
  auto f = [](const auto& c) { return c * 2.0f + kax::psum<"i">(c); };

  std::vector<float> want(n * 3);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < 3; ++k) {
      float s = 0;
      for (std::size_t e = 0; e < n; ++e) s += cols.at(e, k);
      want[d * 3 + k] = cols.at(d, k) * 2.0f + s;
    }
  const kax::Array<float, 2> y = kax::pmap<"i">(f, kax::in_axes(1))(x);
  require_values(y, kax::shape<2>{n, 3}, want);
  const kax::Array<float, 2> y_neg = kax::pmap<"i">(f, kax::in_axes(-1))(x);
  require_values(y_neg, kax::shape<2>{n, 3}, want);
}

TEST_CASE("pmap maps an expression argument without evaluating it first", "[pmap][in_axes]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 5);
  const kax::Array<float, 2> y = kax::pmap<"i">([](const auto& a) { return a + kax::psum<"i">(a); })(x.array() * 2.0f + 1.0f);
  std::vector<float> want(n * 3);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < 3; ++k) {
      float s = 0;
      for (std::size_t e = 0; e < n; ++e) s += x.at(e, k) * 2.0f + 1.0f;
      want[d * 3 + k] = x.at(d, k) * 2.0f + 1.0f + s;
    }
  require_values(y, kax::shape<2>{n, 3}, want);
}

TEST_CASE("pmap maps every array of a tuple argument", "[pmap][in_axes]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 6);
  const auto z = make_per_device<float>(n, kax::shape<1>{3}, 8);
  const kax::Array<float, 2> y = kax::pmap<"i">([](const auto& t) {
    return std::get<0>(t) - kax::pmax<"i">(std::get<1>(t));
  })(std::make_tuple(x.array(), z.array()));
  std::vector<float> want(n * 3);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < 3; ++k) {
      float mx = z.at(0, k);
      for (std::size_t e = 1; e < n; ++e) mx = std::max(mx, z.at(e, k));
      want[d * 3 + k] = x.at(d, k) - mx;
    }
  require_values(y, kax::shape<2>{n, 3}, want);
}

TEST_CASE("pmap with out_axes 1 puts the device axis second", "[pmap][out_axes]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 1);
  const kax::Array<float, 2> y = kax::pmap<"i">([](const auto& a) { return a * 10.0f; }, kax::out_axes(1))(x.array());
  std::vector<float> want(3 * n);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t d = 0; d < n; ++d) want[k * n + d] = x.at(d, k) * 10.0f;
  require_values(y, kax::shape<2>{3, n}, want);
}

TEST_CASE("pmap with out_axes none returns the value every device agrees on", "[pmap][out_axes]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<2>{2, 3}, 2);
  const kax::Array<float, 2> y =
      kax::pmap<"i">([](const auto& a) { return kax::psum<"i">(a); }, kax::out_axes(kax::none))(x.array());
  std::vector<float> want(x.m, 0.0f);
  for (std::size_t e = 0; e < n; ++e)
    for (std::size_t k = 0; k < x.m; ++k) want[k] += x.at(e, k);
  require_values(y, kax::shape<2>{2, 3}, want);
}

TEST_CASE("pmap of a function returning a tuple returns a tuple of arrays, with out_axes per element",
          "[pmap][out_axes]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<double>(n, kax::shape<1>{3}, 3);
  auto f = [](const auto& a) { return std::make_tuple(kax::psum<"i">(a), a * 2.0, kax::sum(a)); };

  std::vector<double> total(3, 0.0), twice(n * 3), twice_t(3 * n), local(n, 0.0);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < 3; ++k) {
      total[k] += x.at(d, k);
      twice[d * 3 + k] = twice_t[k * n + d] = 2.0 * x.at(d, k);
      local[d] += x.at(d, k);
    }
  std::vector<double> total_stacked;
  for (std::size_t d = 0; d < n; ++d) total_stacked.insert(total_stacked.end(), total.begin(), total.end());

  const auto [s, t, l] = kax::pmap<"i">(f)(x.array());
  require_values(s, kax::shape<2>{n, 3}, total_stacked);
  require_values(t, kax::shape<2>{n, 3}, twice);
  require_values(l, kax::shape<1>{n}, local);

  const std::tuple<kax::Array<double, 1>, kax::Array<double, 2>, kax::Array<double, 1>> r =
      kax::pmap<"i">(f, kax::out_axes(kax::none, 1, 0))(x.array());
  require_values(std::get<0>(r), kax::shape<1>{3}, total);
  require_values(std::get<1>(r), kax::shape<2>{3, n}, twice_t);
  require_values(std::get<2>(r), kax::shape<1>{n}, local);
}

TEST_CASE("pmap rejects a mapped axis longer than the number of devices, naming both sizes", "[pmap][errors]") {
  const std::size_t n = devices_n();
  const auto x = kax::zeros<float>(n + 1, 3);
  const std::string msg = thrown_message<kax::shape_error>([&] { (void)kax::pmap<"i">(sum_and_squares)(x); });
  CHECK(contains(msg, "size " + std::to_string(n + 1)));
  CHECK(contains(msg, std::to_string(n) + " devices"));
  const auto empty = kax::zeros<float>(0, 3);
  CHECK(contains(thrown_message<kax::shape_error>([&] { (void)kax::pmap<"i">(sum_and_squares)(empty); }), "size 0"));
}

TEST_CASE("pmap rejects mapped arguments of different sizes", "[pmap][errors]") {
  const std::size_t n = devices_n();
  const auto a = kax::zeros<float>(n, 3);
  const auto b = kax::zeros<float>(n + 1, 3);
  const std::string msg = thrown_message<kax::shape_error>(
      [&] { (void)kax::pmap<"i">([](const auto& u, const auto& v) { return kax::psum<"i">(u + v); })(a, b); });
  CHECK(contains(msg, "inconsistent sizes"));
}

TEST_CASE("a device program that throws makes pmap rethrow that exception at once", "[pmap][errors]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0).array();
  // Device 1, the last device and device 0 (with one device: device 0 alone).
  std::vector<int> failing_devices{0};
  if (n >= 2) failing_devices = {1, static_cast<int>(n) - 1, 0};
  for (const int failing : failing_devices) {
    INFO("device " << failing << " throws");
    const auto t0 = std::chrono::steady_clock::now();
    try {
      (void)kax::pmap<"i">(throw_on_device{failing})(x);
      FAIL("pmap returned");
    } catch (const kax::error& e) {
      FAIL("pmap threw a kax::error instead of the device's exception: " << e.what());
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "device program failed on purpose");
    }
    // The others were waiting for it: the abort wakes them, well before the collective timeout.
    CHECK(elapsed_since(t0).count() < 1.5);
  }
  // The devices are usable again.
  const auto ok = make_per_device<float>(n, kax::shape<1>{3}, 1);
  require_values(kax::pmap<"i">(sum_and_squares)(ok.array()), ok.stacked(), sum_and_squares_ref(ok));
}

TEST_CASE("a device that does not reach the others makes pmap throw collective_timeout naming the axis",
          "[pmap][errors]") {
  const std::size_t n = devices_n();
  if (n < 2) {
    WARN("needs 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  if (kax::collective_timeout_limit() > std::chrono::milliseconds(2500)) {
    WARN("needs KAX_COLLECTIVE_TIMEOUT=2 (the stalled device sleeps 3 s): skipped");
    return;
  }
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0);
  auto stall = [](const auto& a) {
    if (kax::axis_index<"i">().value == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
    return kax::psum<"i">(a);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg =
      thrown_message<kax::collective_timeout>([&] { (void)kax::pmap<"i">(stall)(x.array()); });
  CHECK(elapsed_since(t0).count() < 5.0);
  CHECK(contains(msg, "timed out"));
  CHECK(contains(msg, "axis 'i'"));
  CHECK(contains(msg, "device(s) 1"));
  // The devices are usable again.
  require_values(kax::pmap<"i">(sum_and_squares)(x.array()), x.stacked(), sum_and_squares_ref(x));
}

TEST_CASE("devices whose results have different shapes make pmap throw shape_error listing them", "[pmap][errors]") {
  const std::size_t n = devices_n();
  if (n < 2) {
    WARN("needs 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0).array();
  auto ragged = [](const auto& a) {  // device 1's result is shorter
    const long len = kax::axis_index<"i">().value == 1 ? 2 : 3;
    return kax::slice(a, {kax::range(0, len)});
  };
  const std::string msg = thrown_message<kax::shape_error>([&] { (void)kax::pmap<"i">(ragged)(x); });
  CHECK(contains(msg, "different shapes"));
  CHECK(contains(msg, "device 1: (2,)"));
  CHECK(contains(msg, "device 0: (3,)"));
}

// The devices' headers are copies: a device that throws on the mismatch must not pull its header
// out from under the others still building the same message (this crashed once).
TEST_CASE("devices that disagree on a collective make pmap throw shape_error") {
  const std::size_t n = devices_n();
  if (n < 2) {
    WARN("needs 2 devices (KAX_HOST_DEVICES >= 2): skipped");
    return;
  }
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0).array();
  auto uneven = [](const auto& a) {  // device 1 contributes 2 elements to the psum, the others 3
    const long len = kax::axis_index<"i">().value == 1 ? 2 : 3;
    return kax::sum(kax::psum<"i">(kax::slice(a, {kax::range(0, len)})));
  };
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = thrown_message<kax::shape_error>([&] { (void)kax::pmap<"i">(uneven)(x); });
  CHECK(contains(msg, "disagree"));
  CHECK(contains(msg, "device 1: kax::psum<\"i\"> of float32(2,)"));
  CHECK(contains(msg, "device 0: kax::psum<\"i\"> of float32(3,)"));
  CHECK(elapsed_since(t0).count() < 1.5);
}

TEST_CASE("vmap with an axis name reduces psum, pmean, pmax and pmin over the batch", "[vmap][collectives]") {
  // A batch of 5 (unrelated to the number of devices) of rows of 3.
  const auto x = make_per_device<float>(5, kax::shape<1>{3}, 2);
  auto over_batch = [&](auto combine, float init) {
    std::vector<float> want(5 * 3);
    for (std::size_t k = 0; k < 3; ++k) {
      float acc = init;
      for (std::size_t b = 0; b < 5; ++b) acc = combine(acc, x.at(b, k));
      for (std::size_t b = 0; b < 5; ++b) want[b * 3 + k] = acc;
    }
    return want;
  };
  const auto name = kax::axis_name<"i">;
  const kax::Array<float, 2> s = kax::vmap([](const auto& a) { return kax::psum<"i">(a); }, name)(x.array());
  const kax::Array<float, 2> m = kax::vmap([](const auto& a) { return kax::pmean<"i">(a); }, name)(x.array());
  const kax::Array<float, 2> hi = kax::vmap([](const auto& a) { return kax::pmax<"i">(a); }, name)(x.array());
  const kax::Array<float, 2> lo = kax::vmap([](const auto& a) { return kax::pmin<"i">(a); }, name)(x.array());
  std::vector<float> mean = over_batch([](float p, float v) { return p + v; }, 0.0f);
  for (float& v : mean) v /= 5.0f;
  require_values(s, kax::shape<2>{5, 3}, over_batch([](float p, float v) { return p + v; }, 0.0f));
  require_values(m, kax::shape<2>{5, 3}, mean);
  require_values(hi, kax::shape<2>{5, 3}, over_batch([](float p, float v) { return std::max(p, v); }, -1e30f));
  require_values(lo, kax::shape<2>{5, 3}, over_batch([](float p, float v) { return std::min(p, v); }, 1e30f));

  // In an expression: each example normalized by the batch total of its sums.
  const kax::Array<float, 2> norm =
      kax::vmap([](const auto& a) { return (a + 10.0f) / kax::psum<"i">(kax::sum(a + 10.0f)); }, name)(x.array());
  float total = 0;
  for (float v : x.values) total += v + 10.0f;
  std::vector<float> want(x.values);
  for (float& v : want) v = (v + 10.0f) / total;
  require_values(norm, kax::shape<2>{5, 3}, want);
}

TEST_CASE("vmap with an axis name gathers, broadcasts and indexes along the batch", "[vmap][collectives]") {
  const auto x = make_per_device<float>(4, kax::shape<2>{2, 3}, 3);  // a batch of 4 of (2, 3)
  const auto name = kax::axis_name<"i">;
  std::vector<float> gathered;
  for (std::size_t b = 0; b < 4; ++b) gathered.insert(gathered.end(), x.values.begin(), x.values.end());

  const kax::Array<float, 4> g = kax::vmap([](const auto& a) { return kax::all_gather<"i">(a); }, name)(x.array());
  require_values(g, kax::shape<4>{4, 4, 2, 3}, gathered);
  const kax::Array<float, 3> gt =
      kax::vmap([](const auto& a) { return kax::all_gather<"i">(a, kax::tiled); }, name)(x.array());
  require_values(gt, kax::shape<3>{4, 8, 3}, gathered);

  for (int src = 0; src < 4; ++src) {
    INFO("source " << src);
    const kax::Array<float, 3> p =
        kax::vmap([src](const auto& a) { return kax::pbroadcast<"i">(a, src); }, name)(x.array());
    std::vector<float> want;
    for (std::size_t b = 0; b < 4; ++b)
      for (std::size_t k = 0; k < x.m; ++k) want.push_back(x.at(static_cast<std::size_t>(src), k));
    require_values(p, kax::shape<3>{4, 2, 3}, want);
  }

  const kax::Array<std::int32_t, 1> idx = kax::vmap([](const auto&) { return kax::axis_index<"i">(); }, name)(x.array());
  require_values(idx, kax::shape<1>{4}, std::vector<std::int32_t>{0, 1, 2, 3});
}

TEST_CASE("vmap with an axis name treats an unbatched operand as the same value in every example",
          "[vmap][collectives]") {
  // psum of a value every example shares is the value times the batch size; pmax returns it.
  const auto x = make_per_device<float>(3, kax::shape<1>{2}, 1);
  const auto w = kax::from(std::vector<float>{1.5f, -2.0f});
  const kax::Array<float, 2> y = kax::vmap(
      [](const auto& a, const auto& ws) { return a + kax::psum<"i">(ws * 10.0f) + kax::pmax<"i">(ws); },
      kax::in_axes(0, kax::none), kax::axis_name<"i">)(x.array(), w);
  const std::vector<float> wv{1.5f, -2.0f};
  std::vector<float> want(3 * 2);
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t k = 0; k < 2; ++k) want[b * 2 + k] = x.at(b, k) + wv[k] * 10.0f * 3.0f + wv[k];
  require_values(y, kax::shape<2>{3, 2}, want);
}

// JAX: psum of a value that does not depend on the batch is value * batch size, pmax is the value;
// the collective must be rewritten even under an unbatched node or as the whole result.
TEST_CASE("vmap with an axis name rewrites collectives nested in unbatched subexpressions") {
  const auto x = make_per_device<float>(3, kax::shape<1>{2}, 1);
  const auto w = kax::from(std::vector<float>{1.5f, -2.0f});
  const std::vector<float> wv{1.5f, -2.0f};
  const kax::Array<float, 2> y = kax::vmap(
      [](const auto& a, const auto& ws) { return a + kax::psum<"i">(ws) * 10.0f + kax::psum<"i">(kax::pmax<"i">(ws)); },
      kax::in_axes(0, kax::none), kax::axis_name<"i">)(x.array(), w);
  std::vector<float> want(3 * 2);
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t k = 0; k < 2; ++k) want[b * 2 + k] = x.at(b, k) + wv[k] * 3.0f * 10.0f + wv[k] * 3.0f;
  require_values(y, kax::shape<2>{3, 2}, want);
  const kax::Array<float, 2> only = kax::vmap([](const auto&, const auto& ws) { return kax::psum<"i">(ws); },
                                              kax::in_axes(0, kax::none), kax::axis_name<"i">)(x.array(), w);
  require_values(only, kax::shape<2>{3, 2}, std::vector<float>{4.5f, -6.0f, 4.5f, -6.0f, 4.5f, -6.0f});
}

TEST_CASE("pmap of vmap runs collectives over both the device and the batch axis names", "[pmap][vmap]") {
  const std::size_t n = devices_n();
  constexpr std::size_t batch = 3, len = 4;
  // x: (n, batch, len), x[d][b][k] = v(d, b * len + k)
  const auto x = make_per_device<float>(n, kax::shape<2>{batch, len}, 4);
  auto at = [&](std::size_t d, std::size_t b, std::size_t k) { return x.at(d, b * len + k); };
  auto f = [](const auto& a) {  // a: one example, (len,)
    auto mixed = kax::psum<"dev">(a) * 100.0f + kax::psum<"b">(a) + kax::psum<"dev">(kax::psum<"b">(a)) * 10000.0f;
    auto where = kax::astype<float>(kax::axis_index<"dev">()) * 10.0f + kax::astype<float>(kax::axis_index<"b">()) + a * 0.0f;
    return std::make_tuple(mixed, where, kax::all_gather<"dev">(a));
  };
  const auto [mixed, where, gathered] = kax::pmap<"dev">(kax::vmap(f, kax::axis_name<"b">))(x.array());

  std::vector<float> want_mixed, want_where, want_gathered;
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t k = 0; k < len; ++k) {
        float over_dev = 0, over_b = 0, over_both = 0;
        for (std::size_t e = 0; e < n; ++e) over_dev += at(e, b, k);
        for (std::size_t c = 0; c < batch; ++c) over_b += at(d, c, k);
        for (std::size_t e = 0; e < n; ++e)
          for (std::size_t c = 0; c < batch; ++c) over_both += at(e, c, k);
        want_mixed.push_back(over_dev * 100.0f + over_b + over_both * 10000.0f);
        want_where.push_back(static_cast<float>(d) * 10.0f + static_cast<float>(b));
      }
      for (std::size_t e = 0; e < n; ++e)
        for (std::size_t k = 0; k < len; ++k) want_gathered.push_back(at(e, b, k));
    }
  require_values(mixed, kax::shape<3>{n, batch, len}, want_mixed);
  require_values(where, kax::shape<3>{n, batch, len}, want_where);
  require_values(gathered, kax::shape<4>{n, batch, n, len}, want_gathered);
}

TEST_CASE("pmap with donate_argnums writes the result into the donated argument's buffer", "[pmap][donate]") {
  const std::size_t n = devices_n();
  kax::Array<float, 2> x(n, 5);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t j = 0; j < 5; ++j) x(d, j) = static_cast<float>(10 * d + j);
  std::vector<float> want(n * 5);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t j = 0; j < 5; ++j) {
      float column = 0;
      for (std::size_t e = 0; e < n; ++e) column += static_cast<float>(10 * e + j);
      want[d * 5 + j] = 2.0f * static_cast<float>(10 * d + j) + column;
    }
  const float* buffer = x.data();
  // Every device reads its own slice (and, through psum, the others') before writing its slice.
  auto f = [](auto v) { return v * 2.0f + kax::psum<"i">(v); };
  const kax::Array<float, 2> y = kax::pmap<"i">(f, kax::donate_argnums<0>)(x);
  CHECK(y.data() == buffer);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t j = 0; j < 5; ++j) CHECK(y(d, j) == want[d * 5 + j]);
  SECTION("a psum at the root combines in place, over the donated operand itself") {
    kax::Array<float, 2> v(n, 5);
    for (std::size_t d = 0; d < n; ++d)
      for (std::size_t j = 0; j < 5; ++j) v(d, j) = static_cast<float>(10 * d + j);
    const float* own = v.data();
    const kax::Array<float, 2> s = kax::pmap<"i">([](auto a) { return kax::psum<"i">(a); }, kax::donate_argnums<0>)(v);
    CHECK(s.data() == own);
    for (std::size_t d = 0; d < n; ++d)
      for (std::size_t j = 0; j < 5; ++j) {
        float column = 0;
        for (std::size_t e = 0; e < n; ++e) column += static_cast<float>(10 * e + j);
        CHECK(s(d, j) == column);
      }
  }
  SECTION("a donated argument of another shape or dtype, or mapped along another axis, is not used") {
    kax::Array<double, 2> other(n, 5);
    const kax::Array<float, 2> z = kax::pmap<"i">(f, kax::donate_argnums<0>)(kax::Array<float, 2>(kax::astype<float>(other)));
    CHECK(z.extents() == kax::shape<2>{n, 5});
    kax::Array<float, 2> cols(5, n);
    auto g = [](auto v) { return v + 1.0f; };
    const kax::Array<float, 2> w = kax::pmap<"i">(g, kax::in_axes(1), kax::donate_argnums<0>)(cols);
    CHECK(w.data() != cols.data());
    CHECK(w(0, 0) == 1.0f);
  }
}
