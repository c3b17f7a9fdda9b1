// kax::vmap against a loop over the examples, on random data: for every batch index b, f is
// evaluated on plain kax::Arrays holding example b of each mapped argument (unmapped arguments
// unchanged), and the result must equal example b of vmap(f)'s result, taken at out_axes.  The
// reference never calls vmap.  Shapes, in_axes (negative included) and out_axes are drawn from a
// fixed-seed std::mt19937, so a failure reproduces (with one compiler: the draws in one call's
// arguments happen in its order of evaluation); the INFO of a failing check names them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "kax/kax.hpp"

namespace {

// An argument of the vmapped call (an array or an expression): mapped along `axis` (negative counts
// from the end) or not.
template <class A>
struct mapped_arg {
  A value;
  long axis;
};
template <class A>
mapped_arg(A, long) -> mapped_arg<A>;  // clang 14 has no CTAD for aggregates
template <class A>
struct fixed_arg {
  A value;
};
template <class A>
fixed_arg<A> fixed(A a) {
  return {std::move(a)};
}

template <class A>
long in_axis_of(const mapped_arg<A>& m) {
  return m.axis;
}
template <class A>
kax::none_t in_axis_of(const fixed_arg<A>&) {
  return kax::none;
}

std::size_t normalized(long axis, std::size_t rank) {
  return static_cast<std::size_t>(axis < 0 ? axis + static_cast<long>(rank) : axis);
}

// x[:, ..., b, ..., :] with b at `axis`, as an array of one rank less, gathered on the host so
// that the reference shares no layout code (slice, squeeze, transpose) with what vmap rewrites.
template <class T, std::size_t R>
kax::Array<T, R - 1> take(const kax::Array<T, R>& x, long axis, std::size_t b) {
  const std::size_t ax = normalized(axis, R);
  const kax::shape<R> in = x.extents();
  kax::shape<R - 1> out{};
  for (std::size_t k = 0, j = 0; k < R; ++k)
    if (k != ax) out[j++] = in[k];
  // Row-major: the elements before `ax` are `outer` blocks of in[ax] * inner.
  std::size_t inner = 1, outer = 1;
  for (std::size_t k = ax + 1; k < R; ++k) inner *= in[k];
  for (std::size_t k = 0; k < ax; ++k) outer *= in[k];
  const std::vector<T> all = kax::to_vector(x);
  std::vector<T> v;
  v.reserve(outer * inner);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) v.push_back(all[(o * in[ax] + b) * inner + i]);
  return kax::from(v, out);
}

// What the loop passes to f for example b.
template <class A>
auto example(const mapped_arg<A>& m, std::size_t b) {
  return take(kax::eval(m.value), m.axis, b);  // an expression argument is evaluated first
}
template <class A>
const A& example(const fixed_arg<A>& f, std::size_t) {
  return f.value;
}

// An example of zeros, for the result's shape when the batch is empty.
template <class A>
auto blank_example(const mapped_arg<A>& m) {
  constexpr std::size_t R = A::rank;
  const std::size_t ax = normalized(m.axis, R);
  kax::shape<R - 1> s{};
  for (std::size_t k = 0, j = 0; k < R; ++k)
    if (k != ax) s[j++] = m.value.extents()[k];
  return kax::zeros<typename A::value_type>(s);
}
template <class A>
const A& blank_example(const fixed_arg<A>& f) {
  return f.value;
}

template <class A>
std::optional<std::size_t> batch_of(const mapped_arg<A>& m) {
  return m.value.extents()[normalized(m.axis, A::rank)];
}
template <class A>
std::optional<std::size_t> batch_of(const fixed_arg<A>&) {
  return std::nullopt;
}
template <class... A>
std::size_t batch_size(const A&... args) {
  std::optional<std::size_t> b;
  ((b = b ? b : batch_of(args)), ...);
  REQUIRE(b.has_value());
  return *b;
}

template <std::size_t R>
std::string shape_text(const kax::shape<R>& s) {
  std::ostringstream o;
  o << "(";
  for (std::size_t k = 0; k < R; ++k) o << (k ? ", " : "") << s[k];
  o << (R == 1 ? ",)" : ")");
  return o.str();
}
template <class A>
std::string describe(const mapped_arg<A>& m) {
  return shape_text(m.value.extents()) + " mapped on axis " + std::to_string(m.axis);
}
template <class A>
std::string describe(const fixed_arg<A>& f) {
  if constexpr (std::is_arithmetic_v<A>) return "scalar, in_axes none";
  else return shape_text(f.value.extents()) + " in_axes none";
}

// Floating results: |got - want| <= tol * max(1, |want|), tol 1e-5 (float) / 1e-12 (double);
// the floor of 1 covers sums that cancel (the batched reduction may add in another order).
// Integers and bools: equal.  NaN matches NaN.
template <class T, std::size_t R>
void require_close(const kax::Array<T, R>& got, const kax::Array<T, R>& want) {
  REQUIRE(shape_text(got.extents()) == shape_text(want.extents()));
  const std::vector<T> g = kax::to_vector(got);
  const std::vector<T> w = kax::to_vector(want);
  std::size_t bad = g.size();
  for (std::size_t i = 0; i < g.size() && bad == g.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
      const double a = g[i], e = w[i];
      const bool both_nan = std::isnan(a) && std::isnan(e);
      if (!both_nan && !(std::abs(a - e) <= tol * std::max(1.0, std::abs(e)))) bad = i;
    } else {
      if (g[i] != w[i]) bad = i;
    }
  }
  if (bad < g.size()) {
    INFO("first mismatch at flat index " << bad << ": vmap gives " << +g[bad] << ", the loop " << +w[bad]);
    CHECK(false);
  } else {
    CHECK(true);
  }
}

// Checks example b of `got` (batch axis `out`) against f on example b of the arguments, for every b.
template <class T, std::size_t R, class F, class... A>
void require_matches_loop(const kax::Array<T, R>& got, long out, const F& f, const A&... args) {
  const std::size_t batch = batch_size(args...);
  REQUIRE(got.extents()[normalized(out, R)] == batch);
  if (batch == 0) {
    // No example to compare: the shape must still be f's result shape with a batch of 0 at `out`.
    const kax::Array<T, R - 1> one = kax::eval(f(blank_example(args)...));
    kax::shape<R> want{};
    for (std::size_t k = 0, j = 0; k < R; ++k) want[k] = k == normalized(out, R) ? 0 : one.extents()[j++];
    REQUIRE(shape_text(got.extents()) == shape_text(want));
  }
  for (std::size_t b = 0; b < batch; ++b) {
    INFO("example " << b);
    const kax::Array<T, R - 1> want = kax::eval(f(example(args, b)...));
    require_close(take(got, out, b), want);
  }
}

// Draws shapes, axes and values; one per TEST_CASE, with its own seed.
struct random_cases {
  std::mt19937 gen;
  std::map<std::string, std::size_t> outs;  // out_axes drawn per call site: 0, 1, -1, random, 0, ...

  explicit random_cases(unsigned seed) : gen(seed) {}

  std::size_t uniform(std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(gen);
  }
  std::size_t extent() { return uniform(1, 6); }
  // 1 to 7 examples, or none (an empty batch) when asked.
  std::size_t batch(bool empty = false) {
    const std::size_t b = uniform(1, 7);
    return empty ? 0 : b;
  }
  // An axis of a rank-r array, from -r to r - 1.
  long axis(std::size_t rank) {
    const long r = static_cast<long>(rank);
    return std::uniform_int_distribution<long>(-r, r - 1)(gen);
  }
  // out_axes for a result of rank `rank`, cycling per `site` so that every call site gets each.
  long out_axis(std::size_t rank, const std::string& site) {
    const long r = static_cast<long>(rank);
    const long pick[] = {0, 1, -1};
    const std::size_t k = outs[site]++ % 4;
    if (k < 3 && (pick[k] < r && pick[k] >= -r)) return pick[k];
    return axis(rank);
  }

  template <class T, std::size_t R>
  kax::Array<T, R> array(const kax::shape<R>& s, double lo = -2, double hi = 2) {
    std::size_t n = 1;
    for (std::size_t e : s) n *= e;
    std::vector<T> v(n);
    for (auto& x : v) {
      if constexpr (std::is_same_v<T, bool>) x = std::bernoulli_distribution(0.5)(gen);
      else if constexpr (std::is_integral_v<T>)
        x = static_cast<T>(
            std::uniform_int_distribution<long>(static_cast<long>(lo), static_cast<long>(hi))(gen));
      else x = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(gen));
    }
    return kax::from(v, s);
  }

  // An argument whose examples have shape `per`, the batch at a random axis.
  template <class T, std::size_t R>
  mapped_arg<kax::Array<T, R + 1>> mapped(std::size_t batch, const kax::shape<R>& per, double lo = -2,
                                          double hi = 2) {
    const long ax = axis(R + 1);
    return {array<T>(insert_axis(per, normalized(ax, R + 1), batch), lo, hi), ax};
  }

  template <std::size_t R>
  static kax::shape<R + 1> insert_axis(const kax::shape<R>& s, std::size_t at, std::size_t n) {
    kax::shape<R + 1> out{};
    for (std::size_t k = 0, j = 0; k <= R; ++k) out[k] = k == at ? n : s[j++];
    return out;
  }
};

// vmap(f, in_axes(...))(args...) checked against the loop, with vmap's default out_axes (no option):
// the batched expression is evaluated as it is (with the row-fused plan, exec/batch_rows.hpp, where
// it applies).  An explicit out_axes wraps it in a transpose, whose generic evaluation would hide a
// wrong row evaluator (expr/detail/row.hpp) inside it; check_vmap_out covers out_axes.
template <bool ExplicitOut, class F, class... A>
void check_vmap_at(random_cases& rc, const char* name, const F& f, const A&... args) {
  constexpr std::size_t R = kax::rank_of<decltype(f(example(args, 0)...))> + 1;
  std::string what;
  ((what += describe(args) + "; "), ...);
  const auto in = kax::in_axes(in_axis_of(args)...);
  if constexpr (ExplicitOut) {
    const long out = rc.out_axis(R, typeid(void (*)(F, A...)).name());
    INFO(name << ": " << what << "out_axes " << out);
    require_matches_loop(kax::eval(kax::vmap(f, in, kax::out_axes(out))(args.value...)), out, f, args...);
  } else {
    INFO(name << ": " << what << "default out_axes");
    require_matches_loop(kax::eval(kax::vmap(f, in)(args.value...)), 0, f, args...);
  }
}
template <class F, class... A>
void check_vmap(random_cases& rc, const char* name, const F& f, const A&... args) {
  check_vmap_at<false>(rc, name, f, args...);
}
// As check_vmap, with kax::out_axes(o), o cycling through 0, 1, -1 and a random axis of the result.
template <class F, class... A>
void check_vmap_out(random_cases& rc, const char* name, const F& f, const A&... args) {
  check_vmap_at<true>(rc, name, f, args...);
}

// Random cases per family; the last has an empty batch (vmap must give empty results).
constexpr int trials = 7;

}  // namespace

TEST_CASE("vmap of elementwise functions broadcasting mapped against unmapped arguments matches a loop",
          "[vmap][random]") {
  random_cases rc(1001);
  // x (n,) against y (m, n): NumPy aligns the per-example ranks from the right.
  auto mixed = [](const auto& x, const auto& y) {
    return kax::where(x > y, kax::exp(x) * y, kax::tanh(y) - x) + 0.5f;
  };
  // x (m, n) and s () positive.
  auto powers = [](const auto& x, const auto& s) {
    return kax::maximum(kax::pow(x, s), kax::log(x) * s) - kax::minimum(x, 1.0);
  };
  // Comparisons and casts, float against int32.
  auto casts = [](const auto& x, const auto& k) {
    return kax::astype<float>(x >= 0.25f) * 3.0f + kax::astype<float>(k * 2 - 1) / 4.0f +
           kax::astype<float>(kax::astype<std::int32_t>(x * 4.0f)) + kax::astype<float>(k != 0);
  };
  auto scaled = [](const auto& x, float s) { return x * s - kax::sqrt(kax::abs(x)); };

  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.batch(trial == trials - 1), m = rc.extent(), n = rc.extent();
    const auto x = rc.mapped<float>(batch, kax::shape<1>{n});
    const auto y = rc.mapped<float>(batch, kax::shape<2>{m, n});
    check_vmap_out(rc, "mixed", mixed, x, y);
    check_vmap(rc, "mixed", mixed, x, fixed(rc.array<float>(kax::shape<2>{m, n})));
    check_vmap(rc, "mixed", mixed, x, mapped_arg{y.value * 0.5f, y.axis});  // an expression argument
    check_vmap_out(rc, "mixed", mixed, fixed(rc.array<float>(kax::shape<1>{n})), y);
    check_vmap(rc, "scaled", scaled, y, fixed(2.5f));

    // A per-example scalar: a mapped rank-1 argument.
    const auto xp = rc.mapped<double>(batch, kax::shape<2>{m, n}, 0.1, 3.0);
    check_vmap(rc, "powers", powers, xp, rc.mapped<double>(batch, kax::shape<0>{}, 0.5, 2.0));
    check_vmap_out(rc, "powers", powers, xp, fixed(rc.array<double>(kax::shape<0>{}, 0.5, 2.0)));

    check_vmap(rc, "casts", casts, y, rc.mapped<std::int32_t>(batch, kax::shape<1>{n}, -3, 3));
    check_vmap_out(rc, "casts", casts, y, fixed(rc.array<std::int32_t>(kax::shape<2>{m, n}, -3, 3)));
  }
}

TEST_CASE("vmap of reductions matches a loop over the examples", "[vmap][random]") {
  random_cases rc(2002);
  auto sum_all = [](const auto& x) { return kax::sum(x); };
  auto mean_1 = [](const auto& x) { return kax::mean(x, 1); };
  // Reductions of different axes in one function: (a, b) + (b,).
  auto max_min = [](const auto& x) { return kax::max(x, -1) + kax::min(x, 0, -1); };
  // keepdims, the axis given as -2 and as 1: (a, 1, c) * (a, 1, c).
  auto keep = [](const auto& x) {
    return kax::prod(x, -2, kax::keepdims) * kax::astype<float>(kax::argmin(x, 1, kax::keepdims));
  };
  auto argmaxes = [](const auto& x) { return kax::argmax(x, -1) * 1000 + kax::argmax(x); };
  auto any_all = [](const auto& x) { return kax::logical_and(kax::any(x > 1.0f, 0), kax::all(x > -1.8f)); };
  // One reduction used twice (its stage buffer is shared), and a reduction of a reduction.
  auto centered = [](const auto& x) {
    const auto m = kax::max(x, -1, kax::keepdims);
    return (x - m) / kax::sum(kax::exp(x - m), -1, kax::keepdims) +
           kax::mean(x - kax::mean(x, 0, kax::keepdims));
  };
  // A mapped reduction next to an unmapped one (computed once for the whole batch).
  auto weighted = [](const auto& x, const auto& w) { return kax::sum(x * w, -1) + kax::sum(w); };
  auto ints = [](const auto& k) { return kax::sum(k, 0) * 2 + kax::max(k, 0) - kax::argmin(k, 0); };

  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.batch(trial == trials - 1);
    const kax::shape<3> per{rc.extent(), rc.extent(), rc.extent()};
    const auto x = rc.mapped<float>(batch, per);
    check_vmap(rc, "sum_all", sum_all, x);
    check_vmap_out(rc, "mean_1", mean_1, x);
    check_vmap(rc, "max_min", max_min, x);
    check_vmap_out(rc, "keep", keep, x);
    check_vmap(rc, "argmaxes", argmaxes, x);
    check_vmap(rc, "any_all", any_all, x);
    check_vmap_out(rc, "centered", centered, x);
    // Double sums must agree to 1e-12.
    check_vmap(rc, "weighted", weighted, rc.mapped<double>(batch, per),
               fixed(rc.array<double>(kax::shape<1>{per[2]})));
    check_vmap_out(rc, "ints", ints, rc.mapped<std::int32_t>(batch, kax::shape<2>{per[0], per[1]}, -9, 9));
  }
}

// The planner fuses one batched reduction with its consumer, block of batch rows by block, when
// each example has at least 256 output elements (exec/batch_rows.hpp); the other cases here have
// 1 to 6 per axis and run staged.
TEST_CASE("vmap of one reduction over rows of 256 or more (the row-fused plan) matches a loop", "[vmap][random]") {
  random_cases rc(2010);
  auto normalized_rows = [](const auto& x) { return x / kax::sum(kax::abs(x), -1, kax::keepdims); };
  auto centered_rows = [](const auto& x) { return x - kax::mean(x, -1, kax::keepdims); };
  auto peaks = [](const auto& x, const auto& w) { return x * w - kax::max(x * w, -1, kax::keepdims) + kax::sum(w); };
  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.uniform(2, 40), m = rc.extent(), n = rc.uniform(256, 300);
    const auto x = rc.mapped<float>(batch, kax::shape<2>{m, n});
    INFO(describe(x));
    const std::string plan = kax::plan_of(kax::vmap(centered_rows, kax::in_axes(x.axis))(x.value));
    REQUIRE(plan.find("kax::eval<batch rows") != std::string::npos);
    check_vmap(rc, "normalized_rows", normalized_rows, x);
    check_vmap(rc, "centered_rows", centered_rows, x);
    check_vmap_out(rc, "centered_rows", centered_rows, x);
    check_vmap(rc, "peaks", peaks, x, fixed(rc.array<float>(kax::shape<1>{n})));
    // w mapped: sum(w) is a second batched stage, so this one runs staged.
    check_vmap(rc, "peaks", peaks, x, rc.mapped<float>(batch, kax::shape<1>{n}));
  }
}

// A batched matrix-vector product (an unmapped w) over rows of 256 to 16 KiB (2048 doubles) runs
// each batch row's dot just before its output row (exec/batch_rows.hpp) when x's examples are
// contiguous (mapped at axis 0); mapped elsewhere, or over longer rows, the staged plan runs.
TEST_CASE("vmap of a matrix-vector product with its consumer, row by row, matches a loop", "[vmap][random]") {
  random_cases rc(4040);
  auto seed = [](const auto& x, const auto& w) { return kax::dot(x, w) + kax::sin(x); };
  auto scaled = [](const auto& x, const auto& w) { return x * kax::dot(x, w); };
  auto outer = [](const auto& x, const auto& w, const auto& m) { return kax::dot(x, w) * m - x; };
  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.uniform(2, 40), n = trial % 3 == 2 ? rc.uniform(1900, 2200) : rc.uniform(256, 600);
    const auto x = rc.mapped<double>(batch, kax::shape<1>{n});
    const auto w = fixed(rc.array<double>(kax::shape<1>{n}));
    INFO(describe(x));
    const std::string plan = kax::plan_of(kax::vmap(seed, kax::in_axes(x.axis, kax::none))(x.value, w.value));
    INFO(plan);
    REQUIRE((plan.find("kax::gemv<float64> row ->") != std::string::npos) == ((x.axis == 0 || x.axis == -2) && n <= 2048));
    // A fresh w per check: a stage buffer may reuse the previous check's freed one, whose values
    // must not pass for this check's if a batch row's dot were skipped.
    check_vmap(rc, "seed", seed, x, w);
    check_vmap_out(rc, "scaled", scaled, x, fixed(rc.array<double>(kax::shape<1>{n})));
    check_vmap(rc, "outer", outer, x, fixed(rc.array<double>(kax::shape<1>{n})),
               fixed(rc.array<double>(kax::shape<2>{3, n})));
    const auto xf = rc.mapped<float>(batch, kax::shape<1>{n});
    check_vmap(rc, "seed", seed, xf, fixed(rc.array<float>(kax::shape<1>{n})));
  }
}

TEST_CASE("vmap of dot, matmul and einsum matches a loop over the examples", "[vmap][random]") {
  random_cases rc(3003);
  auto dot = [](const auto& a, const auto& b) { return kax::dot(a, b); };
  auto matmul = [](const auto& a, const auto& b) { return kax::matmul(a, b); };
  auto ij_jk = [](const auto& a, const auto& b) { return kax::einsum<"ij,jk->ik">(a, b); };
  auto diagonal = [](const auto& a) { return kax::einsum<"ii->i">(a); };
  auto total = [](const auto& a) { return kax::einsum<"ij->">(a); };
  auto outer = [](const auto& x, const auto& y) { return kax::einsum<"i,j->ij">(x, y); };

  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.batch(trial == trials - 1);
    const std::size_t m = rc.extent(), k = rc.extent(), n = rc.extent();
    const auto u = rc.mapped<float>(batch, kax::shape<1>{k});
    const auto a = rc.mapped<float>(batch, kax::shape<2>{m, k});
    const auto b = rc.mapped<float>(batch, kax::shape<2>{k, n});
    const auto w = fixed(rc.array<float>(kax::shape<1>{k}));
    const auto wm = fixed(rc.array<float>(kax::shape<2>{k, n}));
    // vector . vector, matrix . vector (either mapped); a mapped vector against an unmapped vector
    // or matrix is the seed body, in the composite case.
    check_vmap(rc, "dot", dot, u, rc.mapped<float>(batch, kax::shape<1>{k}));
    check_vmap_out(rc, "dot", dot, a, w);
    check_vmap(rc, "dot", dot, fixed(rc.array<float>(kax::shape<2>{m, k})), u);
    check_vmap_out(rc, "matmul", matmul, a, b);
    check_vmap(rc, "matmul", matmul, a, wm);
    check_vmap_out(rc, "matmul", matmul, fixed(rc.array<float>(kax::shape<2>{m, k})), b);
    check_vmap(rc, "ij_jk", ij_jk, rc.mapped<float>(batch, kax::shape<2>{m, k}), b);
    check_vmap_out(rc, "diagonal", diagonal, rc.mapped<float>(batch, kax::shape<2>{k, k}));
    check_vmap(rc, "total", total, a);
    check_vmap_out(rc, "outer", outer, u, rc.mapped<float>(batch, kax::shape<1>{n}));
    check_vmap(rc, "outer", outer, u, fixed(rc.array<float>(kax::shape<1>{n})));
  }
}

TEST_CASE("vmap of layout operations on the examples matches a loop", "[vmap][random]") {
  random_cases rc(4004);
  auto reverse_axes = [](const auto& x) { return kax::transpose(x); };
  auto permute = [](const auto& x) { return kax::transpose(x, {1, -1, 0}); };
  auto flatten = [](const auto& x) { return kax::reshape(x, {-1}); };
  auto regroup = [](const auto& x) {
    const auto e = x.extents();
    return kax::reshape(x, {static_cast<long>(e[0] * e[1]), -1L}) * 2.0f;
  };
  auto expand_last = [](const auto& x) { return kax::expand_dims(x, -1); };
  auto expand_front = [](const auto& x) { return kax::expand_dims(x, 0) + 1.0f; };
  auto squeeze_1 = [](const auto& x) { return kax::squeeze(x, 1); };      // x (a, 1, c)
  auto squeeze_last = [](const auto& x) { return kax::squeeze(x, -1); };  // x (a, b, 1)
  auto broadcast = [](const auto& x) {                                    // x (a, 1, c)
    const auto e = x.extents();
    return kax::broadcast_to(x, kax::shape<4>{2, e[0], 3, e[2]});
  };
  auto strided = [](const auto& x) {
    return kax::slice(
        x, {kax::range(1, std::nullopt, 2), kax::colon, kax::range(std::nullopt, std::nullopt, -1)});
  };
  auto strided_back = [](const auto& x) {
    return kax::slice(x, {kax::range(-1, 0, -2), kax::range(0, -1), kax::range(1, 4)});
  };
  // Layout of an unmapped argument against a mapped one: w (c, b) transposed onto x (a, b, c).
  auto with_fixed = [](const auto& x, const auto& w) { return x - kax::transpose(w); };

  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.batch(trial == trials - 1);
    const std::size_t a = rc.extent(), b = rc.extent(), c = rc.extent();
    const auto x = rc.mapped<float>(batch, kax::shape<3>{a, b, c});
    const auto unit = rc.mapped<float>(batch, kax::shape<3>{a, 1, c});
    check_vmap(rc, "reverse_axes", reverse_axes, x);
    check_vmap_out(rc, "permute", permute, x);
    check_vmap(rc, "flatten", flatten, x);
    check_vmap_out(rc, "regroup", regroup, x);
    check_vmap(rc, "expand_last", expand_last, x);
    check_vmap_out(rc, "expand_front", expand_front, x);
    check_vmap(rc, "squeeze_1", squeeze_1, unit);
    // Squeezing the last axis of a non-flat operand (mapped on an axis other than 0): the rows of
    // UnitAxesExpr cannot follow the output row there (UnitAxesExpr::rows_exact).
    check_vmap(rc, "squeeze_last", squeeze_last, rc.mapped<float>(batch, kax::shape<3>{a, b, 1}));
    check_vmap_out(rc, "broadcast", broadcast, unit);
    check_vmap(rc, "strided", strided, x);
    check_vmap_out(rc, "strided_back", strided_back, x);
    check_vmap(rc, "with_fixed", with_fixed, x, fixed(rc.array<float>(kax::shape<2>{c, b})));
  }
}

TEST_CASE("vmap of kax::nn functions matches a loop over the examples", "[vmap][random]") {
  random_cases rc(5005);
  auto softmax_last = [](const auto& x) { return kax::nn::softmax(x); };
  // Axis 0 of an example, given as 0 and as -2.
  auto along_0 = [](const auto& x) { return kax::nn::softmax(x, 0) - kax::nn::log_softmax(x, -2); };
  // Every axis (a scalar) and axis 1: () + (m,).
  auto lse = [](const auto& x) { return kax::nn::logsumexp(x) + kax::nn::logsumexp(x, 1); };
  auto lse_keep = [](const auto& x) { return kax::nn::logsumexp(x, 0, -1, kax::keepdims); };
  auto activations = [](const auto& x) {
    return kax::nn::gelu(x) + kax::nn::relu(x) * 2.0f - kax::nn::sigmoid(x) + kax::nn::gelu(x, false) * 0.5f;
  };

  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.batch(trial == trials - 1);
    const kax::shape<2> per{rc.extent(), rc.extent()};
    const auto x = rc.mapped<float>(batch, per, -3, 3);
    check_vmap(rc, "softmax_last", softmax_last, x);
    check_vmap_out(rc, "along_0", along_0, x);
    // logsumexp(x) is log(total) + reshape(shift, ()); vmap lifts that per-example scalar to
    // (B, 1) for the sum with (B, m): a generic row held at the example's index, then broadcast.
    check_vmap(rc, "lse", lse, x);
    check_vmap_out(rc, "lse_keep", lse_keep, x);
    check_vmap(rc, "activations", activations, x);
  }
}

TEST_CASE("vmap of composite functions (the seed body, attention, tuple outputs) matches a loop",
          "[vmap][random]") {
  random_cases rc(6006);
  auto seed = [](const auto& x, const auto& w) { return kax::dot(x, w) + kax::sin(x); };
  auto scores = [](const auto& q, const auto& k) {
    return kax::nn::softmax(kax::matmul(q, kax::transpose(k)));
  };
  auto attention = [](const auto& q, const auto& k, const auto& v) {
    return kax::matmul(kax::nn::softmax(kax::matmul(q, kax::transpose(k)) * 0.5f), v);
  };

  for (int trial = 0; trial < trials; ++trial) {
    const std::size_t batch = rc.batch(trial == trials - 1);
    const std::size_t d = rc.extent(), t = rc.extent(), s = rc.extent();
    const auto x = rc.mapped<float>(batch, kax::shape<1>{d});
    check_vmap(rc, "seed", seed, x, fixed(rc.array<float>(kax::shape<1>{d})));         // dot is a scalar
    check_vmap_out(rc, "seed", seed, x, fixed(rc.array<float>(kax::shape<2>{d, d})));  // dot is (d,)
    const auto q = rc.mapped<float>(batch, kax::shape<2>{t, d});
    check_vmap(rc, "scores", scores, q, fixed(rc.array<float>(kax::shape<2>{s, d})));
    check_vmap_out(rc, "attention", attention, q, rc.mapped<float>(batch, kax::shape<2>{s, d}),
                   rc.mapped<float>(batch, kax::shape<2>{s, t}));
  }

  // (batched, unbatched): the unbatched output is f's own value with out_axes none, and that value
  // repeated along the batch with an integer (or the default) out_axes.
  auto pair = [](const auto& x, const auto& w) {
    return std::make_tuple(kax::nn::relu(x) * w, kax::sum(w * w));
  };
  for (int trial = 0; trial < 4; ++trial) {
    const std::size_t batch = rc.batch(), m = rc.extent(), n = rc.extent();
    const auto x = rc.mapped<float>(batch, kax::shape<2>{m, n});
    const auto w = fixed(rc.array<float>(kax::shape<1>{n}));
    const long out = rc.out_axis(3, "pair");
    INFO(describe(x) << "; " << describe(w) << "; out_axes " << out);
    const kax::Array<float, 0> want_total = kax::sum(w.value * w.value);

    auto [mapped_out, kept] =
        kax::vmap(pair, kax::in_axes(x.axis, kax::none), kax::out_axes(out, kax::none))(x.value, w.value);
    const auto got = kax::eval(mapped_out);
    require_matches_loop(
        got, out, [&](const auto& xb, const auto& wb) { return std::get<0>(pair(xb, wb)); }, x, w);
    require_close(kax::eval(kept), want_total);

    // Default out_axes: both outputs batched on axis 0.
    auto [mapped_again, repeated] = kax::vmap(pair, kax::in_axes(x.axis, kax::none))(x.value, w.value);
    require_matches_loop(
        kax::eval(mapped_again), 0,
        [&](const auto& xb, const auto& wb) { return std::get<0>(pair(xb, wb)); }, x, w);
    const auto reps = kax::eval(repeated);
    REQUIRE(reps.extents() == kax::shape<1>{batch});
    for (std::size_t b = 0; b < batch; ++b) require_close(take(reps, 0, b), want_total);
  }
}

TEST_CASE("nested vmap matches a double loop over both batch axes", "[vmap][random]") {
  random_cases rc(7007);
  // Per inner example: x (m, n), y (n,).
  auto g = [](const auto& x, const auto& y) { return kax::dot(x, y) + kax::max(x, -1); };

  // Both arguments mapped at both levels: the inner batch axis is inserted first, then the outer.
  for (int trial = 0; trial < 5; ++trial) {
    const std::size_t b1 = rc.batch(), b2 = rc.batch(), m = rc.extent(), n = rc.extent();
    const long xi = rc.axis(3), yi = rc.axis(2), xo = rc.axis(4), yo = rc.axis(3);
    const auto x = rc.array<float>(random_cases::insert_axis(
        random_cases::insert_axis(kax::shape<2>{m, n}, normalized(xi, 3), b2), normalized(xo, 4), b1));
    const auto y = rc.array<float>(random_cases::insert_axis(
        random_cases::insert_axis(kax::shape<1>{n}, normalized(yi, 2), b2), normalized(yo, 3), b1));
    const long oi = rc.out_axis(2, "inner"), oo = rc.out_axis(3, "outer");
    INFO("x " << shape_text(x.extents()) << " in_axes inner " << xi << " outer " << xo << "; y "
              << shape_text(y.extents()) << " inner " << yi << " outer " << yo << "; out_axes inner " << oi
              << " outer " << oo);
    const auto inner = kax::vmap(g, kax::in_axes(xi, yi), kax::out_axes(oi));
    const auto got = kax::eval(kax::vmap(inner, kax::in_axes(xo, yo), kax::out_axes(oo))(x, y));
    REQUIRE(got.extents()[normalized(oo, 3)] == b1);
    for (std::size_t i = 0; i < b1; ++i) {
      INFO("outer example " << i);
      require_matches_loop(take(got, oo, i), oi, g, mapped_arg<kax::Array<float, 3>>{take(x, xo, i), xi},
                           mapped_arg<kax::Array<float, 2>>{take(y, yo, i), yi});
    }
  }

  // y mapped by the outer level only: each outer example's y goes unmapped into the inner vmap.
  for (int trial = 0; trial < 4; ++trial) {
    const std::size_t b1 = rc.batch(), b2 = rc.batch(), m = rc.extent(), n = rc.extent();
    const long xi = rc.axis(3), xo = rc.axis(4), yo = rc.axis(2);
    const auto x = rc.array<float>(random_cases::insert_axis(
        random_cases::insert_axis(kax::shape<2>{m, n}, normalized(xi, 3), b2), normalized(xo, 4), b1));
    const auto y = rc.array<float>(random_cases::insert_axis(kax::shape<1>{n}, normalized(yo, 2), b1));
    const long oi = rc.out_axis(2, "inner"), oo = rc.out_axis(3, "outer");
    INFO("x " << shape_text(x.extents()) << " in_axes inner " << xi << " outer " << xo << "; y "
              << shape_text(y.extents()) << " inner none, outer " << yo << "; out_axes inner " << oi
              << " outer " << oo);
    const auto inner = kax::vmap(g, kax::in_axes(xi, kax::none), kax::out_axes(oi));
    const auto got = kax::eval(kax::vmap(inner, kax::in_axes(xo, yo), kax::out_axes(oo))(x, y));
    REQUIRE(got.extents()[normalized(oo, 3)] == b1);
    for (std::size_t i = 0; i < b1; ++i) {
      INFO("outer example " << i);
      require_matches_loop(take(got, oo, i), oi, g, mapped_arg<kax::Array<float, 3>>{take(x, xo, i), xi},
                           fixed(take(y, yo, i)));
    }
  }

  // The inner function captures the outer placeholder (a closure over the outer example).
  for (int trial = 0; trial < 4; ++trial) {
    const std::size_t b1 = rc.batch(), b2 = rc.batch(), n = rc.extent();
    const long xo = rc.axis(2), yi = rc.axis(3), yo = rc.axis(4);
    const auto x = rc.array<float>(random_cases::insert_axis(kax::shape<1>{n}, normalized(xo, 2), b1));
    const auto y = rc.array<float>(random_cases::insert_axis(
        random_cases::insert_axis(kax::shape<2>{n, n}, normalized(yi, 3), b2), normalized(yo, 4), b1));
    INFO("x " << shape_text(x.extents()) << " outer " << xo << "; y " << shape_text(y.extents()) << " inner "
              << yi << " outer " << yo);
    auto closure = [](const auto& xe) {
      return [xe](const auto& ye) { return kax::dot(ye, xe) * kax::sum(xe); };
    };
    auto outer_f = [&](const auto& xe, const auto& ys) {
      return kax::vmap(closure(xe), kax::in_axes(yi))(ys);
    };
    const auto got = kax::eval(kax::vmap(outer_f, kax::in_axes(xo, yo))(x, y));
    REQUIRE(got.extents()[0] == b1);
    for (std::size_t i = 0; i < b1; ++i) {
      INFO("outer example " << i);
      const kax::Array<float, 1> xe = take(x, xo, i);
      require_matches_loop(take(got, 0, i), 0, closure(xe),
                           mapped_arg<kax::Array<float, 3>>{take(y, yo, i), yi});
    }
  }
}
