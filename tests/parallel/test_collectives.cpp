// The collectives (psum, pmean, pmax, pmin, all_gather, ppermute, pbroadcast, axis_index) inside
// kax::pmap on the devices this run was started with (KAX_HOST_DEVICES = 1, 2 or 4), against
// naive loops over the per-device inputs, as jax.lax's parallel operators define them; their
// operand errors; and kax::devices().
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
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

// One object per collective, so that every test using it with the same operand type shares one
// pmap instantiation.
constexpr auto psum_i = [](const auto& a) { return kax::psum<"i">(a); };
constexpr auto pmean_i = [](const auto& a) { return kax::pmean<"i">(a); };
constexpr auto pmax_i = [](const auto& a) { return kax::pmax<"i">(a); };
constexpr auto pmin_i = [](const auto& a) { return kax::pmin<"i">(a); };
constexpr auto all_gather_i = [](const auto& a) { return kax::all_gather<"i">(a); };
constexpr auto all_gather_tiled_i = [](const auto& a) { return kax::all_gather<"i">(a, kax::tiled); };

struct ppermute_i {
  std::vector<std::pair<int, int>> perm;
  template <class A>
  auto operator()(const A& a) const {
    return kax::ppermute<"i">(a, perm);
  }
};

struct pbroadcast_i {
  int source = 0;
  template <class A>
  auto operator()(const A& a) const {
    return kax::pbroadcast<"i">(a, source);
  }
};

// pmap<"i">(op) of `in` has the shape of `in`, and device d's element k is ref(in, d, k).
template <class T, std::size_t R, class Op, class Ref>
void check_op(const Op& op, const per_device<T, R>& in, Ref ref) {
  const kax::Array<T, R + 1> got = kax::pmap<"i">(op)(in.array());
  std::vector<T> want(in.n * in.m);
  for (std::size_t d = 0; d < in.n; ++d)
    for (std::size_t k = 0; k < in.m; ++k) want[d * in.m + k] = ref(in, d, k);
  require_values(got, in.stacked(), want);
}

// check_op on per-device operands of rank 0, 1 and 2 for float; of rank 2 only for the other
// dtypes (the exchange depends on the dtype, the shapes on the rank: this covers both at a
// fraction of the compile time of every combination).
template <class T, class Op, class Ref>
void check_op_ranks(const Op& op, Ref ref) {
  const std::size_t n = devices_n();
  if constexpr (std::is_same_v<T, float>) {
    {
      INFO("rank-0 operand");
      check_op(op, make_per_device<T>(n, kax::shape<0>{}, 0), ref);
    }
    {
      INFO("rank-1 operand (5)");
      check_op(op, make_per_device<T>(n, kax::shape<1>{5}, 1), ref);
    }
  }
  {
    INFO("rank-2 operand (2, 3)");
    check_op(op, make_per_device<T>(n, kax::shape<2>{2, 3}, 2), ref);
  }
}

constexpr auto sum_ref = [](const auto& in, std::size_t, std::size_t k) {
  auto s = in.at(0, k);
  for (std::size_t e = 1; e < in.n; ++e) s += in.at(e, k);
  return s;
};
// NaN propagates, as in jax.lax.pmax/pmin.
constexpr auto max_ref = [](const auto& in, std::size_t, std::size_t k) {
  auto s = in.at(0, k);
  for (std::size_t e = 1; e < in.n; ++e) {
    const auto v = in.at(e, k);
    if (v != v || s != s) s = v != v ? v : s;
    else if (v > s) s = v;
  }
  return s;
};
constexpr auto min_ref = [](const auto& in, std::size_t, std::size_t k) {
  auto s = in.at(0, k);
  for (std::size_t e = 1; e < in.n; ++e) {
    const auto v = in.at(e, k);
    if (v != v || s != s) s = v != v ? v : s;
    else if (v < s) s = v;
  }
  return s;
};

// all_gather of `in`: (n, n, inner...) untiled, (n, n * inner[0], ...) tiled; either way device d's
// result, flattened, is every device's slice in device order.
template <class T, std::size_t R>
std::vector<T> gathered(const per_device<T, R>& in) {
  std::vector<T> want;
  for (std::size_t d = 0; d < in.n; ++d) want.insert(want.end(), in.values.begin(), in.values.end());
  return want;
}

template <class T, std::size_t R>
void check_all_gather(const kax::shape<R>& inner, int salt) {
  const std::size_t n = devices_n();
  const auto in = make_per_device<T>(n, inner, salt);
  const kax::Array<T, R + 2> got = kax::pmap<"i">(all_gather_i)(in.array());
  kax::shape<R + 2> s{};
  s[0] = n;
  s[1] = n;
  for (std::size_t k = 0; k < R; ++k) s[k + 2] = inner[k];
  require_values(got, s, gathered(in));
}

template <class T, std::size_t R>
void check_all_gather_tiled(const kax::shape<R>& inner, int salt) {
  const std::size_t n = devices_n();
  const auto in = make_per_device<T>(n, inner, salt);
  const kax::Array<T, R + 1> got = kax::pmap<"i">(all_gather_tiled_i)(in.array());
  kax::shape<R + 1> s = in.stacked();
  s[1] = n * inner[0];
  require_values(got, s, gathered(in));
}

// Device d's value from ppermute with `perm`: its source's, or zero.
template <class T, std::size_t R>
T permuted(const per_device<T, R>& in, const std::vector<std::pair<int, int>>& perm, std::size_t d, std::size_t k) {
  for (const auto& [src, dst] : perm)
    if (static_cast<std::size_t>(dst) == d) return in.at(static_cast<std::size_t>(src), k);
  return T{};
}

}  // namespace

TEST_CASE("kax::devices lists local_device_count CPU devices with ids 0 to n-1 in one process", "[devices]") {
  const int n = kax::local_device_count();
  REQUIRE(n >= 1);
  const std::vector<kax::Device> devs = kax::devices();
  REQUIRE(devs.size() == static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    INFO("device " << k);
    CHECK(devs[static_cast<std::size_t>(k)].id == k);
    CHECK(devs[static_cast<std::size_t>(k)].local_id == k);
    CHECK(devs[static_cast<std::size_t>(k)].process_index == 0);
    CHECK(devs[static_cast<std::size_t>(k)].to_string() == "CpuDevice(id=" + std::to_string(k) + ")");
  }
  CHECK(kax::process_index() == 0);
  CHECK(kax::process_count() == 1);
  CHECK(kax::device_count() == n);
  CHECK(kax::local_devices().size() == static_cast<std::size_t>(n));
}

TEST_CASE("kax::initialize after the first use accepts the same settings and rejects other ones", "[devices]") {
  const int n = kax::local_device_count();  // freezes the settings
  REQUIRE_NOTHROW(kax::initialize({.host_devices = n}));
  const std::string msg = thrown_message<kax::error>([&] { kax::initialize({.host_devices = n + 1}); });
  CHECK(contains(msg, "already fixed"));
  CHECK(kax::local_device_count() == n);
}

TEMPLATE_TEST_CASE("psum gives every device the elementwise sum over the devices", "[collectives][psum]", float,
                   double, std::int32_t) {
  check_op_ranks<TestType>(psum_i, sum_ref);
}

TEMPLATE_TEST_CASE("pmean gives every device the elementwise mean over the devices", "[collectives][pmean]", float,
                   double) {
  check_op_ranks<TestType>(pmean_i, [](const auto& in, std::size_t d, std::size_t k) {
    return sum_ref(in, d, k) / static_cast<TestType>(in.n);
  });
}

TEMPLATE_TEST_CASE("pmax gives every device the elementwise maximum over the devices", "[collectives][pmax]", float,
                   double, std::int32_t) {
  check_op_ranks<TestType>(pmax_i, max_ref);
}

TEMPLATE_TEST_CASE("pmin gives every device the elementwise minimum over the devices", "[collectives][pmin]", float,
                   double, std::int32_t) {
  check_op_ranks<TestType>(pmin_i, min_ref);
}

TEMPLATE_TEST_CASE("pmax and pmin propagate a NaN of any device to every device", "[collectives][pmax][pmin]", float,
                   double) {
  const std::size_t n = devices_n();
  auto in = make_per_device<TestType>(n, kax::shape<1>{5}, 1);
  const TestType nan = std::numeric_limits<TestType>::quiet_NaN();
  in.values[0 * in.m + 1] = nan;        // device 0, element 1
  in.values[(n - 1) * in.m + 3] = nan;  // the last device, element 3
  check_op(pmax_i, in, [&](const auto& x, std::size_t d, std::size_t k) {
    return k == 1 || k == 3 ? nan : max_ref(x, d, k);
  });
  check_op(pmin_i, in, [&](const auto& x, std::size_t d, std::size_t k) {
    return k == 1 || k == 3 ? nan : min_ref(x, d, k);
  });
}

TEMPLATE_TEST_CASE("all_gather stacks every device's value along a new leading axis of size n",
                   "[collectives][all_gather]", float, double, std::int32_t) {
  if constexpr (std::is_same_v<TestType, float>) {  // other dtypes: rank 2 only, as check_op_ranks
    check_all_gather<TestType>(kax::shape<0>{}, 0);
    check_all_gather<TestType>(kax::shape<1>{5}, 1);
  }
  check_all_gather<TestType>(kax::shape<2>{2, 3}, 2);
}

TEMPLATE_TEST_CASE("all_gather with kax::tiled concatenates the devices' values along axis 0",
                   "[collectives][all_gather]", float, double, std::int32_t) {
  if constexpr (std::is_same_v<TestType, float>) check_all_gather_tiled<TestType>(kax::shape<1>{5}, 1);
  check_all_gather_tiled<TestType>(kax::shape<2>{2, 3}, 2);
}

TEMPLATE_TEST_CASE("ppermute around a ring gives each device its predecessor's value", "[collectives][ppermute]",
                   float, double) {
  const std::size_t n = devices_n();
  ppermute_i op;
  for (std::size_t d = 0; d < n; ++d) op.perm.emplace_back(static_cast<int>(d), static_cast<int>((d + 1) % n));
  check_op_ranks<TestType>(op, [&](const auto& in, std::size_t d, std::size_t k) { return permuted(in, op.perm, d, k); });
}

TEMPLATE_TEST_CASE("ppermute with a partial permutation gives zeros to the devices that no pair sends to",
                   "[collectives][ppermute]", float, double) {
  const std::size_t n = devices_n();
  const auto in = make_per_device<TestType>(n, kax::shape<2>{2, 3}, 3);
  ppermute_i shift;  // (0 -> 1), (1 -> 2), ...: device 0 gets zeros (with one device, every device does)
  for (std::size_t d = 0; d + 1 < n; ++d) shift.perm.emplace_back(static_cast<int>(d), static_cast<int>(d + 1));
  check_op(shift, in, [&](const auto& x, std::size_t d, std::size_t k) {
    return d == 0 ? TestType(0) : x.at(d - 1, k);
  });
  ppermute_i last_to_first{{{static_cast<int>(n) - 1, 0}}};  // only device 0 receives
  check_op(last_to_first, in, [&](const auto& x, std::size_t d, std::size_t k) {
    return d == 0 ? x.at(n - 1, k) : TestType(0);
  });
  ppermute_i nothing;  // no pairs: zeros everywhere
  check_op(nothing, in, [](const auto&, std::size_t, std::size_t) { return TestType(0); });
}

TEMPLATE_TEST_CASE("pbroadcast gives every device the value of the source device", "[collectives][pbroadcast]",
                   float, double) {
  const std::size_t n = devices_n();
  for (std::size_t s = 0; s < n; ++s) {
    INFO("source " << s);
    const pbroadcast_i op{static_cast<int>(s)};
    check_op_ranks<TestType>(op, [&](const auto& in, std::size_t, std::size_t k) { return in.at(s, k); });
  }
}

TEST_CASE("axis_index is each device's index along the pmapped axis", "[collectives][axis_index]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0);

  const kax::Array<std::int32_t, 1> idx = kax::pmap<"i">([](const auto&) { return kax::axis_index<"i">(); })(x.array());
  std::vector<std::int32_t> want_idx(n);
  for (std::size_t d = 0; d < n; ++d) want_idx[d] = static_cast<std::int32_t>(d);
  require_values(idx, kax::shape<1>{n}, want_idx);

  // In an expression, and as a host value while the device builds its graph.
  const kax::Array<float, 2> y = kax::pmap<"i">([](const auto& a) {
    const float host = static_cast<float>(kax::axis_index<"i">().value);
    return a + kax::astype<float>(kax::axis_index<"i">()) * 100.0f + host * 1000.0f;
  })(x.array());
  std::vector<float> want(n * 3);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < 3; ++k) want[d * 3 + k] = x.at(d, k) + 1100.0f * static_cast<float>(d);
  require_values(y, kax::shape<2>{n, 3}, want);
}

TEST_CASE("collectives take expressions as operands: psum of a sum and of an elementwise expression",
          "[collectives][expressions]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<2>{2, 3}, 4);

  double total = 0;
  for (float v : x.values) total += v;
  const kax::Array<float, 1> s = kax::pmap<"i">([](const auto& a) { return kax::psum<"i">(kax::sum(a)); })(x.array());
  require_values(s, kax::shape<1>{n}, std::vector<float>(n, static_cast<float>(total)));

  const kax::Array<float, 3> y = kax::pmap<"i">([](const auto& a) { return kax::psum<"i">(a * 2.0f + 1.0f); })(x.array());
  std::vector<float> want(n * x.m);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < x.m; ++k) {
      float acc = 0;
      for (std::size_t e = 0; e < n; ++e) acc += x.at(e, k) * 2.0f + 1.0f;
      want[d * x.m + k] = acc;
    }
  require_values(y, x.stacked(), want);
}

TEST_CASE("collective results feed further expressions and reductions", "[collectives][expressions]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<double>(n, kax::shape<2>{2, 3}, 5);

  // (a + 10) / psum(sum(a + 10)): every value is positive, so the total is not zero.
  const kax::Array<double, 3> norm =
      kax::pmap<"i">([](const auto& a) { return (a + 10.0) / kax::psum<"i">(kax::sum(a + 10.0)); })(x.array());
  double total = 0;
  for (double v : x.values) total += v + 10.0;
  std::vector<double> want(n * x.m);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = (x.values[i] + 10.0) / total;
  require_values(norm, x.stacked(), want);

  // pmax - pmin (two collectives in one expression), and the max of a psum (a reduction of one).
  const kax::Array<double, 3> spread =
      kax::pmap<"i">([](const auto& a) { return kax::pmax<"i">(a) - kax::pmin<"i">(a); })(x.array());
  const kax::Array<double, 1> top = kax::pmap<"i">([](const auto& a) { return kax::max(kax::psum<"i">(a)); })(x.array());
  double top_want = -1e300;
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < x.m; ++k) {
      want[d * x.m + k] = max_ref(x, d, k) - min_ref(x, d, k);
      top_want = std::max(top_want, sum_ref(x, d, k));
    }
  require_values(spread, x.stacked(), want);
  require_values(top, kax::shape<1>{n}, std::vector<double>(n, top_want));

  // The sum over axis 0 of an all_gather is the psum; a psum of a pmax is n times the max.
  const kax::Array<double, 3> via_gather =
      kax::pmap<"i">([](const auto& a) { return kax::sum(kax::all_gather<"i">(a), 0); })(x.array());
  const kax::Array<double, 3> nested = kax::pmap<"i">([](const auto& a) { return kax::psum<"i">(kax::pmax<"i">(a)); })(x.array());
  std::vector<double> want_nested(n * x.m);
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < x.m; ++k) {
      want[d * x.m + k] = sum_ref(x, d, k);
      want_nested[d * x.m + k] = static_cast<double>(n) * max_ref(x, d, k);
    }
  require_values(via_gather, x.stacked(), want);
  require_values(nested, x.stacked(), want_nested);
}

TEST_CASE("a collective over a name that no transform binds throws kax::error naming the unbound axis",
          "[collectives][errors]") {
  const auto x = kax::from(std::vector<float>{1, 2, 3});
  CHECK(contains(thrown_message<kax::error>([&] { (void)kax::psum<"i">(x); }), "unbound axis name 'i'"));
  CHECK(contains(thrown_message<kax::error>([&] { (void)kax::all_gather<"i">(x * 2.0f); }), "unbound axis name"));
  CHECK(contains(thrown_message<kax::error>([&] { (void)kax::axis_index<"i">(); }), "unbound axis name"));
  // vmap without kax::axis_name binds nothing.
  CHECK(contains(thrown_message<kax::error>([&] {
          const kax::Array<float, 1> y = kax::vmap([](const auto& a) { return kax::pmax<"i">(a); })(x);
          (void)y;
        }),
        "unbound axis name"));
}

TEST_CASE("ppermute rejects a repeated destination or source and a device outside the axis with kax::axis_error",
          "[collectives][ppermute][errors]") {
  const std::size_t n = devices_n();
  const int last = static_cast<int>(n) - 1;
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0).array();
  auto run = [&](std::vector<std::pair<int, int>> perm) {
    return thrown_message<kax::axis_error>([&] { (void)kax::pmap<"i">(ppermute_i{std::move(perm)})(x); });
  };
  CHECK(contains(run({{0, last}, {last, last}}), "unique"));  // the destination twice (n = 1: the pair twice)
  CHECK(contains(run({{0, 0}, {0, last}}), "unique"));        // the source twice
  CHECK(contains(run({{0, last + 1}}), "outside the axis of size " + std::to_string(n)));
  CHECK(contains(run({{-1, 0}}), "outside the axis"));
}

TEST_CASE("pbroadcast rejects a source outside the axis with kax::axis_error", "[collectives][pbroadcast][errors]") {
  const std::size_t n = devices_n();
  const auto x = make_per_device<float>(n, kax::shape<1>{3}, 0).array();
  for (const int bad : {static_cast<int>(n), -1}) {
    INFO("source " << bad);
    CHECK(contains(thrown_message<kax::axis_error>([&] { (void)kax::pmap<"i">(pbroadcast_i{bad})(x); }),
                   "source " + std::to_string(bad) + " is outside the axis of size " + std::to_string(n)));
  }
}
