// Reductions (kax::sum, mean, prod, max, min, any, all, argmax, argmin) against NumPy reference
// data (scripts/gen_reduction_data.py -> tests/data/reduce_*.txt) and naive loops written here.
// Covers the three traversals of plan/reduce_plan.hpp (flat, inner, outer), block splitting and
// the combine-blocks kernel, JAX's dtype rules, NaN and empty reductions, errors, staging (a
// reduction feeding elementwise work is computed once) and re-evaluation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "data_file.hpp"
#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

using none_t = std::nullopt_t;
constexpr none_t none = std::nullopt;
constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

using kax_test::launch_counter;

template <class T, std::size_t R>
std::vector<std::size_t> shape_of(const kax::Array<T, R>& a) {
  const auto s = a.extents();
  return {s.begin(), s.end()};
}

// Checks `got` against tests/data/reduce_<name>.txt: the shape `want` (it differs from the file's
// by keepdims' unit axes, the values do not), then every value: floats within `eps` (relative,
// and absolute near 0: a different summation order), integers and bools exactly.
template <class T, std::size_t R>
void require_file(const kax::Array<T, R>& got, const std::string& name,
                  const std::vector<std::size_t>& want, double eps = 1e-12) {
  const kax_test::data_file d = kax_test::read_data("reduce_" + name);
  INFO("reference file reduce_" << name);
  REQUIRE(shape_of(got) == want);
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == d.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("flat index " << i);
    if constexpr (std::is_floating_point_v<T>)
      REQUIRE(static_cast<double>(v[i]) == Approx(d.values[i]).epsilon(eps).margin(eps));
    else
      REQUIRE(static_cast<double>(v[i]) == d.values[i]);
  }
}

// The shape of reducing `in` over `axes` (normalized), with or without keepdims.
std::vector<std::size_t> reduced_shape(const std::vector<std::size_t>& in,
                                       const std::vector<int>& axes, bool keep) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const bool red = axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int>(k)) != axes.end();
    if (!red) out.push_back(in[k]);
    else if (keep) out.push_back(1);
  }
  return out;
}

int norm(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

// Every axis spec of a rank-3 operand, with and without keepdims, negative axes included, for
// one reduction `f` (a generic lambda forwarding to kax::sum etc.), against reduce_<src>_<op>_*.
template <class F>
void check_rank3(const kax::Array<double, 3>& x, const std::string& src, const std::string& op, F f) {
  const std::vector<std::size_t> in = shape_of(x);
  const std::string base = src + "_" + op + "_";
  require_file(kax::eval(f(x)), base + "all", {});
  require_file(kax::eval(f(x, kax::keepdims)), base + "all", {1, 1, 1});
  for (int ax : {0, 1, 2, -1, -2, -3}) {
    INFO("axis " << ax);
    const int a = norm(ax, 3);
    const std::string file = base + std::to_string(a);
    require_file(kax::eval(f(x, ax)), file, reduced_shape(in, {a}, false));
    require_file(kax::eval(f(x, ax, kax::keepdims)), file, reduced_shape(in, {a}, true));
  }
  const std::vector<std::pair<int, int>> pairs = {{0, 2}, {2, 0}, {-3, -1}, {0, 1}, {1, 0}, {1, 2}, {-1, -2}};
  for (auto [p, q] : pairs) {
    INFO("axes " << p << ", " << q);
    const int a = std::min(norm(p, 3), norm(q, 3)), b = std::max(norm(p, 3), norm(q, 3));
    const std::string file = base + std::to_string(a) + "_" + std::to_string(b);
    require_file(kax::eval(f(x, p, q)), file, reduced_shape(in, {a, b}, false));
    require_file(kax::eval(f(x, p, q, kax::keepdims)), file, reduced_shape(in, {a, b}, true));
  }
}

// Deterministic pseudo-random floats in [lo, hi) (a 64-bit LCG; no dependence on <random>'s
// implementation-defined distributions).
std::vector<float> random_floats(std::size_t n, float lo, float hi, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<float>(static_cast<double>(s >> 40) / 16777216.0);
  }
  return v;
}

// Error bound of a float32 sum by kax (plan/reduce_plan.hpp): each of the L = 256 / 4 = 64 lanes
// adds at most reduce_block / L = 8192 / 64 = 128 values in sequence (outer: 128-row cascades,
// then at most 512 / 128 = 4 cascades per block), then lanes and blocks combine pairwise
// (log2 64 = 6 levels, log2 blocks <= 8 levels here).  So |error| <= ~(128 + 4 + 6 + 8) * u *
// sum|x| with u = 2^-24; 160 * 2^-24 ~ 9.5e-6 leaves some slack.  A naive sequential float sum
// of 2^20 values has the bound 2^20 * u ~ 0.06, so this tolerance does test the blocking.
constexpr double float_sum_rel_tol = 160.0 / 16777216.0;

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. Values against NumPy: every op, every axis spec, keepdims, strided/fused/broadcast operands.

TEST_CASE("sum, mean, prod, max and min match NumPy over every axis spec, with and without keepdims",
          "[expr][reduce]") {
  // x3 (3, 4, 10): axis 0, 1 and (0, 1) take the outer traversal; w3 (6, 5, 3): inner only.
  for (const std::string src : {"x3", "w3"}) {
    INFO("operand " << src);
    const auto x = kax_test::load<double, 3>("reduce_" + src);
    check_rank3(x, src, "sum", [](const auto& e, auto... a) { return kax::sum(e, a...); });
    check_rank3(x, src, "mean", [](const auto& e, auto... a) { return kax::mean(e, a...); });
    check_rank3(x, src, "prod", [](const auto& e, auto... a) { return kax::prod(e, a...); });
    check_rank3(x, src, "max", [](const auto& e, auto... a) { return kax::max(e, a...); });
    check_rank3(x, src, "min", [](const auto& e, auto... a) { return kax::min(e, a...); });
  }
}

TEST_CASE("any and all of a fused comparison match NumPy", "[expr][reduce]") {
  const auto x = kax_test::load<double, 3>("reduce_x3");
  const std::vector<std::size_t> in = shape_of(x);
  require_file(kax::eval(kax::any(x > 1.0)), "x3_any_gt1_all", {});
  require_file(kax::eval(kax::all(x > -1.0)), "x3_all_gtm1_all", {});
  require_file(kax::eval(kax::all(x > -1.0, kax::keepdims)), "x3_all_gtm1_all", {1, 1, 1});
  for (int ax : {0, 1, 2, -1}) {
    const int a = norm(ax, 3);
    const std::string s = std::to_string(a);
    require_file(kax::eval(kax::any(x > 1.0, ax)), "x3_any_gt1_" + s, reduced_shape(in, {a}, false));
    require_file(kax::eval(kax::all(x > -1.0, ax)), "x3_all_gtm1_" + s, reduced_shape(in, {a}, false));
    require_file(kax::eval(kax::any(x > 1.0, ax, kax::keepdims)), "x3_any_gt1_" + s,
                 reduced_shape(in, {a}, true));
  }
  // A float operand is "true" where nonzero (NaN included), as in NumPy.
  const auto f = kax::from<double>({0.0, -0.0, 0.0});
  CHECK_FALSE(kax::eval(kax::any(f))());
  CHECK(kax::eval(kax::any(f + kax::from<double>({0.0, nan_v, 0.0})))());
  CHECK_FALSE(kax::eval(kax::all(kax::from<double>({1.0, 2.0, 0.0})))());
}

TEST_CASE("reductions of transposed and sliced operands follow the strided path correctly",
          "[expr][reduce]") {
  const auto x = kax_test::load<double, 3>("reduce_x3");
  const auto xt = kax::transpose(x);  // (10, 4, 3)
  require_file(kax::eval(kax::sum(xt)), "xt_sum_all", {});
  require_file(kax::eval(kax::sum(xt, 0)), "xt_sum_0", {4, 3});
  require_file(kax::eval(kax::sum(xt, 0, kax::keepdims)), "xt_sum_0", {1, 4, 3});
  require_file(kax::eval(kax::max(xt, 1, 2)), "xt_max_1_2", {10});
  require_file(kax::eval(kax::mean(xt, -1)), "xt_mean_2", {10, 4});
  require_file(kax::eval(kax::argmax(xt)), "xt_argmax_all", {});
  require_file(kax::eval(kax::argmin(xt, 0)), "xt_argmin_0", {4, 3});
  const auto xs = kax::slice(x, {kax::colon, kax::range(none, none, -2), kax::range(1, none)});  // (3, 2, 9)
  require_file(kax::eval(kax::sum(xs, 1)), "xs_sum_1", {3, 9});
  require_file(kax::eval(kax::max(xs, 0, 2)), "xs_max_0_2", {2});
  require_file(kax::eval(kax::max(xs, 2, 0, kax::keepdims)), "xs_max_0_2", {1, 2, 1});
  require_file(kax::eval(kax::mean(xs)), "xs_mean_all", {});
  require_file(kax::eval(kax::min(xs, 0)), "xs_min_0", {2, 9});
}

TEST_CASE("a fused operand and broadcast operands are reduced without materializing them",
          "[expr][reduce]") {
  const auto fa = kax_test::load<double, 2>("reduce_fa");
  const auto fb = kax_test::load<double, 1>("reduce_fb");
  require_file(kax::eval(kax::sum(fa * fb + 1.0)), "fused_sum_all", {});
  require_file(kax::eval(kax::sum(fa * fb + 1.0, 0)), "fused_sum_0", {7});
  require_file(kax::eval(kax::sum(fa * fb + 1.0, 1, kax::keepdims)), "fused_sum_1", {6, 1});
  {
    // The operand fuses into the reduction kernel: one launch in all.  (Expressions are built
    // outside the counter: building a reduction initializes its stage buffer's stamp.)
    const auto e = kax::sum(fa * fb + 1.0, 1);
    launch_counter count;
    const auto r = kax::eval(e);
    INFO(count.all());
    REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 1);
  }
  const auto a31 = kax_test::load<double, 2>("reduce_a31");
  const auto b14 = kax_test::load<double, 2>("reduce_b14");
  require_file(kax::eval(kax::sum(a31 + b14, 0)), "bcast_sum_0", {4});
  require_file(kax::eval(kax::sum(a31 + b14, 1)), "bcast_sum_1", {3});
  require_file(kax::eval(kax::prod(a31 * b14)), "bcast_prod_all", {});
  const auto bt = kax::broadcast_to(fb, {2, 5, 7});
  require_file(kax::eval(kax::max(bt, 1, 2)), "bcast_to_max_1_2", {2});
  require_file(kax::eval(kax::sum(bt, 0, 1)), "bcast_to_sum_0_1", {7});
}

// ---------------------------------------------------------------------------------------------
// 2. Result dtypes (JAX's rules).

TEST_CASE("result dtypes follow JAX: bool sums to int32, integer means to float64, any/all bool, "
          "argmax int64", "[expr][reduce][dtype]") {
  const auto i3 = kax_test::load<std::int32_t, 3>("reduce_i3");
  const auto x = kax_test::load<double, 3>("reduce_x3");
  const auto xf = kax::eval(kax::astype<float>(x));
  const auto b = kax::eval(x > 0.0);
  static_assert(std::is_same_v<decltype(b), const kax::Array<bool, 3>>);
  const auto sum_b = kax::eval(kax::sum(b, 2));
  const auto sum_i = kax::eval(kax::sum(i3, 1));
  const auto mean_i = kax::eval(kax::mean(i3, 1));
  const auto mean_b = kax::eval(kax::mean(b));
  const auto sum_f = kax::eval(kax::sum(xf, 0));
  const auto mean_f = kax::eval(kax::mean(xf, 0));
  const auto prod_b = kax::eval(kax::prod(b));
  const auto max_i = kax::eval(kax::max(i3, 0));
  const auto any_f = kax::eval(kax::any(xf));
  const auto all_i = kax::eval(kax::all(i3, 2));
  const auto amax = kax::eval(kax::argmax(xf));
  const auto amin = kax::eval(kax::argmin(i3, 1));
  static_assert(std::is_same_v<decltype(sum_b), const kax::Array<std::int32_t, 2>>);
  static_assert(std::is_same_v<decltype(sum_i), const kax::Array<std::int32_t, 2>>);
  static_assert(std::is_same_v<decltype(mean_i), const kax::Array<double, 2>>);
  static_assert(std::is_same_v<decltype(mean_b), const kax::Array<double, 0>>);
  static_assert(std::is_same_v<decltype(sum_f), const kax::Array<float, 2>>);
  static_assert(std::is_same_v<decltype(mean_f), const kax::Array<float, 2>>);
  static_assert(std::is_same_v<decltype(prod_b), const kax::Array<std::int32_t, 0>>);
  static_assert(std::is_same_v<decltype(max_i), const kax::Array<std::int32_t, 2>>);
  static_assert(std::is_same_v<decltype(any_f), const kax::Array<bool, 0>>);
  static_assert(std::is_same_v<decltype(all_i), const kax::Array<bool, 2>>);
  static_assert(std::is_same_v<decltype(amax), const kax::Array<std::int64_t, 0>>);
  static_assert(std::is_same_v<decltype(amin), const kax::Array<std::int64_t, 2>>);
  static_assert(std::is_same_v<kax::value_type_of<decltype(kax::sum(b))>, std::int32_t>);
  // And the values, against NumPy (integers exactly).
  require_file(sum_b, "x3_count_pos_2", {3, 4});
  require_file(kax::eval(kax::sum(x > 0.0)), "x3_count_pos_all", {});
  require_file(sum_i, "i3_sum_1", {3, 10});
  require_file(mean_i, "i3_mean_1", {3, 10}, 1e-15);
  require_file(kax::eval(kax::mean(i3)), "i3_mean_all", {}, 1e-15);
  require_file(kax::eval(kax::prod(i3, 2)), "i3_prod_2", {3, 4});
  require_file(max_i, "i3_max_0", {4, 10});
  require_file(kax::eval(kax::min(i3, 0, -1)), "i3_min_0_2", {4});
  require_file(kax::eval(kax::min(i3, -1, 0, kax::keepdims)), "i3_min_0_2", {1, 4, 1});
}

// ---------------------------------------------------------------------------------------------
// 3. argmax / argmin.

TEST_CASE("argmax and argmin match NumPy flattened and per axis, with keepdims", "[expr][reduce][arg]") {
  const auto x = kax_test::load<double, 3>("reduce_x3");
  const std::vector<std::size_t> in = shape_of(x);
  require_file(kax::eval(kax::argmax(x)), "x3_argmax_all", {});
  require_file(kax::eval(kax::argmin(x)), "x3_argmin_all", {});
  require_file(kax::eval(kax::argmax(x, kax::keepdims)), "x3_argmax_all", {1, 1, 1});
  for (int ax : {0, 1, 2, -1, -3}) {
    INFO("axis " << ax);
    const int a = norm(ax, 3);
    const std::string s = std::to_string(a);
    require_file(kax::eval(kax::argmax(x, ax)), "x3_argmax_" + s, reduced_shape(in, {a}, false));
    require_file(kax::eval(kax::argmin(x, ax)), "x3_argmin_" + s, reduced_shape(in, {a}, false));
    require_file(kax::eval(kax::argmax(x, ax, kax::keepdims)), "x3_argmax_" + s, reduced_shape(in, {a}, true));
    require_file(kax::eval(kax::argmin(x, ax, kax::keepdims)), "x3_argmin_" + s, reduced_shape(in, {a}, true));
  }
}

TEST_CASE("argmax and argmin return the first index of tied extremes", "[expr][reduce][arg]") {
  const auto t = kax_test::load<std::int32_t, 2>("reduce_t2");  // (4, 6) values in {0, 1, 2}
  require_file(kax::eval(kax::argmax(t)), "t2_argmax_all", {});
  require_file(kax::eval(kax::argmin(t)), "t2_argmin_all", {});
  for (int ax : {0, 1}) {
    require_file(kax::eval(kax::argmax(t, ax)), "t2_argmax_" + std::to_string(ax), {ax == 0 ? 6u : 4u});
    require_file(kax::eval(kax::argmin(t, ax)), "t2_argmin_" + std::to_string(ax), {ax == 0 ? 6u : 4u});
  }
  // Ties far apart, across lanes and blocks of every traversal.
  const std::size_t n = 3 * 8192 + 5;
  std::vector<float> v(n, 0.0f);
  v[9000] = v[8191] = v[20000] = 7.0f;  // 8191 is the last position of block 0
  v[8192] = v[17] = v[24000] = -7.0f;
  const auto flat = kax::from<float>(v);
  CHECK(kax::eval(kax::argmax(flat))() == 8191);
  CHECK(kax::eval(kax::argmin(flat))() == 17);
  CHECK(kax::eval(kax::argmax(kax::zeros<float>(n)))() == 0);
  // Flattened argmax of a transposed (strided) operand: inner traversal over several blocks;
  // row 0 is v, row 1 all -3, so the flat index of m(0, j) in transpose(m) is 2 * j.
  std::vector<float> two_rows(v);
  two_rows.resize(2 * n, -3.0f);
  const auto m = kax::from<float, 2>(two_rows, {2, n});
  CHECK(kax::eval(kax::argmax(kax::transpose(m)))() == 2 * 8191);
  CHECK(kax::eval(kax::argmin(kax::transpose(m)))() == 2 * 17);
  // Along the last axis (inner traversal, several blocks per row).
  const auto am = kax::eval(kax::argmax(m, 1));
  CHECK(am(0) == 8191);
  CHECK(am(1) == 0);
  const auto an = kax::eval(kax::argmin(m, -1));
  CHECK(an(0) == 17);
  CHECK(an(1) == 0);
  // Along axis 0 with the last axis kept (outer traversal, 512-row blocks).
  auto tall = kax::zeros<float>(1500, 10);
  tall(700, 3) = tall(1200, 3) = 5.0f;
  tall(600, 4) = tall(513, 4) = -1.0f;
  tall(1499, 5) = 2.0f;
  const auto ax0 = kax::eval(kax::argmax(tall, 0));
  const auto in0 = kax::eval(kax::argmin(tall, 0));
  for (std::size_t c = 0; c < 10; ++c) {
    INFO("column " << c);
    CHECK(ax0(c) == (c == 3 ? 700 : c == 5 ? 1499 : 0));
    CHECK(in0(c) == (c == 4 ? 513 : 0));
  }
}

TEST_CASE("argmax and argmin treat NaN as the extreme and return its first index, as NumPy",
          "[expr][reduce][arg][nan]") {
  const auto a = kax::from<double>({1.0, nan_v, 3.0});
  CHECK(kax::eval(kax::argmax(a))() == 1);
  CHECK(kax::eval(kax::argmin(a))() == 1);
  const auto b = kax::from<double>({5.0, 1.0, nan_v, 9.0, nan_v});
  CHECK(kax::eval(kax::argmax(b))() == 2);
  CHECK(kax::eval(kax::argmin(b))() == 2);
  // Across lanes and blocks.
  std::vector<double> v(20000, 0.0);
  v[5] = 100.0;
  v[15000] = v[17000] = nan_v;
  const auto big = kax::from<double>(v);
  CHECK(kax::eval(kax::argmax(big))() == 15000);
  CHECK(kax::eval(kax::argmin(big))() == 15000);
  // Per axis, both traversals: (3, 4) (inner for either axis) and (1500, 10) (outer on axis 0).
  const auto c = kax::from<double, 2>({0, 1, 2, 3, 4, 5, nan_v, 7, 8, 9, nan_v, 11}, {3, 4});
  const auto c0 = kax::eval(kax::argmax(c, 0));
  CHECK(c0(0) == 2);
  CHECK(c0(1) == 2);
  CHECK(c0(2) == 1);
  CHECK(c0(3) == 2);
  const auto c1 = kax::eval(kax::argmin(c, 1, kax::keepdims));
  REQUIRE(shape_of(c1) == std::vector<std::size_t>{3, 1});
  CHECK(c1(0, 0) == 0);
  CHECK(c1(1, 0) == 2);
  CHECK(c1(2, 0) == 2);
  auto tall = kax::zeros<double>(1500, 10);
  tall(1300, 3) = nan_v;
  tall(1000, 3) = nan_v;
  tall(10, 3) = 50.0;
  const auto t0 = kax::eval(kax::argmax(tall, 0));
  CHECK(t0(3) == 1000);
  CHECK(t0(2) == 0);
}

// ---------------------------------------------------------------------------------------------
// 4. NaN in max/min; empty reductions.

TEST_CASE("max and min propagate NaN on every traversal", "[expr][reduce][nan]") {
  const auto a = kax::from<double>({1.0, nan_v, 3.0});
  CHECK(std::isnan(kax::eval(kax::max(a))()));
  CHECK(std::isnan(kax::eval(kax::min(a))()));
  std::vector<float> v(20000, 1.0f);
  v[19999] = std::numeric_limits<float>::quiet_NaN();  // last lane of the last block
  const auto big = kax::from<float>(v);
  CHECK(std::isnan(kax::eval(kax::max(big))()));
  CHECK(std::isnan(kax::eval(kax::min(big))()));
  CHECK(std::isnan(kax::eval(kax::sum(big))()));
  // (3, 10): axis 0 is the outer traversal, axis 1 the inner one.
  std::vector<double> w(30);
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = std::cos(0.7 * static_cast<double>(k));
  w[1 * 10 + 4] = nan_v;
  const auto m = kax::from<double, 2>(w, {3, 10});
  const auto mx0 = kax::eval(kax::max(m, 0));
  const auto mn0 = kax::eval(kax::min(m, 0));
  for (std::size_t j = 0; j < 10; ++j) {
    INFO("column " << j);
    if (j == 4) {
      CHECK(std::isnan(mx0(j)));
      CHECK(std::isnan(mn0(j)));
    } else {
      CHECK(mx0(j) == std::max({w[j], w[10 + j], w[20 + j]}));
      CHECK(mn0(j) == std::min({w[j], w[10 + j], w[20 + j]}));
    }
  }
  const auto mx1 = kax::eval(kax::max(m, 1));
  CHECK(mx1(0) == *std::max_element(w.begin(), w.begin() + 10));
  CHECK(std::isnan(mx1(1)));
  CHECK(mx1(2) == *std::max_element(w.begin() + 20, w.end()));
  // Outer traversal with several blocks: NaN in the last block of column 2 only.
  auto tall = kax::zeros<float>(1500, 10);
  tall(1400, 2) = std::numeric_limits<float>::quiet_NaN();
  const auto tm = kax::eval(kax::max(tall, 0));
  for (std::size_t j = 0; j < 10; ++j) CHECK(std::isnan(tm(j)) == (j == 2));
  // Infinities are ordinary values.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(kax::eval(kax::max(kax::from<double>({-inf, -inf})))() == -inf);
  CHECK(kax::eval(kax::min(kax::from<double>({inf, inf})))() == inf);
}

TEST_CASE("empty reductions give the identity, NaN for mean, and throw for max/min/argmax",
          "[expr][reduce][empty]") {
  const auto z = kax::zeros<float>(0, 3);
  const auto s0 = kax::eval(kax::sum(z, 0));
  REQUIRE(shape_of(s0) == std::vector<std::size_t>{3});
  for (std::size_t j = 0; j < 3; ++j) CHECK(s0(j) == 0.0f);
  const auto p0 = kax::eval(kax::prod(z, 0, kax::keepdims));
  REQUIRE(shape_of(p0) == std::vector<std::size_t>{1, 3});
  for (std::size_t j = 0; j < 3; ++j) CHECK(p0(0, j) == 1.0f);
  CHECK(kax::eval(kax::sum(z))() == 0.0f);
  CHECK_FALSE(kax::eval(kax::any(z))());
  CHECK(kax::eval(kax::all(z))());
  const auto m0 = kax::eval(kax::mean(z, 0));
  for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(m0(j)));
  CHECK(std::isnan(kax::eval(kax::mean(kax::zeros<double>(0)))()));
  CHECK(shape_of(kax::eval(kax::sum(z, 1))) == std::vector<std::size_t>{0});
  // An empty output with non-empty reductions is fine even for max: nothing to compute.
  CHECK(shape_of(kax::eval(kax::max(z, 1))) == std::vector<std::size_t>{0});
  CHECK_THROWS_AS(kax::max(kax::zeros<double>(0)), kax::shape_error);
  CHECK_THROWS_WITH(kax::max(kax::zeros<double>(0)), Catch::Contains("kax::max") && Catch::Contains("zero-size"));
  CHECK_THROWS_AS(kax::max(z, 0), kax::shape_error);
  CHECK_THROWS_WITH(kax::min(z, 0), Catch::Contains("kax::min") && Catch::Contains("(0, 3)"));
  CHECK_THROWS_AS(kax::argmax(kax::zeros<float>(0)), kax::shape_error);
  CHECK_THROWS_AS(kax::argmin(z, 0), kax::shape_error);
}

// ---------------------------------------------------------------------------------------------
// 5. Large reductions: block splitting and the combine-blocks kernel.

TEST_CASE("a flat float sum of 2^20 + 3 values is split into blocks and stays accurate",
          "[expr][reduce][large]") {
  const std::size_t n = (std::size_t{1} << 20) + 3;  // 129 blocks of 8192, the last one partial
  const std::vector<float> v = random_floats(n, -0.5f, 1.5f, 1);
  const auto x = kax::from<float>(v);
  double ref = 0.0, mag = 0.0;
  for (float f : v) {
    ref += f;
    mag += std::abs(f);
  }
  const std::string plan = kax::plan_of(kax::sum(x));
  CHECK_THAT(plan, Catch::Contains("2 kernels, 1 temporary"));
  CHECK_THAT(plan, Catch::Contains("kax::reduce<sum,combine-blocks,float32>"));
  const auto e = kax::sum(x);
  launch_counter count;
  const auto s = kax::eval(e);
  INFO(count.all());
  REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 2);
  CHECK(count.labels[0] == "kax::reduce<sum,flat,float32,rank1->0>");
  CHECK(count.labels[1] == "kax::reduce<sum,combine-blocks,float32>");
  CHECK(std::abs(static_cast<double>(s()) - ref) <= float_sum_rel_tol * mag);
  const auto mu = kax::eval(kax::mean(x));
  CHECK(std::abs(static_cast<double>(mu()) - ref / static_cast<double>(n)) <=
        float_sum_rel_tol * mag / static_cast<double>(n));
  // Exact cases over the same blocks: integers and max.
  CHECK(kax::eval(kax::sum(kax::arange<std::int64_t>(static_cast<std::int64_t>(n))))() ==
        static_cast<std::int64_t>(n) * static_cast<std::int64_t>(n - 1) / 2);
  CHECK(kax::eval(kax::max(x))() == *std::max_element(v.begin(), v.end()));
  CHECK(kax::eval(kax::argmin(x))() == std::min_element(v.begin(), v.end()) - v.begin());
}

TEST_CASE("sum over axis 0 of (5000, 70) uses the outer traversal with several blocks",
          "[expr][reduce][large]") {
  const std::size_t R = 5000, C = 70;  // 10 blocks of 512 rows; 2 column chunks (64 + 6)
  const std::vector<float> v = random_floats(R * C, -1.0f, 1.0f, 2);
  const auto x = kax::from<float, 2>(v, {R, C});
  const auto e = kax::sum(x, 0);
  launch_counter count;
  const auto s = kax::eval(e);
  INFO(count.all());
  REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 2);
  CHECK(count.labels[0] == "kax::reduce<sum,outer,float32,rank2->1>");
  CHECK(count.labels[1] == "kax::reduce<sum,combine-blocks,float32>");
  const auto mk = kax::eval(kax::mean(x, 0, kax::keepdims));
  const auto mx = kax::eval(kax::max(x, -2));
  REQUIRE(shape_of(mk) == std::vector<std::size_t>{1, C});
  for (std::size_t j = 0; j < C; ++j) {
    INFO("column " << j);
    double ref = 0.0, mag = 0.0;
    float big = -2.0f;
    for (std::size_t i = 0; i < R; ++i) {
      ref += v[i * C + j];
      mag += std::abs(v[i * C + j]);
      big = std::max(big, v[i * C + j]);
    }
    CHECK(std::abs(static_cast<double>(s(j)) - ref) <= float_sum_rel_tol * mag);
    CHECK(std::abs(static_cast<double>(mk(0, j)) - ref / R) <= float_sum_rel_tol * mag / R);
    CHECK(mx(j) == big);
  }
}

TEST_CASE("sum over axis 1 of (3, 50000) uses the inner traversal with several blocks",
          "[expr][reduce][large]") {
  const std::size_t R = 3, C = 50000;  // 7 blocks of 8192 per row
  const std::vector<float> v = random_floats(R * C, -1.0f, 1.0f, 3);
  const auto x = kax::from<float, 2>(v, {R, C});
  const auto e = kax::sum(x, 1);
  launch_counter count;
  const auto s = kax::eval(e);
  INFO(count.all());
  REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 2);
  CHECK(count.labels[0] == "kax::reduce<sum,inner,float32,rank2->1>");
  CHECK(count.labels[1] == "kax::reduce<sum,combine-blocks,float32>");
  const auto am = kax::eval(kax::argmax(x, 1));
  for (std::size_t i = 0; i < R; ++i) {
    double ref = 0.0, mag = 0.0;
    for (std::size_t j = 0; j < C; ++j) {
      ref += v[i * C + j];
      mag += std::abs(v[i * C + j]);
    }
    CHECK(std::abs(static_cast<double>(s(i)) - ref) <= float_sum_rel_tol * mag);
    const auto row = v.begin() + static_cast<std::ptrdiff_t>(i * C);
    CHECK(am(i) == std::max_element(row, row + C) - row);
  }
}

TEST_CASE("multi-axis and non-last-axis reductions stay correct across blocks", "[expr][reduce][large]") {
  // (100, 60, 9) over (0, 1): outer traversal, 6000 rows = 12 blocks, the odometer restarts
  // inside each block.
  const std::vector<float> v = random_floats(100 * 60 * 9, 0.0f, 1.0f, 4);
  const auto x = kax::from<float, 3>(v, {100, 60, 9});
  const auto m = kax::eval(kax::mean(x, 0, 1));
  for (std::size_t k = 0; k < 9; ++k) {
    double ref = 0.0;
    for (std::size_t ij = 0; ij < 6000; ++ij) ref += v[ij * 9 + k];
    CHECK(std::abs(static_cast<double>(m(k)) - ref / 6000) <= float_sum_rel_tol * ref / 6000);
  }
  // (20000, 3) over axis 0: the last axis is too short for the outer traversal, so the inner
  // traversal walks a non-last axis (3 blocks of 8192).
  const std::vector<float> w = random_floats(20000 * 3, 0.0f, 1.0f, 5);
  const auto y = kax::from<float, 2>(w, {20000, 3});
  const auto s = kax::eval(kax::sum(y, 0));
  for (std::size_t k = 0; k < 3; ++k) {
    double ref = 0.0;
    for (std::size_t i = 0; i < 20000; ++i) ref += w[i * 3 + k];
    CHECK(std::abs(static_cast<double>(s(k)) - ref) <= float_sum_rel_tol * ref);
  }
}

TEST_CASE("a float sum of 2^25 ones is exact where naive float accumulation saturates at 2^24",
          "[expr][reduce][large]") {
  const std::size_t n = std::size_t{1} << 25;
  float naive = 0.0f;
  for (std::size_t i = 0; i < n; ++i) naive += 1.0f;
  REQUIRE(naive == 16777216.0f);  // 2^24 + 1 rounds back to 2^24 in float
  {
    const auto ones = kax::ones<float>(n);  // flat traversal, 4096 blocks
    CHECK(kax::eval(kax::sum(ones))() == 33554432.0f);
    CHECK(kax::eval(kax::mean(ones))() == 1.0f);
  }
  // The same through a broadcast (a non-flat operand: inner traversal, no 128 MiB buffer).
  CHECK(kax::eval(kax::sum(kax::broadcast_to(kax::ones<float>(1), {static_cast<long>(n)})))() ==
        33554432.0f);
  // 2^24 ones then 2^24 quarters: naive float gives 2^24 (each 0.25 is below half an ulp); the
  // blocked sum is exact, since every partial sum is a multiple of 2048 below 2^35.
  const auto idx = kax::arange<std::int32_t>(static_cast<std::int32_t>(n));
  const auto mixed = kax::where(idx < (1 << 24), 1.0f, 0.25f);
  CHECK(kax::eval(kax::sum(mixed))() == 20971520.0f);
}

// ---------------------------------------------------------------------------------------------
// 6. Determinism.

#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
TEST_CASE("float sums are bit-identical on Serial and on OpenMP", "[expr][reduce][determinism]") {
  const std::vector<float> v = random_floats(1000000, -1.0f, 1.0f, 6);
  const auto x = kax::from<float>(v);
  const auto x2 = kax::from<float, 2>(v, {1000, 1000});
  auto bits = [](const auto& a, const auto& b) {
    const auto va = kax::to_vector(a), vb = kax::to_vector(b);
    return va.size() == vb.size() && std::memcmp(va.data(), vb.data(), va.size() * sizeof(float)) == 0;
  };
  const auto flat_s = kax::eval(Kokkos::Serial{}, kax::sum(x));
  const auto flat_o = kax::eval(Kokkos::OpenMP{}, kax::sum(x));
  CHECK(std::bit_cast<std::uint32_t>(flat_s()) == std::bit_cast<std::uint32_t>(flat_o()));
  CHECK(bits(kax::eval(Kokkos::Serial{}, kax::sum(x2, 1)), kax::eval(Kokkos::OpenMP{}, kax::sum(x2, 1))));
  CHECK(bits(kax::eval(Kokkos::Serial{}, kax::sum(x2, 0)), kax::eval(Kokkos::OpenMP{}, kax::sum(x2, 0))));
  CHECK(bits(kax::eval(Kokkos::Serial{}, kax::mean(kax::transpose(x2))),
             kax::eval(Kokkos::OpenMP{}, kax::mean(kax::transpose(x2)))));
  // A staged softmax-like expression: the stages run on the given space too.
  const auto y = x2 - kax::max(x2, 1, kax::keepdims);
  const auto sm = kax::exp(y) / kax::sum(kax::exp(y), 1, kax::keepdims);
  CHECK(bits(kax::eval(Kokkos::Serial{}, sm), kax::eval(Kokkos::OpenMP{}, sm)));
}
#endif

// ---------------------------------------------------------------------------------------------
// 7. Errors.

TEST_CASE("bad axes throw kax::axis_error naming the function and the axis", "[expr][reduce][errors]") {
  const auto x = kax::zeros<float>(2, 3);
  CHECK_THROWS_AS(kax::sum(x, 2), kax::axis_error);
  CHECK_THROWS_AS(kax::sum(x, 2), kax::shape_error);  // axis_error is a shape_error
  CHECK_THROWS_WITH(kax::sum(x, 2), Catch::Contains("kax::sum") && Catch::Contains("axis 2"));
  CHECK_THROWS_WITH(kax::mean(x, -3), Catch::Contains("kax::mean") && Catch::Contains("axis -3"));
  CHECK_THROWS_WITH(kax::max(x, 0, 5, kax::keepdims), Catch::Contains("kax::max") && Catch::Contains("axis 5"));
  CHECK_THROWS_WITH(kax::argmax(x, 2), Catch::Contains("kax::argmax") && Catch::Contains("axis 2"));
  CHECK_THROWS_AS(kax::sum(x, 0, 0), kax::axis_error);
  CHECK_THROWS_WITH(kax::sum(x, 0, 0), Catch::Contains("kax::sum") && Catch::Contains("duplicate"));
  CHECK_THROWS_AS(kax::all(x, 1, -1), kax::axis_error);
  CHECK_THROWS_WITH(kax::all(x, 1, -1), Catch::Contains("kax::all") && Catch::Contains("duplicate"));
  CHECK_NOTHROW(kax::sum(x, -2, 1));
}

// ---------------------------------------------------------------------------------------------
// 8. Staging: a reduction feeding elementwise work is computed once.

TEST_CASE("x - max(x, 1, keepdims) is one reduction kernel then one elementwise kernel",
          "[expr][reduce][staging]") {
  const std::size_t R = 16, C = 33;
  const std::vector<float> v = random_floats(R * C, -3.0f, 3.0f, 7);
  const auto x = kax::from<float, 2>(v, {R, C});
  const auto e = x - kax::max(x, 1, kax::keepdims);
  CHECK_THAT(kax::plan_of(e), Catch::Contains("2 kernels, 1 temporary") &&
                                  Catch::Contains("kax::reduce<max,inner"));
  launch_counter count;
  const kax::Array<float, 2> y = e;
  INFO(count.all());
  REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 2);
  // The label names the operand's rank and the reduced rank (keepdims or not).
  CHECK(count.count_prefix("kax::reduce<max,inner,float32,rank2->1>") == 1);
  CHECK(count.count_prefix("kax::eval<") == 1);
  for (std::size_t i = 0; i < R; ++i) {
    const float m = *std::max_element(v.begin() + static_cast<std::ptrdiff_t>(i * C),
                                      v.begin() + static_cast<std::ptrdiff_t>((i + 1) * C));
    for (std::size_t j = 0; j < C; ++j) REQUIRE(y(i, j) == v[i * C + j] - m);
  }
}

TEST_CASE("softmax's shared max is computed once: 3 kernels, 2 temporaries", "[expr][reduce][staging]") {
  const std::size_t R = 16, C = 33;
  const std::vector<float> v = random_floats(R * C, -3.0f, 3.0f, 8);
  const auto x = kax::from<float, 2>(v, {R, C});
  const auto y = x - kax::max(x, 1, kax::keepdims);
  const auto sm = kax::exp(y) / kax::sum(kax::exp(y), 1, kax::keepdims);
  const std::string plan = kax::plan_of(sm);
  INFO(plan);
  CHECK_THAT(plan, Catch::Contains("3 kernels, 2 temporaries"));
  CHECK_THAT(plan, Catch::Contains("kax::reduce<max,inner"));
  CHECK_THAT(plan, Catch::Contains("kax::reduce<sum,inner"));
  launch_counter count;
  const kax::Array<float, 2> r = sm;
  INFO(count.all());
  REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 3);
  CHECK(count.count_prefix("kax::reduce<max") == 1);
  CHECK(count.count_prefix("kax::reduce<sum") == 1);
  CHECK(count.count_prefix("kax::eval<") == 1);
  for (std::size_t i = 0; i < R; ++i) {
    double m = -1e30, z = 0.0;
    for (std::size_t j = 0; j < C; ++j) m = std::max(m, static_cast<double>(v[i * C + j]));
    for (std::size_t j = 0; j < C; ++j) z += std::exp(v[i * C + j] - m);
    for (std::size_t j = 0; j < C; ++j)
      REQUIRE(r(i, j) == Approx(std::exp(v[i * C + j] - m) / z).epsilon(1e-5));
  }
}

TEST_CASE("a reduction at the root writes straight into the result", "[expr][reduce][staging]") {
  const std::vector<float> v = random_floats(16 * 33, -3.0f, 3.0f, 9);
  const auto x = kax::from<float, 2>(v, {16, 33});
  const std::string plan = kax::plan_of(kax::sum(x, 1));
  CHECK_THAT(plan, Catch::Contains("1 kernel, 0 temporaries") && Catch::Contains("-> output float32(16,)"));
  auto into = kax::zeros<float>(16);
  const auto e = kax::sum(x, 1);
  {
    launch_counter count;
    const auto s = kax::eval(e);
    INFO(count.all());
    REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 1);
    CHECK(count.count_prefix("kax::reduce<sum,inner,float32,rank2->1>") == 1);
    into = e;  // an existing Array of the right shape: still one kernel
    REQUIRE(static_cast<std::size_t>(launch_counter::kernels) == 2);
    for (std::size_t i = 0; i < 16; ++i) {
      double ref = 0.0;
      for (std::size_t j = 0; j < 33; ++j) ref += v[i * 33 + j];
      CHECK(s(i) == Approx(ref).epsilon(1e-5).margin(1e-5));
      CHECK(into(i) == s(i));
    }
  }
  // The destination is the reduction's own operand: computed into its stage buffer first.
  auto b = kax::from<double, 2>({1, 2, 3, 4, 5}, {1, 5});
  b = kax::sum(b, 0, kax::keepdims) * 2.0 + kax::max(b, 0, kax::keepdims);
  for (std::size_t j = 0; j < 5; ++j) CHECK(b(0, j) == 3.0 * static_cast<double>(j + 1));
  // In place: x2 = x2 - max(x2, 1, keepdims) reads the max from the stage, not the overwritten x2.
  auto x2 = kax::copy(x);
  x2 = x2 - kax::max(x2, 1, kax::keepdims);
  for (std::size_t i = 0; i < 16; ++i) {
    const float m = *std::max_element(v.begin() + static_cast<std::ptrdiff_t>(i * 33),
                                      v.begin() + static_cast<std::ptrdiff_t>((i + 1) * 33));
    for (std::size_t j = 0; j < 33; ++j) REQUIRE(x2(i, j) == v[i * 33 + j] - m);
  }
}

// ---------------------------------------------------------------------------------------------
// 9. Re-evaluation.

TEST_CASE("evaluating a stored reduction again sees the operand's new values", "[expr][reduce][lazy]") {
  auto a = kax::from<double, 2>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto e = kax::sum(a, 0);                    // at the root: written into the result
  const auto f = kax::sum(a, 0) * 2.0 + kax::max(a, 0);  // staged
  const auto r1 = kax::eval(e);
  const auto g1 = kax::eval(f);
  CHECK(kax::to_vector(r1) == std::vector<double>{5, 7, 9});
  CHECK(kax::to_vector(g1) == std::vector<double>{14, 19, 24});
  a(0, 0) = 10.0;
  a(1, 2) = -1.0;
  const auto r2 = kax::eval(e);
  const auto g2 = kax::eval(f);
  CHECK(kax::to_vector(r2) == std::vector<double>{14, 7, 2});
  CHECK(kax::to_vector(g2) == std::vector<double>{38, 19, 7});
  CHECK(kax::to_vector(r1) == std::vector<double>{5, 7, 9});  // earlier results are untouched
  // New values written in place (an expression assigned to `a`), then evaluated into an
  // existing Array of the result's shape.
  a = a * 0.0 + 0.5;
  auto r3 = kax::copy(r2);
  r3 = e;
  CHECK(kax::to_vector(r3) == std::vector<double>{1, 1, 1});
}
