// bench/bench_random.cpp — kax::random's lazy samplers beside materializing them and a
// hand-written threefry loop.
//
// Three cases over n = 2^25 float32 samples, each written several ways in this one binary so that
// every ratio comes from one run on one machine state (key = kax::random::key(42)):
//   normal      s = Σ normal(k, n) * a, a = 0.5f           the headline: pure generation, no input
//   uniform     s = Σ uniform(k, n) * a                    the cipher alone (integer work and one
//               float op per sample): isolates threefry's cost from erfinv's
//   normal_dot  s = Σ normal(k, n) * a[i], a (n,) float    generation against a 4 B/sample read
// Variants (the name after the slash; run_random.sh pairs them by that name):
//   kax              `s = kax::sum(kax::random::normal<float>(k, {n}) * a);` into a preallocated
//                    Array<float, 0>: the random leaf is generated inside the reduction's kernel
//   kax_materialize  `z = kax::random::normal<float>(k, {n});` into a preallocated Array<float, 1>,
//                    then `s = kax::sum(z * a);`: what an eager library (NumPy, JAX without jit)
//                    does; 8 B/sample of extra traffic
//   omp              hand-written: `omp parallel for reduction(+)` over blocks of 4096 samples,
//                    64 accumulators (four zmm) in an inner `omp simd` loop, its own scalar
//                    threefry2x32-20 and XLA's float erfinv (log1pf from glibc's libmvec,
//                    _ZGVeN16v_log1pf), computing the same values as kax; it knows n < 2^32,
//                    so its counters are 32-bit (kax's are 64-bit: hi32(i), lo32(i))
// Counters: items are samples; bytes are 4 B per sample generated plus the input read (normal_dot:
// 8 B/sample), so the rate compares with a memory bandwidth.  The report uses samples/s.
// The thread count comes from Kokkos (--kokkos-threads); the OpenMP baseline uses the same.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "kax/kax.hpp"

// glibc's libmvec log1pf, as bench_reductions.cpp calls sinf: glibc declares its SIMD variants only
// under __FAST_MATH__; an alias of the same assembler symbol lets `omp simd` call
// _ZGVeN16v_log1pf (glibc ≥ 2.35) without -ffast-math.
#pragma omp declare simd notinbranch
extern "C" float bench_mvec_log1pf(float) noexcept __asm__("log1pf");

namespace {

constexpr std::size_t n = std::size_t{1} << 25;
constexpr std::int64_t seed = 42;
constexpr float a_scalar = 0.5f;
constexpr int lanes = 64;             // the hand-written loop's partial sums: four zmm of floats
constexpr std::size_t block = 4096;   // samples per `omp for` iteration; n is a multiple
constexpr std::size_t prefix = 4096;  // elements compared one by one at startup
static_assert(n % block == 0 && block % lanes == 0 && n <= (std::size_t{1} << 32));

// ---- the hand-written generator ----------------------------------------------------------------
// threefry2x32-20 (Random123 / jax.random), written from the paper's description: rotations
// 13 15 26 6 | 17 29 16 24, key schedule (k0, k1, k0 ^ k1 ^ 0x1BD11BDA), after every 4 rounds
// x0 += ks[(i+1) % 3], x1 += ks[(i+2) % 3] + i + 1.
template <int R>
[[gnu::always_inline]] inline std::uint32_t rotl(std::uint32_t v) {
  return (v << R) | (v >> (32 - R));
}
template <int R0, int R1, int R2, int R3>
[[gnu::always_inline]] inline void mix4(std::uint32_t& x0, std::uint32_t& x1) {
  x0 += x1, x1 = rotl<R0>(x1) ^ x0;
  x0 += x1, x1 = rotl<R1>(x1) ^ x0;
  x0 += x1, x1 = rotl<R2>(x1) ^ x0;
  x0 += x1, x1 = rotl<R3>(x1) ^ x0;
}
[[gnu::always_inline]] inline void fry(std::uint32_t k0, std::uint32_t k1, std::uint32_t& x0, std::uint32_t& x1) {
  const std::uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  x0 += k0, x1 += k1;
  mix4<13, 15, 26, 6>(x0, x1), x0 += k1, x1 += k2 + 1;
  mix4<17, 29, 16, 24>(x0, x1), x0 += k2, x1 += k0 + 2;
  mix4<13, 15, 26, 6>(x0, x1), x0 += k0, x1 += k1 + 3;
  mix4<17, 29, 16, 24>(x0, x1), x0 += k1, x1 += k2 + 4;
  mix4<13, 15, 26, 6>(x0, x1), x0 += k2, x1 += k0 + 5;
}
// The 32 random bits of sample i: w0 ^ w1 of the block of counter (hi32(i), lo32(i)); n < 2^32,
// so the high word is 0 and the loop counts in 32 bits.
[[gnu::always_inline]] inline std::uint32_t bits_of(std::uint32_t k0, std::uint32_t k1, std::uint32_t i) {
  std::uint32_t x0 = 0, x1 = i;
  fry(k0, k1, x0, x1);
  return x0 ^ x1;
}
// [0, 1) from the top 23 bits.
[[gnu::always_inline]] inline float unit_of(std::uint32_t bits) {
  return std::bit_cast<float>((bits >> 9) | 0x3f800000u) - 1.0f;
}
// uniform(k, n): minval 0, span 1, so jax's u * span + minval and its clamp at minval are u.
[[gnu::always_inline]] inline float uniform_of(std::uint32_t k0, std::uint32_t k1, std::uint32_t i) {
  return unit_of(bits_of(k0, k1, i));
}
// normal(k, n) = sqrt(2) * erfinv(u), u = unit * 2 + nextafter(-1, 0) in (-1, 1) (jax's clamp at
// the low end and erfinv's x = ±1 branch cannot trigger for these u), erfinv as XLA evaluates
// it (Giles' float polynomials in w = -log1p(-u²), fused multiply-adds).  The two Horner chains
// share one evaluation: the coefficients are selected per lane, not the results.
[[gnu::always_inline]] inline float normal_of(std::uint32_t k0, std::uint32_t k1, std::uint32_t i) {
  constexpr float lo = -1.0f + 0x1p-24f;  // nextafter(-1, 0); span 1 - lo = 2 exactly in float
  const float x = std::fma(unit_of(bits_of(k0, k1, i)), 2.0f, lo);
  const float w = -bench_mvec_log1pf(-x * x);
  // Selects as bit masks, the polynomial written out: GCC 12 does not if-convert a loop that calls
  // a SIMD clone (log1pf), so any `?:` or inner loop here would leave the sample loop scalar.
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(w < 5.0f);  // all ones: central region
  const auto c = [m](float central, float tail) {
    const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
    return std::bit_cast<float>((bits(central) & m) | (bits(tail) & ~m));
  };
  const float t = c(w - 2.5f, std::sqrt(w) - 3.0f);
  float p = c(2.81022636e-08f, -0.000200214257f);
  p = std::fma(p, t, c(3.43273939e-07f, 0.000100950558f));
  p = std::fma(p, t, c(-3.5233877e-06f, 0.00134934322f));
  p = std::fma(p, t, c(-4.39150654e-06f, -0.00367342844f));
  p = std::fma(p, t, c(0.00021858087f, 0.00573950773f));
  p = std::fma(p, t, c(-0.00125372503f, -0.0076224613f));
  p = std::fma(p, t, c(-0.00417768164f, 0.00943887047f));
  p = std::fma(p, t, c(0.246640727f, 1.00167406f));
  p = std::fma(p, t, c(1.50140941f, 2.83297682f));
  return 1.41421356f * (p * x);
}

// Σ f(i) * a (Dot: * a[i]) over [0, n): blocks of 4096 samples shared out statically, 64 lanes.
template <class F, bool Dot>
float omp_sum(std::uint32_t k0, std::uint32_t k1, float a, const float* __restrict av, F f) {
  float total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (std::size_t b = 0; b < n / block; ++b) {
    float acc[lanes] = {};
    for (std::uint32_t i = static_cast<std::uint32_t>(b * block); i < (b + 1) * block; i += lanes) {
#pragma omp simd
      for (int j = 0; j < lanes; ++j) acc[j] += f(k0, k1, i + j) * (Dot ? av[i + j] : a);
    }
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < lanes; ++j) s += acc[j];
    total += s;
  }
  return total;
}
// The same per-sample code, stored instead of summed (checks only).
template <class F>
void omp_fill(std::uint32_t k0, std::uint32_t k1, float* __restrict out, std::size_t first, std::size_t len, F f) {
#pragma omp simd
  for (std::size_t j = 0; j < len; ++j) out[j] = f(k0, k1, static_cast<std::uint32_t>(first + j));
}
constexpr auto normal_f = [](std::uint32_t k0, std::uint32_t k1, std::uint32_t i) { return normal_of(k0, k1, i); };
constexpr auto uniform_f = [](std::uint32_t k0, std::uint32_t k1, std::uint32_t i) { return uniform_of(k0, k1, i); };

// ---- operands ----------------------------------------------------------------------------------
struct operands {
  kax::random::Key key = kax::random::key(seed);
  kax::Array<float, 1> z = kax::empty<float>(n);  // kax_materialize's samples
  kax::Array<float, 1> a = kax::empty<float>(n);  // normal_dot's weights
  kax::Array<float, 0> s = kax::sum(kax::zeros<float>(1));
  operands() {
    float *pz = z.data(), *pa = a.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      pz[i] = 0;
      pa[i] = 0.25f + static_cast<float>(i % 7) * 0.125f;
    }
  }
};

std::unique_ptr<operands> data;

operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

void finish(benchmark::State& state, double bytes_per_sample, const void* out) {
  const auto it = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(it * bytes_per_sample * n));
  state.SetItemsProcessed(static_cast<std::int64_t>(it * n));
  benchmark::DoNotOptimize(out);
  benchmark::ClobberMemory();
}

// ---- the cases ---------------------------------------------------------------------------------
auto normal_expr(const operands& o) { return kax::sum(kax::random::normal<float>(o.key, {n}) * a_scalar); }
auto uniform_expr(const operands& o) { return kax::sum(kax::random::uniform<float>(o.key, {n}) * a_scalar); }
auto dot_expr(const operands& o) { return kax::sum(kax::random::normal<float>(o.key, {n}) * o.a); }

void normal_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.s = kax::sum(kax::random::normal<float>(kax::random::key(seed), {n}) * a_scalar);
  finish(state, 4, o.s.data());
}
void normal_kax_materialize(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.z = kax::random::normal<float>(kax::random::key(seed), {n});
    o.s = kax::sum(o.z * a_scalar);
  }
  finish(state, 4, o.s.data());
}
void normal_omp(benchmark::State& state) {
  const auto k = ops().key;
  for (auto _ : state)
    benchmark::DoNotOptimize(omp_sum<decltype(normal_f), false>(k.w0, k.w1, a_scalar, nullptr, normal_f));
  finish(state, 4, nullptr);
}
void uniform_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.s = kax::sum(kax::random::uniform<float>(kax::random::key(seed), {n}) * a_scalar);
  finish(state, 4, o.s.data());
}
void uniform_kax_materialize(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.z = kax::random::uniform<float>(kax::random::key(seed), {n});
    o.s = kax::sum(o.z * a_scalar);
  }
  finish(state, 4, o.s.data());
}
void uniform_omp(benchmark::State& state) {
  const auto k = ops().key;
  for (auto _ : state)
    benchmark::DoNotOptimize(omp_sum<decltype(uniform_f), false>(k.w0, k.w1, a_scalar, nullptr, uniform_f));
  finish(state, 4, nullptr);
}
void dot_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.s = kax::sum(kax::random::normal<float>(kax::random::key(seed), {n}) * o.a);
  finish(state, 8, o.s.data());
}
void dot_kax_materialize(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.z = kax::random::normal<float>(kax::random::key(seed), {n});
    o.s = kax::sum(o.z * o.a);
  }
  finish(state, 8, o.s.data());
}
void dot_omp(benchmark::State& state) {
  auto& o = ops();
  const auto k = o.key;
  for (auto _ : state)
    benchmark::DoNotOptimize(omp_sum<decltype(normal_f), true>(k.w0, k.w1, 0, o.a.data(), normal_f));
  finish(state, 8, nullptr);
}

// ---- checks ------------------------------------------------------------------------------------
// Distance in representable floats (0: identical bits).
std::int64_t ulps(float x, float y) {
  auto ord = [](float v) {
    const auto b = static_cast<std::int64_t>(std::bit_cast<std::int32_t>(v));
    return b < 0 ? -(b & 0x7fffffff) : b;
  };
  return std::abs(ord(x) - ord(y));
}
// sqrt(2) erfinv(u) in double: Newton's method on erf, started from the float value.
double normal_ref(double u, double x0) {
  double x = x0;
  for (int it = 0; it < 6; ++it) {
    const double f = std::erf(x / std::sqrt(2.0)) - u;
    x -= f / (std::sqrt(2.0 / M_PI) * std::exp(-x * x / 2));
  }
  return x;
}

bool check_all() {
  auto& o = ops();
  bool ok = true;
  auto report = [&](const char* name, double err, double tol) {
    std::fprintf(stderr, "check %s: %.3g (tolerance %.1g)\n", name, err, tol);
    if (!(err <= tol)) ok = false;
  };
  const std::uint32_t k0 = o.key.w0, k1 = o.key.w1;

  // The hand-written cipher against Random123's known answers (kat_vectors: counter, key, result).
  struct kat {
    std::uint32_t c0, c1, key0, key1, r0, r1;
  };
  const kat kats[] = {{0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
                      {~0u, ~0u, ~0u, ~0u, 0x1cb996fcu, 0xbb002be7u},
                      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xc4923a9cu, 0x483df7a0u}};
  int bad = 0;
  for (const auto& t : kats) {
    std::uint32_t x0 = t.c0, x1 = t.c1;
    fry(t.key0, t.key1, x0, x1);
    bad += (x0 != t.r0 || x1 != t.r1);
  }
  report("omp threefry2x32-20 vs Random123 known answers: mismatches", bad, 0);
  // ... and its normals against jax.random.normal(jax.random.key(42), (1000,))[:8] (float32, from
  // tests/data/random_normal_f32_key42_1000.txt).
  const float jax_normal[8] = {-0.028304615989327431f, 0.4671318531036377f,  0.29570296406745911f,
                               0.15354591608047485f,   -0.12403281778097153f, 0.21692314743995667f,
                               -1.4408789873123169f,   0.75585991144180298f};
  std::vector<float> mine(prefix), theirs(prefix);
  omp_fill(k0, k1, mine.data(), 0, prefix, normal_f);
  std::int64_t worst_ulp = 0;
  for (int i = 0; i < 8; ++i) worst_ulp = std::max(worst_ulp, ulps(mine[i], jax_normal[i]));
  report("normal/omp vs jax.random.normal(key(42))[:8]: max ulp", double(worst_ulp), 4);

  // Element by element on a prefix: kax against the exact quantile of the same u (double
  // Newton on std::erf) and against the hand-written values.
  {
    kax::Array<float, 1> z = kax::random::normal<float>(o.key, {prefix});
    double rel = 0;
    std::int64_t du = 0;
    for (std::size_t i = 0; i < prefix; ++i) {
      const double u = std::fma(double(unit_of(bits_of(k0, k1, std::uint32_t(i)))), 2.0, -1.0 + 0x1p-24);
      const double ref = normal_ref(u, z.data()[i]);
      rel = std::max(rel, std::abs(z.data()[i] - ref) / std::max(std::abs(ref), 1e-30));
      du = std::max(du, ulps(z.data()[i], mine[i]));
    }
    report("normal/kax vs double sqrt(2) erfinv(u), 4096 samples: max relative error", rel, 1e-5);
    report("normal/omp vs normal/kax, 4096 samples: max ulp", double(du), 4);
  }
  {
    kax::Array<float, 1> z = kax::random::uniform<float>(o.key, {prefix});
    omp_fill(k0, k1, theirs.data(), 0, prefix, uniform_f);
    double err = 0;
    std::int64_t du = 0;
    for (std::size_t i = 0; i < prefix; ++i) {
      const double ref = double(bits_of(k0, k1, std::uint32_t(i)) >> 9) * 0x1p-23;
      err = std::max(err, std::abs(z.data()[i] - ref));
      du = std::max(du, ulps(z.data()[i], theirs[i]));
    }
    report("uniform/kax vs (bits >> 9) / 2^23, 4096 samples: max abs error", err, 0);
    report("uniform/omp vs uniform/kax, 4096 samples: max ulp", double(du), 0);
  }

  // Whole sums: each variant against a double sum of the hand-written per-sample values.
  auto ref_sum = [&](bool normal, const float* av) {
    double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (std::size_t b = 0; b < n / block; ++b) {
      float v[block];
      if (normal) omp_fill(k0, k1, v, b * block, block, normal_f);
      else omp_fill(k0, k1, v, b * block, block, uniform_f);
      for (std::size_t j = 0; j < block; ++j) total += double(v[j]) * (av ? av[b * block + j] : a_scalar);
    }
    return total;
  };
  auto rel = [](double got, double ref) { return std::abs(got - ref) / std::abs(ref); };
  const double rn = ref_sum(true, nullptr), ru = ref_sum(false, nullptr), rd = ref_sum(true, o.a.data());
  std::fprintf(stderr, "reference sums (double): normal %.6g, uniform %.6g, normal_dot %.6g\n", rn, ru, rd);
  const double tol = 1e-4;
  o.s = normal_expr(o);
  report("normal/kax sum: relative error", rel(o.s(), rn), tol);
  o.z = kax::random::normal<float>(o.key, {n});
  o.s = kax::sum(o.z * a_scalar);
  report("normal/kax_materialize sum: relative error", rel(o.s(), rn), tol);
  report("normal/omp sum: relative error",
         rel(omp_sum<decltype(normal_f), false>(k0, k1, a_scalar, nullptr, normal_f), rn), tol);
  o.s = uniform_expr(o);
  report("uniform/kax sum: relative error", rel(o.s(), ru), tol);
  o.z = kax::random::uniform<float>(o.key, {n});
  o.s = kax::sum(o.z * a_scalar);
  report("uniform/kax_materialize sum: relative error", rel(o.s(), ru), tol);
  report("uniform/omp sum: relative error",
         rel(omp_sum<decltype(uniform_f), false>(k0, k1, a_scalar, nullptr, uniform_f), ru), tol);
  o.s = dot_expr(o);
  report("normal_dot/kax sum: relative error", rel(o.s(), rd), tol);
  o.z = kax::random::normal<float>(o.key, {n});
  o.s = kax::sum(o.z * o.a);
  report("normal_dot/kax_materialize sum: relative error", rel(o.s(), rd), tol);
  report("normal_dot/omp sum: relative error",
         rel(omp_sum<decltype(normal_f), true>(k0, k1, 0, o.a.data(), normal_f), rd), tol);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  {
    if (!kax_bench::start(argc, argv, "random")) return 1;
    // What each kax variant launches, once (kax::plan_of), so a slow variant can be read off.
    auto& o = ops();
    std::fprintf(stderr,
                 "plan normal/kax:\n%s\nplan normal/kax_materialize (generate):\n%s\n"
                 "plan normal/kax_materialize (consume):\n%s\nplan uniform/kax:\n%s\nplan normal_dot/kax:\n%s\n",
                 kax::plan_of(normal_expr(o)).c_str(), kax::plan_of(kax::random::normal<float>(o.key, {n})).c_str(),
                 kax::plan_of(kax::sum(o.z * a_scalar)).c_str(), kax::plan_of(uniform_expr(o)).c_str(),
                 kax::plan_of(dot_expr(o)).c_str());
    if (!check_all()) {
      std::fprintf(stderr, "bench_random: a variant computes wrong values\n");
      return 2;
    }
    const kax_bench::bench_case cases[] = {
        {"normal/kax", normal_kax},
        {"normal/kax_materialize", normal_kax_materialize},
        {"normal/omp", normal_omp},
        {"uniform/kax", uniform_kax},
        {"uniform/kax_materialize", uniform_kax_materialize},
        {"uniform/omp", uniform_omp},
        {"normal_dot/kax", dot_kax},
        {"normal_dot/kax_materialize", dot_kax_materialize},
        {"normal_dot/omp", dot_omp},
    };
    kax_bench::run(cases);
    data.reset();  // Views must go before Kokkos::finalize
  }
  return 0;
}
