// Helpers of the pmap and collective tests: per-device inputs of known values, and comparisons with
// expected values computed by naive loops in the tests.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "kax/kax.hpp"

namespace kax_ptest {

// The number of devices the run was started with (KAX_HOST_DEVICES).
inline std::size_t devices_n() { return static_cast<std::size_t>(kax::local_device_count()); }

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Element k of device d's slice: small values of both signs that are not monotone in d (so that
// pmax and pmin pick different devices per element), halves for floating point; every sum of
// them is exact in every dtype.
template <class T>
T value_at(std::size_t d, std::size_t k, int salt = 0) {
  const long v = static_cast<long>((d * 7 + k * 3 + static_cast<std::size_t>(salt) * 5) % 11) - 5;
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v) + static_cast<T>(0.5) * static_cast<T>((d + k) % 2);
  else return static_cast<T>(v);
}

// n slices of shape `inner` stacked along axis 0: the argument of a pmap over n devices.
template <class T, std::size_t R>
struct per_device {
  std::size_t n = 0;
  std::size_t m = 1;  // elements per slice
  kax::shape<R> inner{};
  std::vector<T> values;  // (n, inner...) row-major

  T at(std::size_t d, std::size_t k) const { return values[d * m + k]; }
  kax::shape<R + 1> stacked() const {
    kax::shape<R + 1> s{};
    s[0] = n;
    for (std::size_t k = 0; k < R; ++k) s[k + 1] = inner[k];
    return s;
  }
  kax::Array<T, R + 1> array() const { return kax::from(values, stacked()); }
};

template <class T, std::size_t R>
per_device<T, R> make_per_device(std::size_t n, const kax::shape<R>& inner, int salt = 0) {
  per_device<T, R> p;
  p.n = n;
  p.inner = inner;
  for (std::size_t e : inner) p.m *= e;
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t k = 0; k < p.m; ++k) p.values.push_back(value_at<T>(d, k, salt));
  return p;
}

template <class T>
bool same_value(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want)) return std::isnan(got);
    return got == Approx(want).epsilon(1e-6).margin(1e-6);
  } else {
    return got == want;
  }
}

// got has shape `shape` and the row-major values `want` (NaN matches NaN).
template <class T, std::size_t R>
void require_values(const kax::Array<T, R>& got, const kax::shape<R>& shape, const std::vector<T>& want) {
  REQUIRE(got.extents() == shape);
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!same_value(v[i], want[i])) {
      if (bad++ < 5) {  // a few mismatches say enough
        INFO("element " << i << " of " << v.size() << ": got " << v[i] << ", want " << want[i]);
        CHECK(same_value(v[i], want[i]));
      }
    }
  REQUIRE(bad == 0);
}

// The (n, inner...) shape of a per-device result.
template <std::size_t R>
kax::shape<R + 1> stacked_shape(std::size_t n, const kax::shape<R>& inner) {
  kax::shape<R + 1> s{};
  s[0] = n;
  for (std::size_t k = 0; k < R; ++k) s[k + 1] = inner[k];
  return s;
}

// The message of the exception of type E that f throws (the test fails if it throws nothing).
template <class E, class F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no exception was thrown");
  return {};
}

}  // namespace kax_ptest
