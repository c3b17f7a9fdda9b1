// bench/bench_pmap.cpp — kax::pmap over host devices beside hand-written threads and kax::eval.
//
// The number of host devices is fixed per process (KAX_HOST_DEVICES, frozen on first use) and so
// is Kokkos' thread count, so bench/run_pmap.sh runs this binary once per configuration and merges
// the JSON files.  Each process registers only the cases of its configuration, and the
// configuration is part of every name, so the merged names are unique:
//   KAX_HOST_DEVICES=1, --kokkos-threads=1   sincos*/{pmap_d1_t1_1N, pmap_d1_t1_2N, eval_t1},
//                                            sincos/pmap_d1_t1_1N_donated,
//                                            sincos/{assign_t1, omp_t1}
//   KAX_HOST_DEVICES=1, --kokkos-threads=2   sincos*/{pmap_d1_t2_2N, eval_t2}, sincos/{assign_t2, omp_t2}
//   KAX_HOST_DEVICES=2, --kokkos-threads=1   sincos*/pmap_d2_t1, sincos/pmap_d2_t1_donated,
//                                            psum2/{kax, kax_donated, omp, omp_fresh, threads}
//   KAX_HOST_DEVICES=2, --kokkos-threads=2   sincos*/pmap_d2_t2, psum2/kax_t2 (see below)
//   KAX_HOST_DEVICES=4, --kokkos-threads=1   psum4/{kax, kax_donated, omp, omp_fresh, threads}
//
// Three cases (sincos* is sincos and sincos_sum):
//   psumN   Y = pmap<"i">([](auto x) { return psum<"i">(x); })(X), X (n, 2^22) float, n = 2 or 4
//           devices.  Baselines: n threads, thread t owning row t of X and of Y; each sums chunk t
//           of all rows into its own row (reduce-scatter), a barrier, then copies the other
//           threads' chunks from their rows (all-gather):
//             omp        one `omp parallel num_threads(n)` region per call, `omp barrier`
//             omp_fresh  the same into a fresh kax::empty<float>(n, 2^22) per call, as pmap returns
//                        a new array: separates the cost of a fresh output from the collective's
//             threads    n - 1 std::threads spawned per call plus the caller, std::barrier (kax
//                        also starts its device tasks per call)
//           and kax_donated: pmap(f, donate_argnums<0>), the result in X's buffer (a copy of X).
//   sincos  f(x) = sin(x) * 2 + cos(x), N = 2^22 floats per device (transcendentals: libmvec).
//             pmap_d1_t1_1N   1 device, Kokkos on 1 thread, X (1, N): one device's share
//             pmap_d1_t1_2N   1 device, Kokkos on 1 thread, X (1, 2N): all the work on one device
//             pmap_d1_t2_2N   1 device (pmap runs f on the caller: the full OpenMP pool), X (1, 2N)
//             pmap_d2_t1      2 devices, X (2, N): each device's kernels run inline on its TBB
//                             thread (Kokkos 3.4 OpenMP runs a kernel launched from a non-master
//                             thread on that thread)
//             pmap_d2_t2      the same with --kokkos-threads=2: the caller (Kokkos' OpenMP master)
//                             only waits, so each device still runs its kernels on its own task's
//                             thread and the 2-thread pool stays idle
//             eval_tT         kax::eval(f(X)), X (2, N), no pmap, on T threads (a fresh output per
//                             call, as pmap returns one)
//             assign_tT       y = f(X); into a preallocated (2, N) Array
//             omp_tT          hand-written `omp parallel for simd` calling libmvec's sinf/cosf
//             *_donated       pmap(f, donate_argnums<0>): the result reuses the operand's buffer
//                             (a copy of X), so no new output is allocated per call
//           Weak scaling = 2 * T(pmap_d1_t1_1N) / T(pmap_d2_t1) (target >= 1.8), and the same for
//           the donated variants; strong scaling = T(pmap_d1_t1_2N) / T(pmap_d2_t1).
//   sincos_sum  f(x) = sum(sin(x) * 2 + cos(x)): the same elementwise work and the same pmap and
//           eval variants (eval: sum over axis 1 of X (2, N)), but each device returns a scalar, so no large
//           output is allocated per call: the scaling of the devices' concurrency alone.
// Every variant is checked against an independent double loop before timing (exit status 2).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.hpp"
#include "kax/kax.hpp"

// glibc's libmvec sinf/cosf (as bench/seed_baselines.hpp: glibc declares the SIMD variants only
// under __FAST_MATH__; aliases of the same symbols let `omp simd` call _ZGVeN16v_sinf/_cosf).
#pragma omp declare simd notinbranch
extern "C" float bench_mvec_sinf(float) noexcept __asm__("sinf");
#pragma omp declare simd notinbranch
extern "C" float bench_mvec_cosf(float) noexcept __asm__("cosf");

namespace {

using namespace kax_bench;

constexpr std::size_t N = std::size_t{1} << 22;  // floats per device
constexpr std::size_t block = 4096;               // the baselines' reduce block: 16 KB per row

constexpr auto psum_f = [](auto x) { return kax::psum<"i">(x); };
constexpr auto sincos_f = [](auto x) { return kax::sin(x) * 2.0f + kax::cos(x); };
// Over the last axis: a scalar per device under pmap, a (2,) for kax::eval of X (2, N).
constexpr auto sincos_sum_f = [](auto x) { return kax::sum(sincos_f(x), -1); };

int devices = 1;  // kax::local_device_count() of this process
int threads = 1;  // Kokkos' (and the OpenMP baselines') thread count

// Operands, made on first use: only the current configuration's.
struct psum_operands {
  kax::Array<float, 2> x, y;  // (devices, N): y is the baselines' output
  kax::Array<float, 2> xd;    // a copy of x for the donated variant, which overwrites it
  psum_operands() : x(kax::empty<float>(devices, N)), y(kax::empty<float>(devices, N)) {
    float *px = x.data(), *py = y.data();
    for (std::size_t k = 0; k < static_cast<std::size_t>(devices); ++k)
      for (std::size_t i = 0; i < N; ++i) {
        px[k * N + i] = static_cast<float>((i * 7 + k * 13) % 101) * 0.25f;  // sums stay exact
        py[k * N + i] = 0;
      }
    xd = kax::copy(x);
  }
};
struct sincos_operands {
  kax::Array<float, 2> x1 = kax::empty<float>(1, N), xw = kax::empty<float>(1, 2 * N);
  kax::Array<float, 2> x2 = kax::empty<float>(2, N), y2 = kax::empty<float>(2, N);
  kax::Array<float, 2> x1d, x2d;  // copies for the donated variants, which overwrite them
  sincos_operands() {
    auto value = [](std::size_t i) { return static_cast<float>(i % 997) / 997.0f * 8.0f - 4.0f; };
    for (std::size_t i = 0; i < N; ++i) x1.data()[i] = value(i);
    for (std::size_t i = 0; i < 2 * N; ++i) xw.data()[i] = x2.data()[i] = value(i), y2.data()[i] = 0;
    x1d = kax::copy(x1);
    x2d = kax::copy(x2);
  }
};
std::unique_ptr<psum_operands> psum_data;
std::unique_ptr<sincos_operands> sincos_data;
psum_operands& pops() {
  if (!psum_data) psum_data = std::make_unique<psum_operands>();
  return *psum_data;
}
sincos_operands& sops() {
  if (!sincos_data) sincos_data = std::make_unique<sincos_operands>();
  return *sincos_data;
}

// Bytes: the minimum traffic (every input read once, every output written once); items: output
// elements.  The report recomputes rates from the repetitions' times.
void finish(benchmark::State& state, double bytes, double items) {
  const auto it = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(it * bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(it * items));
  benchmark::ClobberMemory();
}

// ---- psum: every device (thread) gets the elementwise sum of all rows -------------------------

// Thread t of n: chunk t of the sum into its own row, in blocks that stay in L1 across the rows;
// then, after everyone's chunk is done, the other chunks from the threads that own them.
template <class Barrier>
void psum_thread(std::size_t t, std::size_t n, const float* x, float* y, Barrier&& barrier) {
  const std::size_t lo = N * t / n, hi = N * (t + 1) / n;
  float* __restrict own = y + t * N;
  for (std::size_t b = lo; b < hi; b += block) {
    const std::size_t e = std::min(b + block, hi);
    const float* __restrict x0 = x;
    const float* __restrict x1 = x + N;
#pragma omp simd
    for (std::size_t i = b; i < e; ++i) own[i] = x0[i] + x1[i];
    for (std::size_t k = 2; k < n; ++k) {
      const float* __restrict xk = x + k * N;
#pragma omp simd
      for (std::size_t i = b; i < e; ++i) own[i] += xk[i];
    }
  }
  barrier();
  for (std::size_t c = 0; c < n; ++c) {
    if (c == t) continue;
    const std::size_t clo = N * c / n, chi = N * (c + 1) / n;
    std::memcpy(own + clo, y + c * N + clo, (chi - clo) * sizeof(float));
  }
}

void psum_loops_omp(const float* x, float* y, std::size_t n) {
#pragma omp parallel num_threads(static_cast<int>(n))
  psum_thread(static_cast<std::size_t>(omp_get_thread_num()), n, x, y, [] {
#pragma omp barrier
  });
  // The region's closing barrier keeps the next call's writes away from this call's reads.
}

void psum_loops_threads(const float* x, float* y, std::size_t n) {
  std::barrier sync(static_cast<std::ptrdiff_t>(n));
  auto body = [&](std::size_t t) { psum_thread(t, n, x, y, [&] { sync.arrive_and_wait(); }); };
  std::vector<std::thread> team;
  team.reserve(n - 1);
  for (std::size_t t = 1; t < n; ++t) team.emplace_back(body, t);
  body(0);
  for (auto& th : team) th.join();
}

double psum_bytes() { return 8.0 * devices * N; }
double psum_items() { return double(devices) * N; }

void psum_kax(benchmark::State& state) {
  auto& o = pops();
  for (auto _ : state) {
    kax::Array<float, 2> y = kax::pmap<"i">(psum_f)(o.x);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, psum_bytes(), psum_items());
}
// The same with kax::donate_argnums<0>: the result reuses X's buffer (a copy of the operand; the
// values grow each call, which costs the same).
void psum_kax_donated(benchmark::State& state) {
  auto& o = pops();
  for (auto _ : state) {
    kax::Array<float, 2> y = kax::pmap<"i">(psum_f, kax::donate_argnums<0>)(o.xd);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, psum_bytes(), psum_items());
}
void psum_omp(benchmark::State& state) {
  auto& o = pops();
  for (auto _ : state) psum_loops_omp(o.x.data(), o.y.data(), static_cast<std::size_t>(devices));
  benchmark::DoNotOptimize(o.y.data());
  finish(state, psum_bytes(), psum_items());
}
void psum_omp_fresh(benchmark::State& state) {
  auto& o = pops();
  for (auto _ : state) {
    auto y = kax::empty<float>(devices, N);
    psum_loops_omp(o.x.data(), y.data(), static_cast<std::size_t>(devices));
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, psum_bytes(), psum_items());
}
void psum_threads(benchmark::State& state) {
  auto& o = pops();
  for (auto _ : state) psum_loops_threads(o.x.data(), o.y.data(), static_cast<std::size_t>(devices));
  benchmark::DoNotOptimize(o.y.data());
  finish(state, psum_bytes(), psum_items());
}

// ---- sincos: f(x) = sin(x) * 2 + cos(x) --------------------------------------------------------

void sincos_loops_omp(const float* __restrict x, float* __restrict y, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) y[i] = bench_mvec_sinf(x[i]) * 2.0f + bench_mvec_cosf(x[i]);
}

// pmap of F over one of the sincos operands, X (1, N), (1, 2N) or (2, N), as users call it: a
// new array per call.  Bytes: the input read and the output written once; items: input elements.
template <auto F, kax::Array<float, 2> sincos_operands::*X>
void sincos_pmap(benchmark::State& state) {
  const auto& x = sops().*X;
  std::size_t out = 0;
  for (auto _ : state) {
    auto y = kax::pmap<"i">(F)(x);
    out = y.size();
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * double(x.size() + out), double(x.size()));
}
// The same with kax::donate_argnums<0> on a copy of the operand: the result overwrites it, so no
// new output is allocated (the values change each call; sin and cos cost the same).
template <auto F, kax::Array<float, 2> sincos_operands::*X>
void sincos_pmap_donated(benchmark::State& state) {
  auto& x = sops().*X;
  for (auto _ : state) {
    auto y = kax::pmap<"i">(F, kax::donate_argnums<0>)(x);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 8.0 * double(x.size()), double(x.size()));
}
// kax::eval(F(X)) without pmap, X (2, N): a new array per call too.
template <auto F>
void sincos_eval(benchmark::State& state) {
  auto& o = sops();
  std::size_t out = 0;
  for (auto _ : state) {
    auto y = kax::eval(F(o.x2));
    out = y.size();
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * double(2 * N + out), 2.0 * N);
}
void sincos_assign(benchmark::State& state) {
  auto& o = sops();
  for (auto _ : state) {
    o.y2 = sincos_f(o.x2);
    benchmark::DoNotOptimize(o.y2.data());
  }
  finish(state, 16.0 * N, 2.0 * N);
}
void sincos_omp(benchmark::State& state) {
  auto& o = sops();
  for (auto _ : state) {
    sincos_loops_omp(o.x2.data(), o.y2.data(), 2 * N);
    benchmark::DoNotOptimize(o.y2.data());
  }
  finish(state, 16.0 * N, 2.0 * N);
}

// ---- checks: every variant against an independent double loop -----------------------------------

bool ok = true;
void report(const char* name, double err, double tol) {
  std::fprintf(stderr, "check %s: max relative error %.3g (tolerance %.1g)\n", name, err, tol);
  if (!(err <= tol)) ok = false;
}

// Every row of y (rows x N) must hold the sum over the rows of x.
double psum_err(const float* x, const float* y, std::size_t rows) {
  double worst = 0;
  for (std::size_t i = 0; i < N; i += 37) {
    double ref = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(devices); ++k) ref += x[k * N + i];
    for (std::size_t r = 0; r < rows; ++r) worst = std::max(worst, std::abs(y[r * N + i] - ref) / std::max(1.0, ref));
  }
  return worst;
}

double sincos_err(const float* x, const float* y, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; i += 29) {
    const double ref = std::sin(double(x[i])) * 2 + std::cos(double(x[i]));
    worst = std::max(worst, std::abs(y[i] - ref) / std::max(1.0, std::abs(ref)));
  }
  return worst;
}

// Relative to the sum of |f| (the sum cancels).
double sincos_sum_err(const float* x, const float* y, std::size_t rows, std::size_t len) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double ref = 0, mag = 0;
    for (std::size_t i = 0; i < len; ++i) {
      const double v = std::sin(double(x[r * len + i])) * 2 + std::cos(double(x[r * len + i]));
      ref += v;
      mag += std::abs(v);
    }
    worst = std::max(worst, std::abs(y[r] - ref) / mag);
  }
  return worst;
}

void check_psum() {
  auto& o = pops();
  const auto n = static_cast<std::size_t>(devices);
  {
    // What each device launches (kax::plan_of inside the device program), once.
    std::once_flag once;
    kax::Array<float, 2> y = kax::pmap<"i">([&](auto x) {
      auto e = kax::psum<"i">(x);
      std::call_once(once, [&] {
        std::fprintf(stderr, "plan psum%zu/kax (one device):\n%s\n", n, kax::plan_of(e).c_str());
      });
      return e;
    })(o.x);
    report("psum/kax", psum_err(o.x.data(), y.data(), n), 0);
  }
  psum_loops_omp(o.x.data(), o.y.data(), n);
  report("psum/omp", psum_err(o.x.data(), o.y.data(), n), 0);
  {
    auto y = kax::empty<float>(devices, N);
    psum_loops_omp(o.x.data(), y.data(), n);
    report("psum/omp_fresh", psum_err(o.x.data(), y.data(), n), 0);
  }
  std::fill_n(o.y.data(), n * N, 0.0f);
  psum_loops_threads(o.x.data(), o.y.data(), n);
  report("psum/threads", psum_err(o.x.data(), o.y.data(), n), 0);
}

void check_sincos() {
  auto& o = sops();
  const double tol = 1e-5;
  std::fprintf(stderr, "plan sincos/eval:\n%s\n", kax::plan_of(sincos_f(o.x2)).c_str());
  if (devices == 1) {
    kax::Array<float, 2> a = kax::pmap<"i">(sincos_f)(o.x1);
    report("sincos/pmap (1, N)", sincos_err(o.x1.data(), a.data(), N), tol);
    kax::Array<float, 2> b = kax::pmap<"i">(sincos_f)(o.xw);
    report("sincos/pmap (1, 2N)", sincos_err(o.xw.data(), b.data(), 2 * N), tol);
    auto c = kax::eval(sincos_f(o.x2));
    report("sincos/eval", sincos_err(o.x2.data(), c.data(), 2 * N), tol);
    o.y2 = sincos_f(o.x2);
    report("sincos/assign", sincos_err(o.x2.data(), o.y2.data(), 2 * N), tol);
    std::fill_n(o.y2.data(), 2 * N, 0.0f);
    sincos_loops_omp(o.x2.data(), o.y2.data(), 2 * N);
    report("sincos/omp", sincos_err(o.x2.data(), o.y2.data(), 2 * N), tol);
    kax::Array<float, 1> d = kax::pmap<"i">(sincos_sum_f)(o.x1);
    report("sincos_sum/pmap (1, N)", sincos_sum_err(o.x1.data(), d.data(), 1, N), 1e-5);
    kax::Array<float, 1> e = kax::pmap<"i">(sincos_sum_f)(o.xw);
    report("sincos_sum/pmap (1, 2N)", sincos_sum_err(o.xw.data(), e.data(), 1, 2 * N), 1e-5);
    auto g = kax::eval(sincos_sum_f(o.x2));
    report("sincos_sum/eval", sincos_sum_err(o.x2.data(), g.data(), 2, N), 1e-5);
  } else {
    kax::Array<float, 2> a = kax::pmap<"i">(sincos_f)(o.x2);
    report("sincos/pmap (2, N)", sincos_err(o.x2.data(), a.data(), 2 * N), tol);
    kax::Array<float, 1> b = kax::pmap<"i">(sincos_sum_f)(o.x2);
    report("sincos_sum/pmap (2, N)", sincos_sum_err(o.x2.data(), b.data(), 2, N), 1e-5);
  }
}

// This configuration's cases; false (and a message) for a configuration run_pmap.sh doesn't use.
bool run_configuration() {
  if (devices == 1 && threads == 1) {
    check_sincos();
    if (!ok) return false;
    const bench_case cases[] = {{"sincos/pmap_d1_t1_1N", sincos_pmap<sincos_f, &sincos_operands::x1>},
                                {"sincos/pmap_d1_t1_1N_donated", sincos_pmap_donated<sincos_f, &sincos_operands::x1d>},
                                {"sincos/pmap_d1_t1_2N", sincos_pmap<sincos_f, &sincos_operands::xw>},
                                {"sincos/eval_t1", sincos_eval<sincos_f>},
                                {"sincos/assign_t1", sincos_assign},
                                {"sincos/omp_t1", sincos_omp},
                                {"sincos_sum/pmap_d1_t1_1N", sincos_pmap<sincos_sum_f, &sincos_operands::x1>},
                                {"sincos_sum/pmap_d1_t1_2N", sincos_pmap<sincos_sum_f, &sincos_operands::xw>},
                                {"sincos_sum/eval_t1", sincos_eval<sincos_sum_f>}};
    run(cases);
  } else if (devices == 1 && threads == 2) {
    check_sincos();
    if (!ok) return false;
    const bench_case cases[] = {{"sincos/pmap_d1_t2_2N", sincos_pmap<sincos_f, &sincos_operands::xw>},
                                {"sincos/eval_t2", sincos_eval<sincos_f>},
                                {"sincos/assign_t2", sincos_assign},
                                {"sincos/omp_t2", sincos_omp},
                                {"sincos_sum/pmap_d1_t2_2N", sincos_pmap<sincos_sum_f, &sincos_operands::xw>},
                                {"sincos_sum/eval_t2", sincos_eval<sincos_sum_f>}};
    run(cases);
  } else if (devices == 2 && threads == 1) {
    check_sincos();
    check_psum();
    if (!ok) return false;
    const bench_case cases[] = {{"sincos/pmap_d2_t1", sincos_pmap<sincos_f, &sincos_operands::x2>},
                                {"sincos/pmap_d2_t1_donated", sincos_pmap_donated<sincos_f, &sincos_operands::x2d>},
                                {"sincos_sum/pmap_d2_t1", sincos_pmap<sincos_sum_f, &sincos_operands::x2>},
                                {"psum2/kax", psum_kax},
                                {"psum2/kax_donated", psum_kax_donated},
                                {"psum2/omp", psum_omp},
                                {"psum2/omp_fresh", psum_omp_fresh},
                                {"psum2/threads", psum_threads}};
    run(cases);
  } else if (devices == 2 && threads == 2) {
    check_sincos();
    check_psum();
    if (!ok) return false;
    const bench_case cases[] = {{"sincos/pmap_d2_t2", sincos_pmap<sincos_f, &sincos_operands::x2>},
                                {"sincos_sum/pmap_d2_t2", sincos_pmap<sincos_sum_f, &sincos_operands::x2>},
                                {"psum2/kax_t2", psum_kax}};
    run(cases);
  } else if (devices == 4 && threads == 1) {
    check_psum();
    if (!ok) return false;
    const bench_case cases[] = {{"psum4/kax", psum_kax},
                                {"psum4/kax_donated", psum_kax_donated},
                                {"psum4/omp", psum_omp},
                                {"psum4/omp_fresh", psum_omp_fresh},
                                {"psum4/threads", psum_threads}};
    run(cases);
  } else {
    std::fprintf(stderr, "bench_pmap: no cases for %d host devices on %d threads (see the file comment)\n", devices,
                 threads);
    ok = false;
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  int status = 0;
  {
    if (!kax_bench::start_devices(argc, argv, "pmap", devices, threads)) return 1;
    if (!run_configuration()) {
      std::fprintf(stderr, "bench_pmap: a variant computes wrong values or the configuration is unknown\n");
      status = 2;
    }
    psum_data.reset();  // Views must go before Kokkos::finalize
    sincos_data.reset();
  }
  return status;
}
