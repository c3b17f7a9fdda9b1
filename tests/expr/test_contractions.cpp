// Contractions (kax::einsum, kax::dot, kax::matmul) against NumPy reference data
// (scripts/gen_contraction_data.py -> tests/data/contract_*.txt) and naive loops written here.
// Covers einsum's grammar (explicit and implicit output, "...", diagonals, traces, outer
// products), NumPy's matmul and dot rules, both ways of computing a contraction (Eigen GEMM and
// the generic fused reduction) and that they agree, operands that are expressions or strided
// views or column-major Eigen storage, mixed dtypes, GEMM accuracy, the planner (a contraction
// feeding elementwise work is computed once), errors, aliasing and re-evaluation.  Two known
// library bugs are marked "KNOWN LIBRARY BUG" below.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "data_file.hpp"
#include "kax/interop/eigen.hpp"
#include "kax/kax.hpp"
#include "support/launch_counter.hpp"

namespace {

using Catch::Contains;

using kax_test::launch_counter;

// An operand from tests/data/contract_<name>.txt, converted to T.
template <class T, std::size_t R>
kax::Array<T, R> in(const std::string& name) {
  return kax_test::load<T, R>("contract_" + name);
}

// Float results are compared with a float64 reference computed from the same (float32-exact)
// operands.  The sums here have at most 48 terms of magnitude <= 4; rounding errors of such sums
// behave like a random walk, ~sqrt(n) * 2^-24 * sum|terms| <= ~1e-5, so 1e-4 absolute (plus 1e-5
// relative for large values) leaves a margin of 10x, while an indexing mistake (an O(1)
// difference) still fails.  The rigorous worst-case bound is used where it matters, in the large
// GEMM test below.  Doubles: 1e-12; integers (and float sums of small integers): exact.
template <class T>
void require_value(T got, double want) {
  if constexpr (std::is_same_v<T, float>)
    REQUIRE(static_cast<double>(got) == Approx(want).epsilon(1e-5).margin(1e-4));
  else if constexpr (std::is_same_v<T, double>)
    REQUIRE(got == Approx(want).epsilon(1e-12).margin(1e-12));
  else
    REQUIRE(static_cast<double>(got) == want);
}

// Checks shape and values of `got` against tests/data/contract_<name>.txt.
template <class T, std::size_t R>
void require_file(const kax::Array<T, R>& got, const std::string& name) {
  const kax_test::data_file d = kax_test::read_data("contract_" + name);
  INFO("reference file contract_" << name);
  REQUIRE(d.shape.size() == R);
  for (std::size_t k = 0; k < R; ++k) REQUIRE(got.extent(k) == d.shape[k]);
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == d.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("flat index " << i);
    require_value(v[i], d.values[i]);
  }
}

// Row-major (m, k) @ (k, n) in double, the reference of the naive-loop checks.
std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b, std::size_t m,
                                 std::size_t k, std::size_t n) {
  std::vector<double> c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (std::size_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
  return c;
}

template <class T, std::size_t R>
std::vector<double> as_doubles(const kax::Array<T, R>& a) {
  std::vector<double> out;
  for (T x : kax::to_vector(a)) out.push_back(static_cast<double>(x));
  return out;
}

template <class T, std::size_t R>
void require_values(const kax::Array<T, R>& got, const std::vector<double>& want) {
  const std::vector<T> v = kax::to_vector(got);
  REQUIRE(v.size() == want.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("flat index " << i);
    require_value(v[i], want[i]);
  }
}

// An (r, c) array of T from a cheap deterministic formula: small integers (exact in every dtype,
// so int32, float and double results can be compared exactly) or, with `smooth`, values in [-1, 1].
template <class T>
kax::Array<T, 2> filled(std::size_t r, std::size_t c, int seed, bool smooth = false) {
  std::vector<T> v(r * c);
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto s = static_cast<std::size_t>(seed);
    v[k] = smooth ? static_cast<T>(std::sin(0.37 * static_cast<double>(k) + seed))
                  : static_cast<T>(static_cast<int>((k * 7 + s * 13 + (k / c) * 3) % 11) - 5);
  }
  return kax::from<T, 2>(v, {r, c});
}

// An elementwise identity that counts its evaluations (the planner test's probe).
struct counting_op : kax::detail::arithmetic {
  [[maybe_unused]] static constexpr const char* name = "kax_test::count";
  static inline std::atomic<long> count{0};
  template <class T>
  static T apply(T a) {
    count.fetch_add(1, std::memory_order_relaxed);
    return a;
  }
};

}  // namespace

// ---- 1. einsum -------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("einsum computes matrix products and batched products with NumPy's results",
                   "[einsum]", float, double) {
  using T = TestType;
  const auto a34 = in<T, 2>("a34");
  const auto b45 = in<T, 2>("b45");
  kax::Array<T, 2> ik = kax::einsum<"ij,jk->ik">(a34, b45);
  require_file(ik, "ij_jk");
  // The output's contiguous axis is M rather than N: GEMM computes C, not C^T.
  kax::Array<T, 2> ki = kax::einsum<"ij,jk->ki">(a34, b45);
  require_file(ki, "ij_jk_ki");
  kax::Array<T, 3> s3 = kax::einsum<"...qd,...kd->...qk">(in<T, 3>("q3"), in<T, 3>("k3"));
  require_file(s3, "qd_kd3");
  kax::Array<T, 4> s4 = kax::einsum<"...qd,...kd->...qk">(in<T, 4>("q4"), in<T, 4>("k4"));
  require_file(s4, "qd_kd4");
  kax::Array<T, 3> bik = kax::einsum<"bij,bjk->bik">(in<T, 3>("bij"), in<T, 3>("bjk"));
  require_file(bik, "bij_bjk");
  kax::Array<T, 1> mv = kax::einsum<"ij,j->i">(a34, in<T, 1>("v4"));
  require_file(mv, "ij_j");
}

TEMPLATE_TEST_CASE("einsum takes the generic kernel for layouts GEMM cannot take, with NumPy's results",
                   "[einsum]", float, double) {
  using T = TestType;
  const auto bij = in<T, 3>("bij");
  const auto bjk = in<T, 3>("bjk");
  // The batch label is the output's last (contiguous) axis: no GEMM layout.
  const auto ikb = kax::einsum<"bij,bjk->ikb">(bij, bjk);
  REQUIRE_THAT(kax::plan_of(ikb), Contains("kax::reduce<sum") && !Contains("kax::gemm<"));
  require_file(kax::Array<T, 3>(ikb), "bij_bjk_ikb");
  // Three summed labels (b, j, k).
  const auto i = kax::einsum<"bij,jk->i">(bij, in<T, 2>("b45"));
  REQUIRE_THAT(kax::plan_of(i), Contains("kax::reduce<sum") && !Contains("kax::gemm<"));
  require_file(kax::Array<T, 1>(i), "bij_jk_i");
}

TEMPLATE_TEST_CASE("einsum of one operand takes diagonals, traces, sums and transposes", "[einsum]", float,
                   double) {
  using T = TestType;
  const auto sq = in<T, 2>("sq44");
  const auto a34 = in<T, 2>("a34");
  require_file(kax::Array<T, 1>(kax::einsum<"ii->i">(sq)), "ii_i");
  const auto trace = kax::einsum<"ii->">(sq);
  static_assert(kax::rank_of<std::remove_cvref_t<decltype(trace)>> == 0);
  require_file(kax::Array<T, 0>(trace), "trace");
  require_file(kax::Array<T, 0>(kax::einsum<"ij->">(a34)), "ij_sum");
  require_file(kax::Array<T, 2>(kax::einsum<"ij->ji">(a34)), "ij_ji");
  // Implicit output: the letters that appear once, sorted, so "ba" is a transpose.
  const auto ba = kax::einsum<"ba">(a34);
  REQUIRE(ba.extents() == kax::shape<2>{4, 3});
  require_file(kax::Array<T, 2>(ba), "ba");
}

TEMPLATE_TEST_CASE("einsum computes outer and inner products, implicit outputs and broadcast '...' axes",
                   "[einsum]", float, double) {
  using T = TestType;
  const auto a34 = in<T, 2>("a34");
  require_file(kax::Array<T, 2>(kax::einsum<"i,j->ij">(in<T, 1>("u3"), in<T, 1>("v4"))), "outer");
  require_file(kax::Array<T, 0>(kax::einsum<"ij,ij->">(a34, in<T, 2>("c34"))), "frobenius");
  // Implicit mode: "ij,jk" is "ij,jk->ik".
  require_file(kax::Array<T, 2>(kax::einsum<"ij,jk">(a34, in<T, 2>("b45"))), "ij_jk");
  // Batch shapes (2, 1) and (3,) broadcast to (2, 3).
  const auto e = kax::einsum<"...ij,...jk->...ik">(in<T, 4>("e2134"), in<T, 3>("e345"));
  REQUIRE(e.extents() == kax::shape<4>{2, 3, 3, 5});
  require_file(kax::Array<T, 4>(e), "ell_bcast");
}

TEST_CASE("einsum without a summed label is a lazy elementwise expression that fuses into its consumer",
          "[einsum]") {
  const auto u = in<double, 1>("u3");
  const auto v = in<double, 1>("v4");
  const auto sq = in<double, 2>("sq44");
  const auto outer = kax::einsum<"i,j->ij">(u, v) * 2.0 + 1.0;
  REQUIRE_THAT(kax::plan_of(outer), Contains("1 kernel, 0 temporaries"));
  REQUIRE_THAT(kax::plan_of(kax::einsum<"ij->ji">(sq) - sq), Contains("1 kernel, 0 temporaries"));
  REQUIRE_THAT(kax::plan_of(kax::einsum<"ii->i">(sq) * 3.0), Contains("1 kernel, 0 temporaries"));
  const kax::Array<double, 2> got = outer;
  std::vector<double> want;
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) want.push_back(u(i) * v(j) * 2.0 + 1.0);
  require_values(got, want);
}

TEST_CASE("einsum on int32 operands takes the generic kernel and is exact", "[einsum]") {
  const auto a = in<std::int32_t, 2>("ia34");
  const auto b = in<std::int32_t, 2>("ib45");
  const auto sq = in<std::int32_t, 2>("isq44");
  const auto ik = kax::einsum<"ij,jk->ik">(a, b);
  static_assert(std::is_same_v<kax::value_type_of<std::remove_cvref_t<decltype(ik)>>, std::int32_t>);
  REQUIRE_THAT(kax::plan_of(ik), Contains("kax::reduce<sum") && !Contains("kax::gemm<"));
  require_file(kax::Array<std::int32_t, 2>(ik), "i_ij_jk");
  require_file(kax::Array<std::int32_t, 1>(kax::einsum<"ii->i">(sq)), "i_ii_i");
  require_file(kax::Array<std::int32_t, 0>(kax::einsum<"ii->">(sq)), "i_trace");
  require_file(kax::Array<std::int32_t, 0>(kax::einsum<"ij->">(a)), "i_ij_sum");
  require_file(kax::Array<std::int32_t, 2>(kax::einsum<"ij->ji">(a)), "i_ij_ji");
  require_file(kax::Array<std::int32_t, 3>(
                   kax::einsum<"bij,bjk->bik">(in<std::int32_t, 3>("ibij"), in<std::int32_t, 3>("ibjk"))),
               "i_bij_bjk");
  require_file(kax::Array<std::int32_t, 0>(kax::einsum<"ij,ij->">(a, in<std::int32_t, 2>("ic34"))),
               "i_frobenius");
  require_file(kax::Array<std::int32_t, 1>(kax::einsum<"ij,j->i">(a, in<std::int32_t, 1>("iv4"))), "i_ij_j");
  require_file(kax::Array<std::int32_t, 4>(kax::einsum<"...ij,...jk->...ik">(in<std::int32_t, 4>("ie2134"),
                                                                              in<std::int32_t, 3>("ie345"))),
               "i_ell_bcast");
}

// ---- 2. GEMM and the generic kernel agree ----------------------------------------------------

TEST_CASE("a float matmul runs on Eigen's GEMM and an int32 one on the generic kernel, with equal results",
          "[matmul][gemm]") {
  // Small integers: every product and sum is exact in int32, float and double alike.
  const auto af = filled<float>(5, 7, 1), bf = filled<float>(7, 6, 2);
  const auto ad = filled<double>(5, 7, 1), bd = filled<double>(7, 6, 2);
  const auto ai = filled<std::int32_t>(5, 7, 1), bi = filled<std::int32_t>(7, 6, 2);
  REQUIRE_THAT(kax::plan_of(kax::matmul(af, bf)), Contains("kax::gemm<float32> (small-matrix loop, 1 batch of 5x7 @ 7x6)"));
  REQUIRE_THAT(kax::plan_of(kax::matmul(ad, bd)), Contains("kax::gemm<float64> (small-matrix loop"));
  REQUIRE_THAT(kax::plan_of(kax::matmul(ai, bi)), Contains("kax::reduce<sum") && !Contains("kax::gemm<"));
  const kax::Array<float, 2> cf = kax::matmul(af, bf);
  const kax::Array<double, 2> cd = kax::matmul(ad, bd);
  const kax::Array<std::int32_t, 2> ci = kax::matmul(ai, bi);
  const auto want = naive_matmul(as_doubles(ai), as_doubles(bi), 5, 7, 6);
  require_values(ci, want);
  const auto vf = kax::to_vector(cf);
  const auto vd = kax::to_vector(cd);
  const auto vi = kax::to_vector(ci);
  for (std::size_t i = 0; i < vi.size(); ++i) {
    REQUIRE(vf[i] == static_cast<float>(vi[i]));
    REQUIRE(vd[i] == static_cast<double>(vi[i]));
  }
}

TEMPLATE_TEST_CASE("matmul of transposed, computed and strided operands matches naive loops on both paths",
                   "[matmul][gemm]", float, double, std::int32_t) {
  using T = TestType;
  const auto a = filled<T>(5, 7, 3);   // (m, k)
  const auto at = filled<T>(7, 5, 4);  // (k, m), used transposed
  const auto b = filled<T>(7, 6, 5);   // (k, n)
  const auto bt = filled<T>(6, 7, 6);  // (n, k), used transposed
  const auto va = as_doubles(a), vat = as_doubles(at), vb = as_doubles(b), vbt = as_doubles(bt);
  auto transposed = [](const std::vector<double>& x, std::size_t r, std::size_t c) {
    std::vector<double> t(r * c);
    for (std::size_t i = 0; i < r; ++i)
      for (std::size_t j = 0; j < c; ++j) t[j * r + i] = x[i * c + j];
    return t;
  };
  SECTION("transposed operands") {
    require_values(kax::Array<T, 2>(kax::matmul(kax::transpose(at), b)),
                   naive_matmul(transposed(vat, 7, 5), vb, 5, 7, 6));
    require_values(kax::Array<T, 2>(kax::matmul(a, kax::transpose(bt))),
                   naive_matmul(va, transposed(vbt, 6, 7), 5, 7, 6));
    require_values(kax::Array<T, 2>(kax::matmul(kax::transpose(at), kax::transpose(bt))),
                   naive_matmul(transposed(vat, 7, 5), transposed(vbt, 6, 7), 5, 7, 6));
    // "ji,kj->ik" reads both operands transposed without a transpose node.
    require_values(kax::Array<T, 2>(kax::einsum<"ji,kj->ik">(at, bt)),
                   naive_matmul(transposed(vat, 7, 5), transposed(vbt, 6, 7), 5, 7, 6));
    if constexpr (std::is_floating_point_v<T>)
      REQUIRE_THAT(kax::plan_of(kax::matmul(kax::transpose(at), b)), Contains("kax::gemm<"));
  }
  SECTION("operands that are expressions") {
    std::vector<double> a21(va.size());
    for (std::size_t i = 0; i < va.size(); ++i) a21[i] = va[i] * 2 + 1;
    const auto e = kax::matmul(a * 2 + 1, b);
    require_values(kax::Array<T, 2>(e), naive_matmul(a21, vb, 5, 7, 6));
    if constexpr (std::is_floating_point_v<T>)
      REQUIRE_THAT(kax::plan_of(e), Contains("(GEMM operand)") && Contains("kax::gemm<"));
    else
      REQUIRE_THAT(kax::plan_of(e), Contains("kax::reduce<sum"));
  }
  SECTION("strided (step 2) slices") {
    const auto big_a = filled<T>(10, 14, 7);
    const auto big_b = filled<T>(14, 6, 8);
    const auto sa = kax::slice(big_a, {kax::range(0, std::nullopt, 2), kax::range(1, std::nullopt, 2)});
    const auto sb = kax::slice(big_b, {kax::range(std::nullopt, std::nullopt, 2), kax::colon});
    REQUIRE(sa.extents() == kax::shape<2>{5, 7});
    REQUIRE(sb.extents() == kax::shape<2>{7, 6});
    std::vector<double> ra, rb;
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 7; ++j) ra.push_back(static_cast<double>(big_a(2 * i, 2 * j + 1)));
    for (std::size_t i = 0; i < 7; ++i)
      for (std::size_t j = 0; j < 6; ++j) rb.push_back(static_cast<double>(big_b(2 * i, j)));
    require_values(kax::Array<T, 2>(kax::matmul(sa, sb)), naive_matmul(ra, rb, 5, 7, 6));
  }
}

TEST_CASE("matmul and einsum of mixed dtypes compute in the promoted dtype", "[matmul][gemm]") {
  const auto af = filled<float>(4, 6, 1, true);
  const auto bd = filled<double>(6, 3, 2, true);
  const auto ai = filled<std::int32_t>(4, 6, 3);
  const auto bf = filled<float>(6, 3, 4);
  std::vector<double> a2 = as_doubles(af), i2 = as_doubles(ai);
  for (double& x : a2) x *= 2;
  for (double& x : i2) x *= 2;
  // float expression x double array -> double; the float values convert exactly to double.
  const auto e = kax::matmul(af * 2, bd);
  static_assert(std::is_same_v<kax::value_type_of<std::remove_cvref_t<decltype(e)>>, double>);
  REQUIRE_THAT(kax::plan_of(e), Contains("kax::gemm<float64>"));
  require_values(kax::Array<double, 2>(e), naive_matmul(a2, as_doubles(bd), 4, 6, 3));
  // int32 expression x float array -> float.
  const auto f = kax::einsum<"ij,jk->ik">(ai * 2, bf);
  static_assert(std::is_same_v<kax::value_type_of<std::remove_cvref_t<decltype(f)>>, float>);
  REQUIRE_THAT(kax::plan_of(f), Contains("kax::gemm<float32>"));
  require_values(kax::Array<float, 2>(f), naive_matmul(i2, as_doubles(bf), 4, 6, 3));
  // Plain arrays whose dtype differs from the promoted one are converted into the GEMM operand.
  const auto g = kax::matmul(af, bd);
  static_assert(std::is_same_v<kax::value_type_of<std::remove_cvref_t<decltype(g)>>, double>);
  require_values(kax::Array<double, 2>(g), naive_matmul(as_doubles(af), as_doubles(bd), 4, 6, 3));
  const auto h = kax::einsum<"ij,jk->ik">(ai, bf);
  static_assert(std::is_same_v<kax::value_type_of<std::remove_cvref_t<decltype(h)>>, float>);
  require_values(kax::Array<float, 2>(h), naive_matmul(as_doubles(ai), as_doubles(bf), 4, 6, 3));
}

// ---- 3. matmul: NumPy's rules ------------------------------------------------------------------

TEMPLATE_TEST_CASE("matmul follows NumPy's rules for vectors and broadcast batch axes", "[matmul]", float,
                   double) {
  using T = TestType;
  const auto a34 = in<T, 2>("a34");
  const auto b45 = in<T, 2>("b45");
  const auto v4 = in<T, 1>("v4");
  require_file(kax::Array<T, 2>(kax::matmul(a34, b45)), "ij_jk");
  // (k,) @ (k, n) -> (n,);  (m, k) @ (k,) -> (m,);  (k,) @ (k,) -> a scalar (rank 0).
  const auto vm = kax::matmul(v4, b45);
  static_assert(kax::rank_of<std::remove_cvref_t<decltype(vm)>> == 1);
  require_file(kax::Array<T, 1>(vm), "mm_vec_mat");
  require_file(kax::Array<T, 1>(kax::matmul(a34, v4)), "mm_mat_vec");
  const auto vv = kax::matmul(v4, v4);
  static_assert(kax::rank_of<std::remove_cvref_t<decltype(vv)>> == 0);
  require_file(kax::Array<T, 0>(vv), "mm_vec_vec");
  // (2, 1, m, k) @ (3, k, n) -> (2, 3, m, n).
  const auto bc = kax::matmul(in<T, 4>("e2134"), in<T, 3>("e345"));
  REQUIRE(bc.extents() == kax::shape<4>{2, 3, 3, 5});
  require_file(kax::Array<T, 4>(bc), "mm_bcast");
}

TEST_CASE("matmul of 1000 small batches runs the batches in parallel and matches naive loops",
          "[matmul][gemm]") {
  constexpr std::size_t nb = 1000, n = 8;
  std::vector<float> va(nb * n * n), vb(nb * n * n), vs(n * n);
  for (std::size_t i = 0; i < va.size(); ++i) {
    va[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i)));
    vb[i] = static_cast<float>(std::cos(0.07 * static_cast<double>(i)));
  }
  for (std::size_t i = 0; i < vs.size(); ++i) vs[i] = static_cast<float>(0.25 * static_cast<double>(i % 7) - 0.5);
  const auto a = kax::from<float, 3>(va, {nb, n, n});
  const auto b = kax::from<float, 3>(vb, {nb, n, n});
  const auto s = kax::from<float, 2>(vs, {n, n});
  // (1000, 8, 8) @ (1000, 8, 8), (1000, 8, 8) @ (8, 8) and (8, 8) @ (1000, 8, 8) (a broadcast batch).
  auto reference = [&](auto lhs_at, auto rhs_at) {
    std::vector<double> c(nb * n * n);
    for (std::size_t p = 0; p < nb; ++p)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          double acc = 0.0;
          for (std::size_t k = 0; k < n; ++k) acc += lhs_at(p, i, k) * rhs_at(p, k, j);
          c[(p * n + i) * n + j] = acc;
        }
    return c;
  };
  auto batch_a = [&](std::size_t p, std::size_t i, std::size_t k) { return double(va[(p * n + i) * n + k]); };
  auto batch_b = [&](std::size_t p, std::size_t i, std::size_t k) { return double(vb[(p * n + i) * n + k]); };
  auto shared = [&](std::size_t, std::size_t i, std::size_t k) { return double(vs[i * n + k]); };

  REQUIRE_THAT(kax::plan_of(kax::matmul(a, b)), Contains("small-matrix loop, 1000 batches of 8x8 @ 8x8"));
  kax::Array<float, 3> c;
  {
    launch_counter launches;
    c = kax::matmul(a, b);
    REQUIRE(launches.launched("kax::gemm<batched>"));
  }
  require_values(c, reference(batch_a, batch_b));
  require_values(kax::Array<float, 3>(kax::matmul(a, s)), reference(batch_a, shared));
  require_values(kax::Array<float, 3>(kax::matmul(s, b)), reference(shared, batch_b));
  // The same product spelled as an einsum with "..." batch axes.
  require_values(kax::Array<float, 3>(kax::einsum<"...ij,...jk->...ik">(a, b)), reference(batch_a, batch_b));
}

TEMPLATE_TEST_CASE("batched matmuls of every small size, square or not, plain or transposed, match naive loops",
                   "[matmul][gemm]", float, double) {
  using T = TestType;
  // 37 batches: several runs of batches per thread with a short last one.  Small integers: exact.
  constexpr std::size_t nb = 37;
  auto batch = [](std::size_t r, std::size_t c, int seed) {
    std::vector<T> v(nb * r * c);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<T>(static_cast<int>((i * 7 + static_cast<std::size_t>(seed) * 13 + i / 5) % 11) - 5);
    return kax::from<T, 3>(v, {nb, r, c});
  };
  // Row-major (nb, m, k) @ (nb, k, n); `ta` / `tb`: the stored operand is (nb, k, m) / (nb, n, k).
  auto reference = [](const kax::Array<T, 3>& a, const kax::Array<T, 3>& b, std::size_t m, std::size_t k,
                      std::size_t n, bool ta, bool tb) {
    const std::vector<T> va = kax::to_vector(a), vb = kax::to_vector(b);
    std::vector<double> c(nb * m * n);
    for (std::size_t p = 0; p < nb; ++p)
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::size_t l = 0; l < k; ++l)
            acc += double(va[p * m * k + (ta ? l * m + i : i * k + l)]) * double(vb[p * k * n + (tb ? j * k + l : l * n + j)]);
          c[(p * m + i) * n + j] = acc;
        }
    return c;
  };
  for (std::size_t m = 1; m <= 16; ++m) {
    INFO("m = " << m);
    const auto a = batch(m, m, 1), b = batch(m, m, 2);
    require_values(kax::Array<T, 3>(kax::matmul(a, b)), reference(a, b, m, m, m, false, false));
    require_values(kax::Array<T, 3>(kax::einsum<"bji,bjk->bik">(a, b)), reference(a, b, m, m, m, true, false));
    require_values(kax::Array<T, 3>(kax::einsum<"bij,bkj->bik">(a, b)), reference(a, b, m, m, m, false, true));
    const std::size_t k = m % 5 + 1, n = 17 - m;  // not square
    const auto c = batch(m, k, 3), d = batch(k, n, 4);
    require_values(kax::Array<T, 3>(kax::matmul(c, d)), reference(c, d, m, k, n, false, false));
  }
  REQUIRE_THAT(kax::plan_of(kax::matmul(batch(8, 8, 1), batch(8, 8, 2))),
               Contains("small-matrix loop, 37 batches of 8x8 @ 8x8"));
}

// ---- 4. dot: NumPy's rules ---------------------------------------------------------------------

TEMPLATE_TEST_CASE("dot follows NumPy's rules for vectors, matrices, higher ranks and scalars", "[dot]", float,
                   double) {
  using T = TestType;
  const auto a34 = in<T, 2>("a34");
  const auto v4 = in<T, 1>("v4");
  const auto vv = kax::dot(v4, v4);
  static_assert(kax::rank_of<std::remove_cvref_t<decltype(vv)>> == 0);
  require_file(kax::Array<T, 0>(vv), "dot_vec_vec");
  require_file(kax::Array<T, 1>(kax::dot(a34, v4)), "dot_mat_vec");
  require_file(kax::Array<T, 2>(kax::dot(a34, in<T, 2>("b45"))), "dot_mat_mat");
  // dot((2, 3, 4), (4, 5)) -> (2, 3, 5): a's last axis with b's second-to-last.
  const auto t32 = kax::dot(in<T, 3>("t234"), in<T, 2>("t45x"));
  REQUIRE(t32.extents() == kax::shape<3>{2, 3, 5});
  require_file(kax::Array<T, 3>(t32), "dot_3_2");
  // dot((2, 3, 4), (5, 4, 6)) -> (2, 3, 5, 6): a[:-1] + b[:-2] + b[-1:].
  const auto t33 = kax::dot(in<T, 3>("t234"), in<T, 3>("t546"));
  REQUIRE(t33.extents() == kax::shape<4>{2, 3, 5, 6});
  require_file(kax::Array<T, 4>(t33), "dot_3_3");
  // A rank-0 operand multiplies: an elementwise expression, no contraction.
  const auto sa = kax::dot(in<T, 0>("s0"), a34);
  REQUIRE_THAT(kax::plan_of(sa), Contains("1 kernel, 0 temporaries"));
  require_file(kax::Array<T, 2>(sa), "dot_s_mat");
}

// ---- 5. GEMM accuracy ----------------------------------------------------------------------------

TEMPLATE_TEST_CASE("a 256x300 @ 300x200 GEMM stays within the rounding-error bound of a float64 loop",
                   "[matmul][gemm]", float, double) {
  using T = TestType;
  constexpr std::size_t m = 256, k = 300, n = 200;
  const auto a = filled<T>(m, k, 11, true);
  const auto b = filled<T>(k, n, 12, true);
  const kax::Array<T, 2> c = kax::matmul(a, b);
  const auto va = as_doubles(a), vb = as_doubles(b), vc = as_doubles(c);
  // Any order of summation (Eigen blocks and uses FMAs) of k products computed in T satisfies
  // |c - exact| <= gamma_k(u) * sum_p |a_ip| |b_pj|, gamma_k(u) = k u / (1 - k u), u the unit
  // roundoff of T (Higham, "Accuracy and Stability of Numerical Algorithms", 3.5).  The operands
  // are exact in double, and the float64 loop's own error obeys the same bound with u = 2^-53, so
  // |c - loop| <= (gamma_k(u) + gamma_k(2^-53)) * sum |a||b| is a sound tolerance (for float the
  // second term is negligible); a wrong index or a lost term would miss it by orders of magnitude.
  auto gamma = [&](double unit) { return static_cast<double>(k) * unit / (1.0 - static_cast<double>(k) * unit); };
  const double tol = gamma(std::is_same_v<T, float> ? 0x1p-24 : 0x1p-53) + gamma(0x1p-53);
  double worst = 0.0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double exact = 0.0, magnitude = 0.0;
      for (std::size_t p = 0; p < k; ++p) {
        exact += va[i * k + p] * vb[p * n + j];
        magnitude += std::abs(va[i * k + p] * vb[p * n + j]);
      }
      const double err = std::abs(vc[i * n + j] - exact);
      const double bound = tol * magnitude;
      if (err > bound) {
        INFO("element (" << i << ", " << j << "): got " << vc[i * n + j] << ", want " << exact);
        REQUIRE(err <= bound);
      }
      worst = std::max(worst, err / bound);
    }
  REQUIRE(worst <= 1.0);
}

// Eigen's GEMM adds into C; kax zeroes a large C first with a kernel of its own on every thread
// ("kax::gemm<zero C>", exec/host_gemm.hpp).  The destinations hold NaN beforehand, so a block
// of C that the zeroing missed would read NaN.  Operands are small integers: every sum is exact.
TEMPLATE_TEST_CASE("a large GEMM zeroes its whole destination first, contiguous or strided, one batch or several",
                   "[matmul][gemm]", float, double) {
  using T = TestType;
  const bool team = Kokkos::DefaultHostExecutionSpace::concurrency() > 1;
  {
    constexpr std::size_t m = 256, k = 300, n = 200;  // C: 200 KB in float
    const auto a = filled<T>(m, k, 3);
    const auto b = filled<T>(k, n, 4);
    auto c = kax::full<T, 2>({m, n}, std::numeric_limits<T>::quiet_NaN());
    launch_counter launches;
    kax::ArrayView<T, 2>(c.data(), {m, n}) = kax::matmul(a, b);
    INFO(launch_counter::all());
    REQUIRE(launches.launched("kax::gemm<zero C>") == team);
    require_values(c, naive_matmul(as_doubles(a), as_doubles(b), m, k, n));
  }
  {
    // "bij,bjk->ibk": each batch's C has a column stride of B * K, not its row count.
    constexpr std::size_t nb = 2, i = 200, j = 64, kk = 192;  // each batch's C: 150 KB in float
    const auto a2 = filled<T>(nb * i, j, 5);
    const auto b2 = filled<T>(nb * j, kk, 6);
    const kax::Array<T, 3> a = kax::reshape(a2, {long(nb), long(i), long(j)});
    const kax::Array<T, 3> b = kax::reshape(b2, {long(nb), long(j), long(kk)});
    auto c = kax::full<T, 3>({i, nb, kk}, std::numeric_limits<T>::quiet_NaN());
    launch_counter launches;
    kax::ArrayView<T, 3>(c.data(), {i, nb, kk}) = kax::einsum<"bij,bjk->ibk">(a, b);
    INFO(launch_counter::all());
    REQUIRE(launches.launched("kax::gemm<zero C>") == team);
    const auto va = as_doubles(a2), vb = as_doubles(b2);
    std::vector<double> want(i * nb * kk);
    for (std::size_t p = 0; p < nb; ++p) {
      const std::vector<double> ap(va.begin() + long(p * i * j), va.begin() + long((p + 1) * i * j));
      const std::vector<double> bp(vb.begin() + long(p * j * kk), vb.begin() + long((p + 1) * j * kk));
      const std::vector<double> cp = naive_matmul(ap, bp, i, j, kk);
      for (std::size_t r = 0; r < i; ++r)
        for (std::size_t q = 0; q < kk; ++q) want[(r * nb + p) * kk + q] = cp[r * kk + q];
    }
    require_values(c, want);
  }
}

// ---- 6. the planner: a contraction feeding elementwise work is computed once -------------------

TEST_CASE("dot(x, w) + sin(x) evaluates x 2*B*D times, not B*D*D, on the GEMM and the generic paths",
          "[planner][dot]") {
  constexpr std::size_t B = 64, D = 48;
  SECTION("float: x is evaluated once for the contraction, once by sin") {
    const auto x = filled<float>(B, D, 3, true);
    const auto w = filled<float>(D, 1, 4, true);
    REQUIRE_THAT(kax::plan_of(kax::dot(x, w) + kax::sin(x)), Contains("2 kernels, 1 temporary"));
    const auto cx = kax::UnaryExpr<counting_op, decltype(x.as_leaf())>(x.as_leaf());
    counting_op::count = 0;
    const kax::Array<float, 2> y = kax::eval(kax::dot(cx, w) + kax::sin(cx));
    REQUIRE(counting_op::count.load() == static_cast<long>(2 * B * D));
    std::vector<double> want;
    for (std::size_t b = 0; b < B; ++b) {
      double acc = 0.0;
      for (std::size_t d = 0; d < D; ++d) acc += static_cast<double>(x(b, d)) * static_cast<double>(w(d, 0));
      for (std::size_t d = 0; d < D; ++d) want.push_back(acc + std::sin(static_cast<double>(x(b, d))));
    }
    require_values(y, want);
  }
  SECTION("float GEMM: x is copied once into the GEMM operand, once read by sin") {
    // w of width 3: a matrix product (a width-1 w is a matrix-vector product, which the library
    // may give to the reduction kernel instead), summed back to width 1 to meet sin(x).
    const auto x = filled<float>(B, D, 3, true);
    const auto w = filled<float>(D, 3, 4, true);
    REQUIRE_THAT(kax::plan_of(kax::dot(x, w)), Contains("kax::gemm<"));
    const auto cx = kax::UnaryExpr<counting_op, decltype(x.as_leaf())>(x.as_leaf());
    counting_op::count = 0;
    const auto e = kax::sum(kax::dot(cx, w), 1, kax::keepdims) + kax::sin(cx);
    REQUIRE_THAT(kax::plan_of(e), Contains("kax::gemm<") && Contains("(GEMM operand)"));
    const kax::Array<float, 2> y = kax::eval(e);
    REQUIRE(counting_op::count.load() == static_cast<long>(2 * B * D));
    std::vector<double> want;
    for (std::size_t b = 0; b < B; ++b) {
      double acc = 0.0;
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t d = 0; d < D; ++d) acc += static_cast<double>(x(b, d)) * static_cast<double>(w(d, j));
      for (std::size_t d = 0; d < D; ++d) want.push_back(acc + std::sin(static_cast<double>(x(b, d))));
    }
    require_values(y, want);
  }
  SECTION("int32: x is read once per element inside the reduction, once by sin") {
    const auto x = filled<std::int32_t>(B, D, 3);
    const auto w = filled<std::int32_t>(D, 1, 4);
    REQUIRE_THAT(kax::plan_of(kax::dot(x, w) + kax::sin(x)), Contains("kax::reduce<sum"));
    const auto cx = kax::UnaryExpr<counting_op, decltype(x.as_leaf())>(x.as_leaf());
    counting_op::count = 0;
    const kax::Array<double, 2> y = kax::eval(kax::dot(cx, w) + kax::sin(cx));
    REQUIRE(counting_op::count.load() == static_cast<long>(2 * B * D));
    std::vector<double> want;
    for (std::size_t b = 0; b < B; ++b) {
      double acc = 0.0;
      for (std::size_t d = 0; d < D; ++d) acc += static_cast<double>(x(b, d) * w(d, 0));
      for (std::size_t d = 0; d < D; ++d) want.push_back(acc + std::sin(static_cast<double>(x(b, d))));
    }
    require_values(y, want);
  }
}

// ---- 7. errors -----------------------------------------------------------------------------------

TEST_CASE("contractions with mismatched extents throw kax::shape_error naming both shapes", "[errors]") {
  const auto a = kax::zeros<float>(2, 3);
  const auto b = kax::zeros<float>(4, 5);
  REQUIRE_THROWS_AS(kax::matmul(a, b), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::matmul(a, b), Contains("(2, 3)") && Contains("(4, 5)"));
  REQUIRE_THROWS_AS(kax::dot(a, b), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::dot(a, b), Contains("not aligned") && Contains("(2, 3)") && Contains("(4, 5)"));
  REQUIRE_THROWS_AS(kax::einsum<"ij,jk->ik">(a, b), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::einsum<"ij,jk->ik">(a, b),
                      Contains("size of label") && Contains("(2, 3)") && Contains("(4, 5)"));
  // A vector operand too: (3,) @ (4, 5).
  REQUIRE_THROWS_AS(kax::matmul(kax::zeros<float>(3), b), kax::shape_error);
  // A diagonal of a non-square matrix.
  REQUIRE_THROWS_AS(kax::einsum<"ii->i">(a), kax::shape_error);
}

TEST_CASE("matmul and einsum batch axes that cannot broadcast throw kax::shape_error", "[errors]") {
  const auto a = kax::zeros<double>(2, 3, 4);
  const auto b = kax::zeros<double>(3, 4, 5);
  REQUIRE_THROWS_AS(kax::matmul(a, b), kax::shape_error);
  REQUIRE_THROWS_WITH(kax::matmul(a, b), Contains("(2, 3, 4)") && Contains("(3, 4, 5)"));
  REQUIRE_THROWS_AS(kax::einsum<"...ij,...jk->...ik">(a, b), kax::shape_error);
  // Batch axes of extent 1 do broadcast.
  REQUIRE_NOTHROW(kax::matmul(kax::zeros<double>(1, 3, 4), b));
}

// ---- 8. aliasing -----------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("a contraction assigned to one of its own operands gives the right answer",
                   "[matmul][aliasing]", float, double, std::int32_t) {
  using T = TestType;
  constexpr std::size_t n = 6;
  const auto b = filled<T>(n, n, 2);
  kax::Array<T, 2> c = filled<T>(n, n, 1);
  const auto c0 = as_doubles(c);
  const auto vb = as_doubles(b);
  SECTION("c = c @ b") {
    c = kax::matmul(c, b);
    require_values(c, naive_matmul(c0, vb, n, n, n));
  }
  SECTION("c = b @ c") {
    c = kax::matmul(b, c);
    require_values(c, naive_matmul(vb, c0, n, n, n));
  }
  SECTION("c = c @ c") {
    c = kax::matmul(c, c);
    require_values(c, naive_matmul(c0, c0, n, n, n));
  }
  SECTION("c = dot(c, b) * 2 + c, the contraction feeding elementwise work") {
    c = kax::dot(c, b) * 2 + c;
    auto want = naive_matmul(c0, vb, n, n, n);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = want[i] * 2 + c0[i];
    require_values(c, want);
  }
  SECTION("c = einsum<\"ij->ji\">(c), a fused transposed read of the destination") {
    c = kax::einsum<"ij->ji">(c);
    std::vector<double> want(n * n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) want[i * n + j] = c0[j * n + i];
    require_values(c, want);
  }
}

// ---- 9. more of einsum's grammar, edge cases, re-evaluation, composition -------------------------

TEST_CASE("einsum accepts spaces and upper-case labels; implicit output sorts upper before lower case",
          "[einsum]") {
  const auto a = in<double, 2>("a34");
  require_file(kax::Array<double, 2>(kax::einsum<" iJ , Jk -> ik ">(a, in<double, 2>("b45"))), "ij_jk");
  // ASCII order puts 'B' before 'a': implicit "aB" is "aB->Ba" (a transpose), "Ba" is the identity.
  require_file(kax::Array<double, 2>(kax::einsum<"aB">(a)), "ba");
  require_file(kax::Array<double, 2>(kax::einsum<"Ba">(a)), "a34");
  // Implicit mode with no letter appearing once: a scalar ("ii" is the trace, "ij,ij" the inner
  // product).
  require_file(kax::Array<double, 0>(kax::einsum<"ii">(in<double, 2>("sq44"))), "trace");
  require_file(kax::Array<double, 0>(kax::einsum<"ij,ij">(a, in<double, 2>("c34"))), "frobenius");
}

TEST_CASE("einsum takes diagonals and traces under '...' axes and '...' in the middle of a term",
          "[einsum]") {
  std::vector<double> v(2 * 3 * 3);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * static_cast<double>(i) - 3.0;
  const auto x = kax::from<double, 3>(v, {2, 3, 3});
  std::vector<double> diag, trace(2, 0.0);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 3; ++i) {
      diag.push_back(v[(b * 3 + i) * 3 + i]);
      trace[b] += v[(b * 3 + i) * 3 + i];
    }
  require_values(kax::Array<double, 2>(kax::einsum<"...ii->...i">(x)), diag);
  require_values(kax::Array<double, 1>(kax::einsum<"...ii->...">(x)), trace);
  // "i...j->j...i" on (2, 3, 4): the full reversal of the axes, (4, 3, 2).
  const auto t = in<double, 3>("t234");
  const kax::Array<double, 3> r = kax::einsum<"i...j->j...i">(t);
  REQUIRE(r.extents() == kax::shape<3>{4, 3, 2});
  std::vector<double> want;
  for (std::size_t j = 0; j < 4; ++j)
    for (std::size_t m = 0; m < 3; ++m)
      for (std::size_t i = 0; i < 2; ++i) want.push_back(t(i, m, j));
  require_values(r, want);
}

TEMPLATE_TEST_CASE("contractions over an empty axis give zeros and empty batches give empty results",
                   "[matmul]", float, double, std::int32_t) {
  using T = TestType;
  const kax::Array<T, 2> c = kax::matmul(kax::zeros<T>(3, 0), kax::zeros<T>(0, 4));
  REQUIRE(c.extents() == kax::shape<2>{3, 4});
  require_values(c, std::vector<double>(12, 0.0));
  const kax::Array<T, 0> d = kax::dot(kax::ones<T>(0), kax::ones<T>(0));
  require_values(d, {0.0});
  const kax::Array<T, 2> e = kax::matmul(kax::ones<T>(0, 5), kax::ones<T>(5, 4));
  REQUIRE(e.extents() == kax::shape<2>{0, 4});
  const kax::Array<T, 3> f = kax::matmul(kax::ones<T>(0, 3, 5), kax::ones<T>(5, 4));
  REQUIRE(f.extents() == kax::shape<3>{0, 3, 4});
  // k = 1: an outer product through matmul.
  const kax::Array<T, 2> g = kax::matmul(filled<T>(3, 1, 1), filled<T>(1, 4, 2));
  require_values(g, naive_matmul(as_doubles(filled<T>(3, 1, 1)), as_doubles(filled<T>(1, 4, 2)), 3, 1, 4));
}

TEMPLATE_TEST_CASE("a contraction kept in auto is recomputed when evaluated again after its operand changed",
                   "[matmul]", float, std::int32_t) {
  using T = TestType;
  const auto a = filled<T>(3, 4, 1);
  const auto b = filled<T>(4, 2, 2);
  const auto e = kax::matmul(a, b) + 1;
  auto want = [&] {
    auto w = naive_matmul(as_doubles(a), as_doubles(b), 3, 4, 2);
    for (double& x : w) x += 1;
    return w;
  };
  const kax::Array<T, 2> y1 = e;
  require_values(y1, want());
  a(0, 0) = static_cast<T>(a(0, 0) + 10);
  a(2, 3) = static_cast<T>(-7);
  const kax::Array<T, 2> y2 = e;
  require_values(y2, want());
}

TEST_CASE("a contraction read twice in one expression is computed once", "[planner][dot]") {
  constexpr std::size_t B = 32, D = 16;
  const auto xf = filled<float>(B, D, 5, true);
  const auto xi = filled<std::int32_t>(B, D, 5);
  const auto wf = filled<float>(D, 3, 6, true);
  const auto wi = filled<std::int32_t>(D, 3, 6);
  const auto cf = kax::UnaryExpr<counting_op, decltype(xf.as_leaf())>(xf.as_leaf());
  const auto ci = kax::UnaryExpr<counting_op, decltype(xi.as_leaf())>(xi.as_leaf());
  const auto df = kax::dot(cf, wf);
  const auto di = kax::dot(ci, wi);
  counting_op::count = 0;
  const kax::Array<float, 2> yf = kax::eval(df + df * 2);
  REQUIRE(counting_op::count.load() == static_cast<long>(B * D));
  counting_op::count = 0;
  const kax::Array<std::int32_t, 2> yi = kax::eval(di + di * 2);
  // Each output element of the generic kernel reads its row of x once: B * D * 3 reads.
  REQUIRE(counting_op::count.load() == static_cast<long>(B * D * 3));
  auto want = naive_matmul(as_doubles(xf), as_doubles(wf), B, D, 3);
  for (double& x : want) x *= 3;
  require_values(yf, want);
  want = naive_matmul(as_doubles(xi), as_doubles(wi), B, D, 3);
  for (double& x : want) x *= 3;
  require_values(yi, want);
}

TEMPLATE_TEST_CASE("contractions of contractions and reductions of contractions match naive loops",
                   "[matmul][einsum]", float, double, std::int32_t) {
  using T = TestType;
  const auto a = filled<T>(3, 4, 1), b = filled<T>(4, 5, 2), c = filled<T>(5, 2, 3);
  const auto ab = naive_matmul(as_doubles(a), as_doubles(b), 3, 4, 5);
  const auto abc = naive_matmul(ab, as_doubles(c), 3, 5, 2);
  require_values(kax::Array<T, 2>(kax::matmul(kax::matmul(a, b), c)), abc);
  require_values(kax::Array<T, 2>(kax::einsum<"ij,jk->ik">(kax::matmul(a, b), c)), abc);
  require_values(kax::Array<T, 2>(kax::matmul(a, kax::matmul(b, c))), abc);
  double total = 0.0;
  for (double x : ab) total += x;
  require_values(kax::Array<T, 0>(kax::sum(kax::matmul(a, b))), {total});
  require_values(kax::Array<T, 0>(kax::einsum<"ij->">(kax::matmul(a, b))), {total});
}

TEST_CASE("long int32 and float contractions on the generic kernel match naive loops", "[einsum]") {
  // A reduction long enough to be split into blocks by the generic kernel.
  constexpr std::size_t m = 3, k = 20000;
  const auto ai = filled<std::int32_t>(m, k, 7);
  const auto vi = filled<std::int32_t>(k, 1, 8);
  const auto want = naive_matmul(as_doubles(ai), as_doubles(vi), m, k, 1);
  const kax::Array<std::int32_t, 2> got = kax::dot(ai, vi);
  require_values(got, want);
  // Two summed labels on floats (generic): "ijk,jk->i", with small integers (exact).
  std::vector<float> x(2 * 300 * 40), y(300 * 40);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  const auto e = kax::einsum<"ijk,jk->i">(kax::from<float, 3>(x, {2, 300, 40}), kax::from<float, 2>(y, {300, 40}));
  REQUIRE_THAT(kax::plan_of(e), Contains("kax::reduce<sum"));
  std::vector<double> w(2, 0.0);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t p = 0; p < 300 * 40; ++p) w[i] += double(x[i * 300 * 40 + p]) * double(y[p]);
  require_values(kax::Array<float, 1>(e), w);
}

TEST_CASE("GEMM reads column-major Eigen storage in place and copies storage with no unit stride",
          "[matmul][gemm]") {
  Eigen::MatrixXf m(5, 7);  // column-major
  for (Eigen::Index i = 0; i < 5; ++i)
    for (Eigen::Index j = 0; j < 7; ++j) m(i, j) = static_cast<float>(std::sin(0.3 * double(i * 7 + j)));
  const auto b = filled<float>(7, 4, 9, true);
  std::vector<double> vm;
  for (Eigen::Index i = 0; i < 5; ++i)
    for (Eigen::Index j = 0; j < 7; ++j) vm.push_back(m(i, j));
  const auto e = kax::matmul(kax::from_eigen(m), b);
  REQUIRE_THAT(kax::plan_of(e), Contains("kax::gemm<") && !Contains("(GEMM operand)"));
  require_values(kax::Array<float, 2>(e), naive_matmul(vm, as_doubles(b), 5, 7, 4));
  // Every other row of m: element strides (2, 5), neither of them 1.
  Eigen::Map<const Eigen::MatrixXf, 0, Eigen::Stride<5, 2>> rows(m.data(), 3, 7);
  std::vector<double> vr;
  for (Eigen::Index i = 0; i < 3; ++i)
    for (Eigen::Index j = 0; j < 7; ++j) vr.push_back(m(2 * i, j));
  const auto f = kax::matmul(kax::from_eigen(rows), b);
  REQUIRE_THAT(kax::plan_of(f), Contains("kax::gemm<") && Contains("(GEMM operand)"));
  require_values(kax::Array<float, 2>(f), naive_matmul(vr, as_doubles(b), 3, 7, 4));
}

TEST_CASE("einsum sums over a label that one operand reads along its diagonal", "[einsum]") {
  // "ii,ij->j": GEMM cannot map a diagonal, so the generic kernel computes it.
  const auto sq = in<double, 2>("sq44");
  const auto b = in<double, 2>("b45");
  const auto e = kax::einsum<"ii,ij->j">(sq, b);
  REQUIRE_THAT(kax::plan_of(e), Contains("kax::reduce<sum") && !Contains("kax::gemm<"));
  std::vector<double> want(5, 0.0);
  for (std::size_t j = 0; j < 5; ++j)
    for (std::size_t i = 0; i < 4; ++i) want[j] += sq(i, i) * b(i, j);
  require_values(kax::Array<double, 1>(e), want);
}

// The output's last axis is a batch label of extent 1: the axis with stride 1 is the last one
// of extent > 1 (a regression test: GEMM once wrote C as if M were contiguous here).
TEST_CASE("einsum with a trailing unit batch axis in the output matches naive loops", "[einsum]") {
  std::vector<double> a(12), b(20);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i % 5) - 2;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(i % 7) - 3;
  const auto A = kax::from<double, 3>(a, {1, 3, 4});
  const auto B = kax::from<double, 3>(b, {1, 4, 5});
  const auto want = naive_matmul(a, b, 3, 4, 5);
  require_values(kax::Array<double, 3>(kax::einsum<"bij,bjk->ikb">(A, B)), want);
  require_values(kax::Array<double, 3>(kax::einsum<"...ij,...jk->ik...">(A, B)), want);
}

TEMPLATE_TEST_CASE("a matrix times a vector takes the row-dot kernel and matches naive loops", "[dot][gemv]",
                   float, double) {
  using T = TestType;
  const std::size_t M = 37;
  // K below the kernel's lane count (the tail alone), a multiple of it (no tail), and above it
  // with a tail.
  for (const std::size_t K : {std::size_t{5}, std::size_t{64}, std::size_t{300}}) {
    CAPTURE(K);
    const auto a = filled<T>(M, K, 5);
    const auto w_col = filled<T>(K, 1, 6);
    const auto w = kax::Array<T, 1>(kax::reshape(w_col, {static_cast<long>(K)}));
    std::vector<double> want(M, 0.0);
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t k = 0; k < K; ++k) want[i] += static_cast<double>(a(i, k)) * static_cast<double>(w_col(k, 0));
    // (M, K) @ (K,), (M, K) @ (K, 1), and the vector on the left ("k,ik->i").
    REQUIRE_THAT(kax::plan_of(kax::dot(a, w)), Contains("kax::gemv<"));
    require_values(kax::Array<T, 1>(kax::dot(a, w)), want);
    REQUIRE_THAT(kax::plan_of(kax::dot(a, w_col)), Contains("kax::gemv<"));
    require_values(kax::Array<T, 2>(kax::dot(a, w_col)), want);
    const auto left = kax::einsum<"k,ik->i">(w, a);
    REQUIRE_THAT(kax::plan_of(left), Contains("kax::gemv<"));
    require_values(kax::Array<T, 1>(left), want);
    // A transposed matrix is not contiguous along K: the generic kernel, same values.
    const auto at = kax::Array<T, 2>(kax::transpose(a));
    const auto via_t = kax::einsum<"ki,k->i">(at, w);
    REQUIRE_THAT(kax::plan_of(via_t), !Contains("kax::gemv<"));
    require_values(kax::Array<T, 1>(via_t), want);
  }
}
