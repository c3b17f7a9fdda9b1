// bench/bench_reductions.cpp — reductions, contractions and the planner: kax beside its baselines.
//
// Five cases, each written several ways in this one binary so that every ratio in
// docs/performance.md comes from one run on one machine state:
//   sum      s = Σ x                 2^25 doubles (8 B/element)
//   dot      s = Σ x*y               2^25 doubles each (16 B/element)
//   softmax  softmax(x, -1)          (4096, 1024) float (≥ 8 B/element: one read, one write)
//   matmul   c = a @ b               1024 x 1024 x 1024 float (2 n^3 flop)
//   seed     y = dot(x, w) + sin(x)  x (10000, 256) float, w (256, 1): (B, 1) broadcast to (B, D)
// Variants (the name after the slash; bench/plot_performance.py pairs them by that prefix):
//   kax*       kax into a preallocated kax::Array (`y = expr;`); dot has kax_sum and kax_dot
//   omp        hand-written `#pragma omp parallel for` (reduction(+:s) for sums)
//   omp_acc    the same with 16 independent accumulators per thread (sum, dot)
//   eigen      Eigen on Maps of the same memory; single-threaded except GEMM (OpenMP inside)
//   eigen_omp  Eigen's expression per thread chunk under `omp parallel` (not matmul)
// The thread count comes from Kokkos (--kokkos-threads); the OpenMP baselines use the same.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "kax/kax.hpp"
#include "kax/nn/softmax.hpp"
#include "seed_baselines.hpp"  // bench_mvec_sinf, Eigen typedefs, per_thread_chunk, seed baselines

// glibc's libmvec expf, aliased like bench_mvec_sinf (seed_baselines.hpp) so that `omp simd` calls
// _ZGVeN16v_expf (IEEE-correct to 4 ulp) without -ffast-math.
#pragma omp declare simd notinbranch
extern "C" float bench_mvec_expf(float) noexcept __asm__("expf");

namespace {

using namespace kax_bench;

constexpr std::size_t n_sum = std::size_t{1} << 25;
constexpr std::size_t sm_rows = 4096, sm_cols = 1024;
constexpr std::size_t mm = 1024;
constexpr int accumulators = 16;

using eigen_vec_map = Eigen::Map<const Eigen::ArrayXd>;

// Inputs and outputs shared by all variants, first-touched by the threads that use them.
struct operands {
  kax::Array<double, 1> x = kax::empty<double>(n_sum), y = kax::empty<double>(n_sum);
  kax::Array<double, 0> s = kax::sum(kax::zeros<double>(1));
  kax::Array<float, 2> sm_x = kax::empty<float>(sm_rows, sm_cols),
                       sm_y = kax::empty<float>(sm_rows, sm_cols);
  kax::Array<float, 2> ma = kax::empty<float>(mm, mm), mb = kax::empty<float>(mm, mm),
                       mc = kax::empty<float>(mm, mm);
  kax::Array<float, 2> sx = kax::empty<float>(seed_b, seed_d), sw = kax::empty<float>(seed_d, 1),
                       sy = kax::empty<float>(seed_b, seed_d);
  std::vector<float> srow = std::vector<float>(seed_b);  // the hand-written loops' s[b]
  operands() {
    double *px = x.data(), *py = y.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n_sum; ++i) {
      px[i] = 1.0 + static_cast<double>(i % 1000) / 1000.0;
      py[i] = 0.5 - static_cast<double>(i % 777) / 1554.0;
    }
    float *sx_ = sm_x.data(), *sy_ = sm_y.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < sm_rows * sm_cols; ++i) {
      sx_[i] = static_cast<float>(i % 1013) / 101.3f - 5.0f;  // [-5, 5): exp well in range
      sy_[i] = 0;
    }
    float *a = ma.data(), *b = mb.data(), *c = mc.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < mm * mm; ++i) {
      a[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
      b[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
      c[i] = 0;
    }
    float *qx = sx.data(), *qy = sy.data(), *qw = sw.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < seed_b * seed_d; ++i) {
      qx[i] = static_cast<float>(i % 997) / 997.0f * 8.0f - 4.0f;
      qy[i] = 0;
    }
    for (std::size_t d = 0; d < seed_d; ++d) qw[d] = static_cast<float>(d % 7) / 7.0f - 0.4f;
  }
};

std::unique_ptr<operands> data;

operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

// Bytes are the minimum traffic (each input read once, each output written once); items are
// elements (flops for matmul).  The report script recomputes rates from the best repetition.
void finish(benchmark::State& state, double bytes, double items, const void* out) {
  const auto it = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(it * bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(it * items));
  benchmark::DoNotOptimize(out);
  benchmark::ClobberMemory();
}

// ---- sum and dot over 2^25 doubles ---------------------------------------------------------------
double omp_sum(const double* __restrict x) {
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (std::size_t i = 0; i < n_sum; ++i) s += x[i];
  return s;
}
double omp_dot(const double* __restrict x, const double* __restrict y) {
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (std::size_t i = 0; i < n_sum; ++i) s += x[i] * y[i];
  return s;
}
// 16 partial sums per thread break the add latency chain (two zmm registers of doubles).
template <bool Dot>
double omp_acc(const double* __restrict x, const double* __restrict y) {
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    double acc[accumulators] = {};
    constexpr std::size_t blocks = n_sum / accumulators;
#pragma omp for schedule(static)
    for (std::size_t blk = 0; blk < blocks; ++blk) {
      const std::size_t i = blk * accumulators;
      for (int j = 0; j < accumulators; ++j) acc[j] += Dot ? x[i + j] * y[i + j] : x[i + j];
    }
    for (int j = 0; j < accumulators; ++j) total += acc[j];
  }
  return total;  // n_sum is a multiple of 16: no tail
}
template <bool Dot>
double eigen_omp_sum(const double* x, const double* y) {
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t lo = n_sum * t / nt;
    const auto len = static_cast<Eigen::Index>(n_sum * (t + 1) / nt - lo);
    const eigen_vec_map xx(x + lo, len);
    if constexpr (Dot) total += xx.matrix().dot(eigen_vec_map(y + lo, len).matrix());
    else total += xx.sum();
  }
  return total;
}

void sum_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.s = kax::sum(o.x);
  finish(state, 8.0 * n_sum, n_sum, o.s.data());
}
void sum_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) benchmark::DoNotOptimize(omp_sum(o.x.data()));
  finish(state, 8.0 * n_sum, n_sum, nullptr);
}
void sum_omp_acc(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) benchmark::DoNotOptimize(omp_acc<false>(o.x.data(), nullptr));
  finish(state, 8.0 * n_sum, n_sum, nullptr);
}
void sum_eigen(benchmark::State& state) {
  auto& o = ops();
  const eigen_vec_map x(o.x.data(), n_sum);
  for (auto _ : state) benchmark::DoNotOptimize(x.sum());
  finish(state, 8.0 * n_sum, n_sum, nullptr);
}
void sum_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) benchmark::DoNotOptimize(eigen_omp_sum<false>(o.x.data(), nullptr));
  finish(state, 8.0 * n_sum, n_sum, nullptr);
}

void dot_kax_sum(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.s = kax::sum(o.x * o.y);
  finish(state, 16.0 * n_sum, n_sum, o.s.data());
}
void dot_kax_dot(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.s = kax::dot(o.x, o.y);
  finish(state, 16.0 * n_sum, n_sum, o.s.data());
}
void dot_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) benchmark::DoNotOptimize(omp_dot(o.x.data(), o.y.data()));
  finish(state, 16.0 * n_sum, n_sum, nullptr);
}
void dot_omp_acc(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) benchmark::DoNotOptimize(omp_acc<true>(o.x.data(), o.y.data()));
  finish(state, 16.0 * n_sum, n_sum, nullptr);
}
void dot_eigen(benchmark::State& state) {
  auto& o = ops();
  const eigen_vec_map x(o.x.data(), n_sum), y(o.y.data(), n_sum);
  for (auto _ : state) benchmark::DoNotOptimize(x.matrix().dot(y.matrix()));
  finish(state, 16.0 * n_sum, n_sum, nullptr);
}
void dot_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) benchmark::DoNotOptimize(eigen_omp_sum<true>(o.x.data(), o.y.data()));
  finish(state, 16.0 * n_sum, n_sum, nullptr);
}

// ---- softmax over the last axis of (4096, 1024) float -------------------------------------------
constexpr double sm_bytes = 8.0 * sm_rows * sm_cols, sm_items = double(sm_rows) * sm_cols;

void softmax_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.sm_y = kax::nn::softmax(o.sm_x, -1);
  finish(state, sm_bytes, sm_items, o.sm_y.data());
}
void softmax_rows_omp(const float* __restrict x, float* __restrict y) {
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < sm_rows; ++r) {
    const float* __restrict xr = x + r * sm_cols;
    float* __restrict yr = y + r * sm_cols;
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (std::size_t c = 0; c < sm_cols; ++c) m = std::max(m, xr[c]);
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (std::size_t c = 0; c < sm_cols; ++c) {
      const float e = bench_mvec_expf(xr[c] - m);
      yr[c] = e;
      s += e;
    }
    const float inv = 1.0f / s;
#pragma omp simd
    for (std::size_t c = 0; c < sm_cols; ++c) yr[c] *= inv;
  }
}
void softmax_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) softmax_rows_omp(o.sm_x.data(), o.sm_y.data());
  finish(state, sm_bytes, sm_items, o.sm_y.data());
}
void softmax_eigen_rows(const float* x, float* y, std::size_t rows) {
  const auto r = static_cast<Eigen::Index>(rows), c = static_cast<Eigen::Index>(sm_cols);
  const eigen_rows_cmap xx(x, r, c);
  eigen_rows_map yy(y, r, c);
  const Eigen::ArrayXf m = xx.rowwise().maxCoeff();
  yy = (xx.colwise() - m).exp();
  const Eigen::ArrayXf s = yy.rowwise().sum();
  yy.colwise() /= s;
}
void softmax_eigen(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) softmax_eigen_rows(o.sm_x.data(), o.sm_y.data(), sm_rows);
  finish(state, sm_bytes, sm_items, o.sm_y.data());
}
void softmax_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  const float* x = o.sm_x.data();
  float* y = o.sm_y.data();
  for (auto _ : state)
    per_thread_chunk(sm_rows, [&](std::size_t lo, std::size_t len) {
      softmax_eigen_rows(x + lo * sm_cols, y + lo * sm_cols, len);
    });
  finish(state, sm_bytes, sm_items, y);
}

// ---- matmul 1024^3 float -------------------------------------------------------------------------
constexpr double mm_flop = 2.0 * mm * mm * mm;

void matmul_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.mc = kax::matmul(o.ma, o.mb);
  finish(state, 12.0 * mm * mm, mm_flop, o.mc.data());
  state.counters["GFLOP/s"] = benchmark::Counter(mm_flop * 1e-9 * double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
void matmul_eigen(benchmark::State& state) {
  auto& o = ops();
  const auto n = static_cast<Eigen::Index>(mm);
  const Eigen::Map<const eigen_mat_f> a(o.ma.data(), n, n), b(o.mb.data(), n, n);
  Eigen::Map<eigen_mat_f> c(o.mc.data(), n, n);
  for (auto _ : state) c.noalias() = a * b;
  finish(state, 12.0 * mm * mm, mm_flop, o.mc.data());
  state.counters["GFLOP/s"] = benchmark::Counter(mm_flop * 1e-9 * double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

// ---- seed: y = dot(x, w) + sin(x), x (B, D), w (D, 1) ------------------------------------------
constexpr double seed_bytes = 8.0 * seed_b * seed_d, seed_items = double(seed_b) * seed_d;

void seed_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.sy = kax::dot(o.sx, o.sw) + kax::sin(o.sx);
  finish(state, seed_bytes, seed_items, o.sy.data());
}
// seed/omp is seed_baselines.hpp's two-phase loop: all row dots, a barrier, then all rows of y.
void seed_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_loops_2phase(o.sx.data(), o.sw.data(), o.srow.data(), o.sy.data());
  finish(state, seed_bytes, seed_items, o.sy.data());
}
void seed_eigen(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_eigen_rows(o.sx.data(), o.sw.data(), o.srow.data(), o.sy.data(), seed_b);
  finish(state, seed_bytes, seed_items, o.sy.data());
}
void seed_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_eigen_rows_omp(o.sx.data(), o.sw.data(), o.srow.data(), o.sy.data());
  finish(state, seed_bytes, seed_items, o.sy.data());
}

// Every kax variant must compute the right thing before its speed means anything: compare with
// an independent scalar loop (long double / double accumulation).
bool check_all() {
  auto& o = ops();
  bool ok = true;
  auto report = [&](const char* name, double err, double tol) {
    std::fprintf(stderr, "check %s: max relative error %.3g (tolerance %.1g)\n", name, err, tol);
    if (!(err <= tol)) ok = false;
  };
  long double rs = 0, rd = 0;
  for (std::size_t i = 0; i < n_sum; ++i) {
    rs += o.x.data()[i];
    rd += static_cast<long double>(o.x.data()[i]) * o.y.data()[i];
  }
  auto rel = [](double v, long double ref) { return double(std::abs((v - ref) / ref)); };
  o.s = kax::sum(o.x);
  report("sum/kax", rel(o.s.data()[0], rs), 1e-12);
  o.s = kax::sum(o.x * o.y);
  report("dot/kax_sum", rel(o.s.data()[0], rd), 1e-10);
  o.s = kax::dot(o.x, o.y);
  report("dot/kax_dot", rel(o.s.data()[0], rd), 1e-10);
  report("sum/omp_acc", rel(omp_acc<false>(o.x.data(), nullptr), rs), 1e-12);

  o.sm_y = kax::nn::softmax(o.sm_x, -1);
  double worst = 0;
  for (std::size_t r = 0; r < sm_rows; r += 37) {
    const float* xr = o.sm_x.data() + r * sm_cols;
    double m = -INFINITY, s = 0;
    for (std::size_t c = 0; c < sm_cols; ++c) m = std::max(m, double(xr[c]));
    for (std::size_t c = 0; c < sm_cols; ++c) s += std::exp(double(xr[c]) - m);
    for (std::size_t c = 0; c < sm_cols; ++c) {
      const double ref = std::exp(double(xr[c]) - m) / s;
      worst = std::max(worst, std::abs(o.sm_y.data()[r * sm_cols + c] - ref) / ref);
    }
  }
  report("softmax/kax", worst, 1e-5);

  o.mc = kax::matmul(o.ma, o.mb);
  worst = 0;
  for (std::size_t i = 0; i < mm; i += 101)
    for (std::size_t j = 0; j < mm; j += 103) {
      double ref = 0, mag = 0;
      for (std::size_t k = 0; k < mm; ++k) {
        const double p = double(o.ma.data()[i * mm + k]) * o.mb.data()[k * mm + j];
        ref += p;
        mag += std::abs(p);
      }
      worst = std::max(worst, std::abs(o.mc.data()[i * mm + j] - ref) / mag);
    }
  report("matmul/kax (relative to sum |a_ik b_kj|)", worst, 1e-5);

  o.sy = kax::dot(o.sx, o.sw) + kax::sin(o.sx);
  worst = 0;
  for (std::size_t b = 0; b < seed_b; b += 13) {
    double s = 0;
    for (std::size_t d = 0; d < seed_d; ++d) s += double(o.sx.data()[b * seed_d + d]) * o.sw.data()[d];
    for (std::size_t d = 0; d < seed_d; ++d) {
      const double ref = s + std::sin(double(o.sx.data()[b * seed_d + d]));
      worst = std::max(worst, std::abs(o.sy.data()[b * seed_d + d] - ref) / std::max(1.0, std::abs(ref)));
    }
  }
  report("seed/kax", worst, 1e-5);
  seed_loops_2phase(o.sx.data(), o.sw.data(), o.srow.data(), o.sy.data());
  worst = 0;
  for (std::size_t i = 0; i < seed_b * seed_d; i += 7919) {
    const std::size_t b = i / seed_d;
    double s = 0;
    for (std::size_t d = 0; d < seed_d; ++d) s += double(o.sx.data()[b * seed_d + d]) * o.sw.data()[d];
    const double ref = s + std::sin(double(o.sx.data()[i]));
    worst = std::max(worst, std::abs(o.sy.data()[i] - ref) / std::max(1.0, std::abs(ref)));
  }
  report("seed/omp", worst, 1e-5);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  {
    if (!kax_bench::start(argc, argv, "reductions")) return 1;
    if (!check_all()) {
      std::fprintf(stderr, "bench_reductions: a variant computes wrong values\n");
      return 2;
    }
    const kax_bench::bench_case cases[] = {
        {"sum/kax", sum_kax},
        {"sum/omp", sum_omp},
        {"sum/omp_acc", sum_omp_acc},
        {"sum/eigen", sum_eigen},
        {"sum/eigen_omp", sum_eigen_omp},
        {"dot/kax_sum", dot_kax_sum},
        {"dot/kax_dot", dot_kax_dot},
        {"dot/omp", dot_omp},
        {"dot/omp_acc", dot_omp_acc},
        {"dot/eigen", dot_eigen},
        {"dot/eigen_omp", dot_eigen_omp},
        {"softmax/kax", softmax_kax},
        {"softmax/omp", softmax_omp},
        {"softmax/eigen", softmax_eigen},
        {"softmax/eigen_omp", softmax_eigen_omp},
        {"matmul/kax", matmul_kax},
        {"matmul/eigen", matmul_eigen},
        {"seed/kax", seed_kax},
        {"seed/omp", seed_omp},
        {"seed/eigen", seed_eigen},
        {"seed/eigen_omp", seed_eigen_omp},
    };
    kax_bench::run(cases);
    data.reset();  // Views must go before Kokkos::finalize
  }
  return 0;
}
