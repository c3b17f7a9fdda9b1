// bench/bench_elementwise.cpp — fused elementwise kernels: kax beside the baselines it must beat.
//
// Three kernels on 2^24 doubles, each written five or six ways in this one binary so that every
// ratio in docs/performance.md comes from one run on one machine state:
//   copy   y = a                            (STREAM copy, 16 B/element)
//   triad  y = a + s*b                      (STREAM triad, 24 B/element)
//   fused  y = a*b + sin(c)*2 - d/e         (5 reads + 1 write, 48 B/element, one transcendental)
//   rows   y = a + expand_dims(r, 1)        (a, y seen as 2^20 rows of 16, r one value per row:
//                                            16.5 B/element; the strided kernel's cost per row)
//   bias   y = sin(a + v)                   (a, y seen as 2^14 rows of 1024, v (1024,) added to
//                                            every row as a bias is: 16 B/element; a broadcast
//                                            whose every operand walks the row)
// Variants:
//   kax          `y = expr;` into a preallocated kax::Array (one fused kernel, no temporary)
//   omp          `#pragma omp parallel for simd` over raw pointers, std::sin
//   omp_libmvec  the same loop calling glibc's vector sin (_ZGVeN8v_sin) — what a skilled engineer
//                writes on this machine without -ffast-math (fused, bias)
//   kokkos       Kokkos::parallel_for(RangePolicy) over Views, Kokkos::Experimental::sin
//   eigen        Eigen::ArrayXd expression, single-threaded (Eigen does not thread elementwise)
//   eigen_omp    Eigen's expression per thread chunk under `omp parallel` (fused, bias)
// Thread count comes from Kokkos (initialized once per process): bench/run_elementwise.sh runs
// the binary with --kokkos-num-threads=1 and =2 and OMP_NUM_THREADS to match.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "kax/kax.hpp"

// glibc's libmvec variant of sin.  glibc only declares it under __FAST_MATH__; a separate name
// with the same assembler symbol keeps std::sin scalar in the plain `omp` baseline while letting
// `omp simd` call _ZGVeN8v_sin here (IEEE-correct to 4 ulp, no -ffast-math needed).
#pragma omp declare simd notinbranch
extern "C" double bench_mvec_sin(double) noexcept __asm__("sin");

namespace {

constexpr std::size_t n = std::size_t{1} << 24;
constexpr double s = 3.0;
constexpr std::size_t row_len = 16, row_count = n / row_len;  // the rows kernel's shape
constexpr std::size_t bias_len = 1024, bias_rows = n / bias_len;  // the bias kernel's shape

using vec = kax::Array<double, 1>;
using eigen_map = Eigen::Map<Eigen::ArrayXd>;
using eigen_cmap = Eigen::Map<const Eigen::ArrayXd>;

// Inputs and output shared by all variants, first-touched by the threads that will use them.
struct operands {
  vec a = kax::empty<double>(n), b = kax::empty<double>(n), c = kax::empty<double>(n),
      d = kax::empty<double>(n), e = kax::empty<double>(n), y = kax::empty<double>(n);
  vec r = kax::empty<double>(row_count);
  operands() {
    double* pr = r.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < row_count; ++i) pr[i] = static_cast<double>(i % 17) / 17.0;
    double *pa = a.data(), *pb = b.data(), *pc = c.data(), *pd = d.data(), *pe = e.data(),
           *py = y.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      const double t = static_cast<double>(i % 1000) / 1000.0;
      pa[i] = 1.0 + t;
      pb[i] = 2.0 - t;
      pc[i] = (2.0 * t - 1.0) * 4.0 * std::numbers::pi;  // several periods of sin
      pd[i] = 0.5 + t;
      pe[i] = 1.5 + t;
      py[i] = 0.0;
    }
  }
};

std::unique_ptr<operands> data;

operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

// Every variant reports bytes moved (reads + writes, no write-allocate, as STREAM counts).
void finish(benchmark::State& state, std::size_t arrays) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(arrays * n * sizeof(double)));
  benchmark::DoNotOptimize(ops().y.data());
  benchmark::ClobberMemory();
}

// ---- copy --------------------------------------------------------------------------------------
void copy_kax(benchmark::State& state) {
  auto& o = ops();
  // `y = a` would rebind the handle (reference semantics); a leaf is an expression: one kernel.
  for (auto _ : state) o.y = o.a.as_leaf();
  finish(state, 2);
}
void copy_omp(benchmark::State& state) {
  auto& o = ops();
  double* __restrict y = o.y.data();
  const double* __restrict a = o.a.data();
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] = a[i];
  }
  finish(state, 2);
}
void copy_kokkos(benchmark::State& state) {
  auto& o = ops();
  const auto y = o.y.view();
  const auto a = o.a.view();
  for (auto _ : state) {
    Kokkos::parallel_for("bench::copy", Kokkos::RangePolicy<>(0, n),
                         KOKKOS_LAMBDA(const std::size_t i) { y(i) = a(i); });
    Kokkos::fence();
  }
  finish(state, 2);
}
void copy_eigen(benchmark::State& state) {
  auto& o = ops();
  eigen_map y(o.y.data(), n);
  const eigen_cmap a(o.a.data(), n);
  for (auto _ : state) y = a;
  finish(state, 2);
}

// ---- triad -------------------------------------------------------------------------------------
void triad_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.y = o.a + s * o.b;
  finish(state, 3);
}
void triad_omp(benchmark::State& state) {
  auto& o = ops();
  double* __restrict y = o.y.data();
  const double* __restrict a = o.a.data();
  const double* __restrict b = o.b.data();
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + s * b[i];
  }
  finish(state, 3);
}
void triad_kokkos(benchmark::State& state) {
  auto& o = ops();
  const auto y = o.y.view();
  const auto a = o.a.view();
  const auto b = o.b.view();
  for (auto _ : state) {
    Kokkos::parallel_for("bench::triad", Kokkos::RangePolicy<>(0, n),
                         KOKKOS_LAMBDA(const std::size_t i) { y(i) = a(i) + s * b(i); });
    Kokkos::fence();
  }
  finish(state, 3);
}
void triad_eigen(benchmark::State& state) {
  auto& o = ops();
  eigen_map y(o.y.data(), n);
  const eigen_cmap a(o.a.data(), n), b(o.b.data(), n);
  for (auto _ : state) y = a + s * b;
  finish(state, 3);
}

// ---- fused: y = a*b + sin(c)*2 - d/e -------------------------------------------------------------
void fused_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.y = o.a * o.b + kax::sin(o.c) * 2 - o.d / o.e;
  finish(state, 6);
}
void fused_omp(benchmark::State& state) {
  auto& o = ops();
  double* __restrict y = o.y.data();
  const double *__restrict a = o.a.data(), *__restrict b = o.b.data(), *__restrict c = o.c.data(),
               *__restrict d = o.d.data(), *__restrict e = o.e.data();
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] = a[i] * b[i] + std::sin(c[i]) * 2 - d[i] / e[i];
  }
  finish(state, 6);
}
void fused_omp_libmvec(benchmark::State& state) {
  auto& o = ops();
  double* __restrict y = o.y.data();
  const double *__restrict a = o.a.data(), *__restrict b = o.b.data(), *__restrict c = o.c.data(),
               *__restrict d = o.d.data(), *__restrict e = o.e.data();
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] = a[i] * b[i] + bench_mvec_sin(c[i]) * 2 - d[i] / e[i];
  }
  finish(state, 6);
}
void fused_kokkos(benchmark::State& state) {
  auto& o = ops();
  const auto y = o.y.view();
  const auto a = o.a.view(), b = o.b.view(), c = o.c.view(), d = o.d.view(), e = o.e.view();
  for (auto _ : state) {
    Kokkos::parallel_for(
        "bench::fused", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(const std::size_t i) {
          y(i) = a(i) * b(i) + Kokkos::Experimental::sin(c(i)) * 2 - d(i) / e(i);
        });
    Kokkos::fence();
  }
  finish(state, 6);
}
void fused_eigen(benchmark::State& state) {
  auto& o = ops();
  eigen_map y(o.y.data(), n);
  const eigen_cmap a(o.a.data(), n), b(o.b.data(), n), c(o.c.data(), n), d(o.d.data(), n),
      e(o.e.data(), n);
  for (auto _ : state) y = a * b + c.sin() * 2 - d / e;
  finish(state, 6);
}
void fused_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  double* y = o.y.data();
  const double *a = o.a.data(), *b = o.b.data(), *c = o.c.data(), *d = o.d.data(), *e = o.e.data();
  for (auto _ : state) {
#pragma omp parallel
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
      const std::size_t lo = n * t / nt, len = n * (t + 1) / nt - lo;
      eigen_map yy(y + lo, len);
      const eigen_cmap aa(a + lo, len), bb(b + lo, len), cc(c + lo, len), dd(d + lo, len),
          ee(e + lo, len);
      yy = aa * bb + cc.sin() * 2 - dd / ee;
    }
  }
  finish(state, 6);
}

// ---- rows: y[i, :] = a[i, :] + r[i], rows of 16 -------------------------------------------------
// Bytes: a and y (16 B/element) and r (0.5 B/element).
void finish_rows(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>((2 * n + row_count) * sizeof(double)));
  benchmark::DoNotOptimize(ops().y.data());
  benchmark::ClobberMemory();
}
void rows_kax(benchmark::State& state) {
  auto& o = ops();
  kax::ArrayView<double, 2> y(o.y.data(), {row_count, row_len});
  const kax::ArrayView<double, 2> a(o.a.data(), {row_count, row_len});
  for (auto _ : state) y = a + kax::expand_dims(o.r, 1);
  finish_rows(state);
}
void rows_omp(benchmark::State& state) {
  auto& o = ops();
  double* __restrict y = o.y.data();
  const double *__restrict a = o.a.data(), *__restrict r = o.r.data();
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < row_count; ++i) {
      const double ri = r[i];
#pragma omp simd
      for (std::size_t j = 0; j < row_len; ++j) y[i * row_len + j] = a[i * row_len + j] + ri;
    }
  }
  finish_rows(state);
}
void rows_eigen(benchmark::State& state) {
  auto& o = ops();
  using rows_t = Eigen::Array<double, Eigen::Dynamic, row_len, Eigen::RowMajor>;
  Eigen::Map<rows_t> y(o.y.data(), row_count, row_len);
  const Eigen::Map<const rows_t> a(o.a.data(), row_count, row_len);
  const eigen_cmap r(o.r.data(), row_count);
  for (auto _ : state) y = a.colwise() + r;
  finish_rows(state);
}

// ---- bias: y[i, :] = sin(a[i, :] + v), rows of 1024 ---------------------------------------------
// v is r's first 1024 values.  Bytes: a and y (16 B/element).
void bias_kax(benchmark::State& state) {
  auto& o = ops();
  kax::ArrayView<double, 2> y(o.y.data(), {bias_rows, bias_len});
  const kax::ArrayView<double, 2> a(o.a.data(), {bias_rows, bias_len});
  const kax::ArrayView<double, 1> v(o.r.data(), {bias_len});
  for (auto _ : state) y = kax::sin(a + v);
  finish(state, 2);
}
void bias_omp_libmvec(benchmark::State& state) {
  auto& o = ops();
  double* __restrict y = o.y.data();
  const double *__restrict a = o.a.data(), *__restrict v = o.r.data();
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < bias_rows; ++i) {
#pragma omp simd
      for (std::size_t j = 0; j < bias_len; ++j) y[i * bias_len + j] = bench_mvec_sin(a[i * bias_len + j] + v[j]);
    }
  }
  finish(state, 2);
}
void bias_eigen(benchmark::State& state) {
  auto& o = ops();
  using rows_t = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<rows_t> y(o.y.data(), Eigen::Index(bias_rows), Eigen::Index(bias_len));
  const Eigen::Map<const rows_t> a(o.a.data(), Eigen::Index(bias_rows), Eigen::Index(bias_len));
  const Eigen::Map<const Eigen::Array<double, 1, Eigen::Dynamic>> v(o.r.data(), bias_len);
  for (auto _ : state) y = (a.rowwise() + v).sin();
  finish(state, 2);
}
void bias_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  using rows_t = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Eigen::Array<double, 1, Eigen::Dynamic>> v(o.r.data(), bias_len);
  for (auto _ : state) {
#pragma omp parallel
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
      const std::size_t lo = bias_rows * t / nt, len = bias_rows * (t + 1) / nt - lo;
      Eigen::Map<rows_t> y(o.y.data() + lo * bias_len, Eigen::Index(len), Eigen::Index(bias_len));
      const Eigen::Map<const rows_t> a(o.a.data() + lo * bias_len, Eigen::Index(len), Eigen::Index(bias_len));
      y = (a.rowwise() + v).sin();
    }
  }
  finish(state, 2);
}

// The bias kernel against a scalar std::sin loop (a few ulp).
bool check_bias() {
  auto& o = ops();
  std::fill(o.y.data(), o.y.data() + n, 0.0);
  kax::ArrayView<double, 2> y(o.y.data(), {bias_rows, bias_len});
  y = kax::sin(kax::ArrayView<double, 2>(o.a.data(), {bias_rows, bias_len}) +
               kax::ArrayView<double, 1>(o.r.data(), {bias_len}));
  double worst = 0;
  for (std::size_t i = 0; i < bias_rows; i += 13)
    for (std::size_t j = 0; j < bias_len; ++j) {
      const double ref = std::sin(o.a.data()[i * bias_len + j] + o.r.data()[j]);
      worst = std::max(worst, std::abs(o.y.data()[i * bias_len + j] - ref));
    }
  std::fprintf(stderr, "check bias/kax: max abs error %.3g\n", worst);
  return worst < 1e-14;
}

// The rows kernel against a naive loop (exact: one addition per element).
bool check_rows() {
  auto& o = ops();
  std::fill(o.y.data(), o.y.data() + n, 0.0);
  kax::ArrayView<double, 2> y(o.y.data(), {row_count, row_len});
  y = kax::ArrayView<double, 2>(o.a.data(), {row_count, row_len}) + kax::expand_dims(o.r, 1);
  for (std::size_t i = 0; i < row_count; i += 31)
    for (std::size_t j = 0; j < row_len; ++j)
      if (o.y.data()[i * row_len + j] != o.a.data()[i * row_len + j] + o.r.data()[i]) {
        std::fprintf(stderr, "check rows/kax: wrong value at row %zu, column %zu\n", i, j);
        return false;
      }
  std::fprintf(stderr, "check rows/kax: exact\n");
  return true;
}

// The fused kernel must compute the right thing before its speed means anything; max relative
// error of each variant against a scalar std:: loop.
bool check_fused() {
  auto& o = ops();
  const double *a = o.a.data(), *b = o.b.data(), *c = o.c.data(), *d = o.d.data(), *e = o.e.data();
  bool ok = true;
  auto check = [&](const char* name) {
    double worst = 0;
    for (std::size_t i = 0; i < n; i += 97) {
      const double ref = a[i] * b[i] + std::sin(c[i]) * 2 - d[i] / e[i];
      const double err = std::abs(o.y.data()[i] - ref) / std::max(1.0, std::abs(ref));
      worst = std::max(worst, err);
    }
    std::fprintf(stderr, "check fused/%s: max relative error %.3g\n", name, worst);
    if (!(worst < 1e-13)) ok = false;
  };
  o.y = o.a * o.b + kax::sin(o.c) * 2 - o.d / o.e;
  check("kax");
  {
    double* __restrict y = o.y.data();
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) y[i] = a[i] * b[i] + bench_mvec_sin(c[i]) * 2 - d[i] / e[i];
  }
  check("omp_libmvec");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  {
    benchmark::AddCustomContext("kax_elements", std::to_string(n));
    if (!kax_bench::start(argc, argv, nullptr)) return 1;
    if (!check_fused() || !check_rows() || !check_bias()) {
      std::fprintf(stderr, "bench_elementwise: a variant computes wrong values\n");
      return 2;
    }
    const kax_bench::bench_case cases[] = {
        {"copy/kax", copy_kax},         {"copy/omp", copy_omp},
        {"copy/kokkos", copy_kokkos},   {"copy/eigen", copy_eigen},
        {"triad/kax", triad_kax},       {"triad/omp", triad_omp},
        {"triad/kokkos", triad_kokkos}, {"triad/eigen", triad_eigen},
        {"fused/kax", fused_kax},       {"fused/omp", fused_omp},
        {"fused/omp_libmvec", fused_omp_libmvec}, {"fused/kokkos", fused_kokkos},
        {"fused/eigen", fused_eigen},   {"fused/eigen_omp", fused_eigen_omp},
        {"rows/kax", rows_kax},         {"rows/omp", rows_omp},
        {"rows/eigen", rows_eigen},
        {"bias/kax", bias_kax},         {"bias/omp_libmvec", bias_omp_libmvec},
        {"bias/eigen", bias_eigen},     {"bias/eigen_omp", bias_eigen_omp},
    };
    kax_bench::run(cases);
    data.reset();  // Views must go before Kokkos::finalize
  }
  return 0;
}
