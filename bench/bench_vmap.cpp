// bench/bench_vmap.cpp — kax::vmap beside manual batching, hand-written OpenMP and Eigen.
//
// Two cases, each written several ways in this one binary so that every ratio comes from one run
// on one machine state:
//   seed  vmap(f, in_axes(0, none))(X, w), f(x, w) = dot(x, w) + sin(x)
//         X (10000, 256) float, w (256,): the seed's process_batch_vmap (≥ 8 B/element)
//   norm  vmap(x - mean(x))(X) on the seed's X: one batched reduction, which the planner fuses
//         with its consumer block of batch rows by block (exec/batch_rows.hpp); kax_expr is the
//         staged plan of the same math, so kax / kax_expr compares the two plans
//   bmm   vmap(matmul)(A, B), A and B (100000, 8, 8) float: 100000 small matrix products
//         (12 B per output element: two inputs read, one output written)
// Variants (the name after the slash; the report pairs them by that prefix):
//   kax         the vmapped expression, built inside the timing loop (as users write it) and
//               assigned into a preallocated kax::Array (`y = expr;`)
//   kax_expr    the same batch written by hand as one kax expression (broadcasting / batched
//               matmul), no vmap: what vmap's rewrite should match
//   rows_kax    manual batching (seed only): f evaluated per row into row b of y, one kax
//               evaluation per example — the Python loop JAX users compare vmap against
//   omp         hand-written `#pragma omp parallel for` over the batch, one pass per example
//               (norm: the row's mean, then the row, while it is in cache)
//   omp_2phase  (seed) seed_baselines.hpp's two-phase loop (bench_reductions' seed/omp): all row
//               dots, then all rows of y
//   eigen       Eigen on Maps of the same memory, one thread (seed: matvec, then sin + add;
//               norm: rowwise mean, then the broadcast subtraction; bmm: fixed-size 8x8 maps)
//   eigen_omp   the same under `omp parallel` (seed: per thread chunk; bmm: `omp parallel for`)
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
#include "seed_baselines.hpp"  // bench_mvec_sinf, Eigen typedefs, per_thread_chunk, seed baselines

namespace {

using namespace kax_bench;

constexpr std::size_t bmm_n = 100000, bmm_k = 8;
constexpr std::size_t bmm_mat = bmm_k * bmm_k;
constexpr int lanes = 64;  // the hand-written dot's partial sums: four zmm registers of floats

using eigen_mat8 = Eigen::Matrix<float, 8, 8, Eigen::RowMajor>;

// One example of the seed's workload (the function users vmap).
constexpr auto seed_f = [](auto x, auto w) { return kax::dot(x, w) + kax::sin(x); };
constexpr auto bmm_f = [](auto a, auto b) { return kax::matmul(a, b); };
constexpr auto norm_f = [](auto x) { return x - kax::mean(x); };

// Inputs and outputs shared by all variants, first-touched by the threads that use them.
struct operands {
  kax::Array<float, 2> x = kax::empty<float>(seed_b, seed_d), y = kax::empty<float>(seed_b, seed_d);
  kax::Array<float, 1> w = kax::empty<float>(seed_d);
  std::vector<float> srow = std::vector<float>(seed_b);  // omp_2phase's s[b]
  kax::Array<float, 3> a = kax::empty<float>(bmm_n, bmm_k, bmm_k), b = kax::empty<float>(bmm_n, bmm_k, bmm_k),
                       c = kax::empty<float>(bmm_n, bmm_k, bmm_k);
  operands() {
    float *qx = x.data(), *qy = y.data(), *qw = w.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < seed_b * seed_d; ++i) {
      qx[i] = static_cast<float>(i % 997) / 997.0f * 8.0f - 4.0f;
      qy[i] = 0;
    }
    for (std::size_t d = 0; d < seed_d; ++d) qw[d] = static_cast<float>(d % 7) / 7.0f - 0.4f;
    float *pa = a.data(), *pb = b.data(), *pc = c.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < bmm_n * bmm_mat; ++i) {
      pa[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
      pb[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
      pc[i] = 0;
    }
  }
};

std::unique_ptr<operands> data;

operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

// Bytes are the minimum traffic (each input read once, each output written once); items are
// output elements.  The report recomputes rates from the repetitions' times.
void finish(benchmark::State& state, double bytes, double items, const void* out) {
  const auto it = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(it * bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(it * items));
  benchmark::DoNotOptimize(out);
  benchmark::ClobberMemory();
}

// ---- seed: y[b] = dot(x[b], w) + sin(x[b]) -------------------------------------------------------
constexpr double seed_bytes = 8.0 * seed_b * seed_d, seed_items = double(seed_b) * seed_d;

auto seed_vmap(const operands& o) { return kax::vmap(seed_f, kax::in_axes(0, kax::none))(o.x, o.w); }
// The same batch without vmap: the (B,) row dots broadcast against (B, D) as a column.
auto seed_expr(const operands& o) { return kax::expand_dims(kax::dot(o.x, o.w), 1) + kax::sin(o.x); }

void seed_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.y = kax::vmap(seed_f, kax::in_axes(0, kax::none))(o.x, o.w);
  finish(state, seed_bytes, seed_items, o.y.data());
}
void seed_kax_expr(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.y = seed_expr(o);
  finish(state, seed_bytes, seed_items, o.y.data());
}
// Manual batching: one kax evaluation of f per example, written into row b of y.
void seed_rows(const operands& o) {
  for (std::size_t b = 0; b < seed_b; ++b) {
    kax::ArrayView<float, 1> yb(o.y.data() + b * seed_d, {seed_d});
    yb = seed_f(kax::ArrayView<float, 1>(o.x.data() + b * seed_d, {seed_d}), o.w);
  }
}
void seed_rows_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_rows(o);
  finish(state, seed_bytes, seed_items, o.y.data());
}
// One pass per row: the dot with 64 partial sums (four independent add chains of zmm), then the
// row of y while x[b] is still in L1.
void seed_loops_omp(const float* __restrict x, const float* __restrict w, float* __restrict y) {
#pragma omp parallel for schedule(static)
  for (std::size_t b = 0; b < seed_b; ++b) {
    const float* __restrict xb = x + b * seed_d;
    float* __restrict yb = y + b * seed_d;
    float acc[lanes] = {};
    for (std::size_t d = 0; d < seed_d; d += lanes) {
#pragma omp simd
      for (int j = 0; j < lanes; ++j) acc[j] += xb[d + j] * w[d + j];
    }
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < lanes; ++j) s += acc[j];
#pragma omp simd
    for (std::size_t d = 0; d < seed_d; ++d) yb[d] = s + bench_mvec_sinf(xb[d]);
  }
}
void seed_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_loops_omp(o.x.data(), o.w.data(), o.y.data());
  finish(state, seed_bytes, seed_items, o.y.data());
}
// seed_baselines.hpp's seed_loops_2phase (bench_reductions' seed/omp): all row dots, a barrier,
// then all rows of y.
void seed_omp_2phase(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_loops_2phase(o.x.data(), o.w.data(), o.srow.data(), o.y.data());
  finish(state, seed_bytes, seed_items, o.y.data());
}
void seed_eigen(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_eigen_rows(o.x.data(), o.w.data(), o.srow.data(), o.y.data(), seed_b);
  finish(state, seed_bytes, seed_items, o.y.data());
}
void seed_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) seed_eigen_rows_omp(o.x.data(), o.w.data(), o.srow.data(), o.y.data());
  finish(state, seed_bytes, seed_items, o.y.data());
}

// ---- norm: y[b] = x[b] - mean(x[b]) -------------------------------------------------------------
auto norm_vmap(const operands& o) { return kax::vmap(norm_f)(o.x); }
auto norm_expr(const operands& o) { return o.x - kax::mean(o.x, -1, kax::keepdims); }

void norm_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.y = kax::vmap(norm_f)(o.x);
  finish(state, seed_bytes, seed_items, o.y.data());
}
void norm_kax_expr(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.y = norm_expr(o);
  finish(state, seed_bytes, seed_items, o.y.data());
}
void norm_loops_omp(const float* __restrict x, float* __restrict y) {
#pragma omp parallel for schedule(static)
  for (std::size_t b = 0; b < seed_b; ++b) {
    const float* __restrict xb = x + b * seed_d;
    float* __restrict yb = y + b * seed_d;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (std::size_t d = 0; d < seed_d; ++d) s += xb[d];
    const float m = s / static_cast<float>(seed_d);
#pragma omp simd
    for (std::size_t d = 0; d < seed_d; ++d) yb[d] = xb[d] - m;
  }
}
void norm_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) norm_loops_omp(o.x.data(), o.y.data());
  finish(state, seed_bytes, seed_items, o.y.data());
}
void norm_eigen_rows(const float* x, float* y) {
  const Eigen::Map<const eigen_rows_f> X(x, seed_b, seed_d);
  eigen_rows_map Y(y, seed_b, seed_d);
  Y = X.colwise() - X.rowwise().mean();
}
void norm_eigen(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) norm_eigen_rows(o.x.data(), o.y.data());
  finish(state, seed_bytes, seed_items, o.y.data());
}

// ---- bmm: c[n] = a[n] @ b[n], 8x8 float ----------------------------------------------------------
constexpr double bmm_bytes = 12.0 * bmm_n * bmm_mat, bmm_items = double(bmm_n) * bmm_mat;

auto bmm_vmap(const operands& o) { return kax::vmap(bmm_f)(o.a, o.b); }

void bmm_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.c = kax::vmap(bmm_f)(o.a, o.b);
  finish(state, bmm_bytes, bmm_items, o.c.data());
}
void bmm_kax_expr(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) o.c = kax::matmul(o.a, o.b);  // NumPy's batched matmul, no vmap
  finish(state, bmm_bytes, bmm_items, o.c.data());
}
// c_ij = Σ_k a_ik b_kj as row updates: c[i, :] += a_ik * b[k, :], one ymm of 8 floats per row.
void bmm_loops_omp(const float* __restrict a, const float* __restrict b, float* __restrict c) {
#pragma omp parallel for schedule(static)
  for (std::size_t n = 0; n < bmm_n; ++n) {
    const float* __restrict an = a + n * bmm_mat;
    const float* __restrict bn = b + n * bmm_mat;
    float* __restrict cn = c + n * bmm_mat;
    for (std::size_t i = 0; i < bmm_k; ++i) {
      float row[bmm_k] = {};
      for (std::size_t k = 0; k < bmm_k; ++k) {
        const float aik = an[i * bmm_k + k];
#pragma omp simd
        for (std::size_t j = 0; j < bmm_k; ++j) row[j] += aik * bn[k * bmm_k + j];
      }
#pragma omp simd
      for (std::size_t j = 0; j < bmm_k; ++j) cn[i * bmm_k + j] = row[j];
    }
  }
}
void bmm_omp(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) bmm_loops_omp(o.a.data(), o.b.data(), o.c.data());
  finish(state, bmm_bytes, bmm_items, o.c.data());
}
inline void bmm_eigen_one(const float* a, const float* b, float* c, std::size_t n) {
  Eigen::Map<eigen_mat8>(c + n * bmm_mat).noalias() =
      Eigen::Map<const eigen_mat8>(a + n * bmm_mat) * Eigen::Map<const eigen_mat8>(b + n * bmm_mat);
}
void bmm_eigen(benchmark::State& state) {
  auto& o = ops();
  const float *a = o.a.data(), *b = o.b.data();
  float* c = o.c.data();
  for (auto _ : state)
    for (std::size_t n = 0; n < bmm_n; ++n) bmm_eigen_one(a, b, c, n);
  finish(state, bmm_bytes, bmm_items, c);
}
void bmm_eigen_omp(benchmark::State& state) {
  auto& o = ops();
  const float *a = o.a.data(), *b = o.b.data();
  float* c = o.c.data();
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < bmm_n; ++n) bmm_eigen_one(a, b, c, n);
  }
  finish(state, bmm_bytes, bmm_items, c);
}

// Every variant must compute the right thing before its speed means anything: compare with an
// independent scalar loop in double.
bool check_all() {
  auto& o = ops();
  bool ok = true;
  auto report = [&](const char* name, double err, double tol) {
    std::fprintf(stderr, "check %s: max relative error %.3g (tolerance %.1g)\n", name, err, tol);
    if (!(err <= tol)) ok = false;
  };
  // y against a double reference on every 13th row of x: ref(row, d) with row = x[b, :]; y is
  // zeroed afterwards, since the next variant must write every element.
  auto rows_err = [&](auto ref) {
    double worst = 0;
    for (std::size_t b = 0; b < seed_b; b += 13) {
      const float* row = o.x.data() + b * seed_d;
      const auto want = ref(row);
      for (std::size_t d = 0; d < seed_d; ++d)
        worst = std::max(worst, std::abs(o.y.data()[b * seed_d + d] - want(d)) / std::max(1.0, std::abs(want(d))));
    }
    std::fill_n(o.y.data(), seed_b * seed_d, 0.0f);
    return worst;
  };
  auto seed_err = [&] {
    return rows_err([&](const float* row) {
      double s = 0;
      for (std::size_t d = 0; d < seed_d; ++d) s += double(row[d]) * o.w.data()[d];
      return [row, s](std::size_t d) { return s + std::sin(double(row[d])); };
    });
  };
  o.y = seed_vmap(o);
  report("seed/kax", seed_err(), 1e-5);
  o.y = seed_expr(o);
  report("seed/kax_expr", seed_err(), 1e-5);
  seed_rows(o);
  report("seed/rows_kax", seed_err(), 1e-5);
  seed_loops_omp(o.x.data(), o.w.data(), o.y.data());
  report("seed/omp", seed_err(), 1e-5);
  seed_loops_2phase(o.x.data(), o.w.data(), o.srow.data(), o.y.data());
  report("seed/omp_2phase", seed_err(), 1e-5);
  seed_eigen_rows(o.x.data(), o.w.data(), o.srow.data(), o.y.data(), seed_b);
  report("seed/eigen", seed_err(), 1e-5);

  auto norm_err = [&] {
    return rows_err([](const float* row) {
      double s = 0;
      for (std::size_t d = 0; d < seed_d; ++d) s += row[d];
      return [row, m = s / seed_d](std::size_t d) { return row[d] - m; };
    });
  };
  o.y = norm_vmap(o);
  report("norm/kax", norm_err(), 1e-5);
  o.y = norm_expr(o);
  report("norm/kax_expr", norm_err(), 1e-5);
  norm_loops_omp(o.x.data(), o.y.data());
  report("norm/omp", norm_err(), 1e-5);
  norm_eigen_rows(o.x.data(), o.y.data());
  report("norm/eigen", norm_err(), 1e-5);

  auto bmm_err = [&] {
    double worst = 0;
    for (std::size_t n = 0; n < bmm_n; n += 97)
      for (std::size_t i = 0; i < bmm_k; ++i)
        for (std::size_t j = 0; j < bmm_k; ++j) {
          double ref = 0, mag = 0;
          for (std::size_t k = 0; k < bmm_k; ++k) {
            const double p = double(o.a.data()[n * bmm_mat + i * bmm_k + k]) * o.b.data()[n * bmm_mat + k * bmm_k + j];
            ref += p;
            mag += std::abs(p);
          }
          worst = std::max(worst, std::abs(o.c.data()[n * bmm_mat + i * bmm_k + j] - ref) / std::max(mag, 1e-30));
        }
    std::fill_n(o.c.data(), bmm_n * bmm_mat, 0.0f);
    return worst;
  };
  o.c = bmm_vmap(o);
  report("bmm/kax (relative to sum |a_ik b_kj|)", bmm_err(), 1e-6);
  o.c = kax::matmul(o.a, o.b);
  report("bmm/kax_expr", bmm_err(), 1e-6);
  bmm_loops_omp(o.a.data(), o.b.data(), o.c.data());
  report("bmm/omp", bmm_err(), 1e-6);
  for (std::size_t n = 0; n < bmm_n; ++n) bmm_eigen_one(o.a.data(), o.b.data(), o.c.data(), n);
  report("bmm/eigen", bmm_err(), 1e-6);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  {
    if (!kax_bench::start(argc, argv, "vmap")) return 1;
    // What each kax variant launches, once (kax::plan_of), so a slow variant can be read off.
    std::fprintf(stderr,
                 "plan seed/kax:\n%s\nplan seed/kax_expr:\n%s\nplan norm/kax:\n%s\nplan norm/kax_expr:\n%s\n"
                 "plan bmm/kax:\n%s\nplan bmm/kax_expr:\n%s\n",
                 kax::plan_of(seed_vmap(ops())).c_str(), kax::plan_of(seed_expr(ops())).c_str(),
                 kax::plan_of(norm_vmap(ops())).c_str(), kax::plan_of(norm_expr(ops())).c_str(),
                 kax::plan_of(bmm_vmap(ops())).c_str(), kax::plan_of(kax::matmul(ops().a, ops().b)).c_str());
    if (!check_all()) {
      std::fprintf(stderr, "bench_vmap: a variant computes wrong values\n");
      return 2;
    }
    const kax_bench::bench_case cases[] = {
        {"seed/kax", seed_kax},
        {"seed/kax_expr", seed_kax_expr},
        {"seed/rows_kax", seed_rows_kax},
        {"seed/omp", seed_omp},
        {"seed/omp_2phase", seed_omp_2phase},
        {"seed/eigen", seed_eigen},
        {"seed/eigen_omp", seed_eigen_omp},
        {"norm/kax", norm_kax},
        {"norm/kax_expr", norm_kax_expr},
        {"norm/omp", norm_omp},
        {"norm/eigen", norm_eigen},
        {"bmm/kax", bmm_kax},
        {"bmm/kax_expr", bmm_kax_expr},
        {"bmm/omp", bmm_omp},
        {"bmm/eigen", bmm_eigen},
        {"bmm/eigen_omp", bmm_eigen_omp},
    };
    kax_bench::run(cases);
    data.reset();  // Views must go before Kokkos::finalize
  }
  return 0;
}
