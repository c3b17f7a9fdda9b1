// bench/bench_gpu.cpp — kax on Kokkos' CUDA backend beside hand-written Kokkos kernels and cuBLAS,
// in the same binary.  Built when the Kokkos build has CUDA (meson -Dkokkos=cuda); run by
// scripts/gpu-check, which writes docs/performance.md's GPU numbers.
//
//   axpy      y = 2 x + z                          n = 2^28 float (3 GiB of traffic per call)
//   chain     y = (x * z + (x - z) * 0.5) * x      the same arrays, four fused operations
//   sum       s = sum(x)                           n = 2^28 float
//   rowsum    r = sum(X, axis 1)                   X (2^20, 256) float
//   seed      vmap(dot(x, w) + sin(x))(X, w)       X (2^20, 256), w (256,) float
//   matmul    C = A @ B                            4096^3 float (2 n^3 flop)
//
// Variants: kax (the library), kokkos (a hand-written Kokkos kernel: RangePolicy for elementwise,
// parallel_reduce for reductions, one team per row for the seed), cublas (cublasSgemm, matmul
// only).  Every kax result is checked against its baseline before timing.  Each iteration ends
// with Kokkos::fence(), so times are kernel completion, not launch.  Bytes are the minimum
// traffic (every input read once, every output written once); "GB/s" is that over the time.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kax/kax.hpp"

namespace {

constexpr std::size_t n = std::size_t{1} << 28;
constexpr std::size_t rows = std::size_t{1} << 20, cols = 256;
constexpr std::size_t mm = 4096;

using vec = kax::Array<float, 1>;
using mat = kax::Array<float, 2>;

struct operands {
  vec x = kax::empty<float>(n), z = kax::empty<float>(n), y = kax::empty<float>(n);
  kax::Array<float, 0> s = kax::empty<float>();
  mat X = kax::empty<float>(rows, cols), Y = kax::empty<float>(rows, cols);
  vec w = kax::empty<float>(cols), r = kax::empty<float>(rows);
  mat A = kax::empty<float>(mm, mm), B = kax::empty<float>(mm, mm), C = kax::empty<float>(mm, mm);
  cublasHandle_t handle{};

  operands() {
    // Inputs are made on the device by kax itself (no host initialization, no transfer).
    const auto i = kax::arange<float>(n);
    x = kax::sin(i * 1e-3f);
    z = kax::cos(i * 7e-4f) + 1.5f;
    const auto k = kax::reshape(kax::arange<float>(rows * cols), {long(rows), long(cols)});
    X = kax::sin(k * 3e-4f) * 4.0f;
    w = kax::cos(kax::arange<float>(cols) * 0.1f) * 0.4f;
    const auto m = kax::reshape(kax::arange<float>(mm * mm), {long(mm), long(mm)});
    A = kax::sin(m * 1e-3f) * 0.5f;
    B = kax::cos(m * 3e-3f) * 0.5f;
    Kokkos::fence();
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "bench_gpu: cublasCreate failed\n");
      std::exit(1);
    }
  }
  ~operands() { cublasDestroy(handle); }
};

std::unique_ptr<operands> data;
operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

void finish(benchmark::State& state, double bytes, double flop = 0) {
  const auto it = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(it * bytes));
  state.counters["GB/s"] = benchmark::Counter(it * bytes * 1e-9, benchmark::Counter::kIsRate);
  if (flop > 0) state.counters["TFLOP/s"] = benchmark::Counter(it * flop * 1e-12, benchmark::Counter::kIsRate);
}

// ---- elementwise -----------------------------------------------------------------------------
constexpr double axpy_bytes = 3.0 * sizeof(float) * n;

// The hand-written kernels: y[i] = Op{}(x[i], z[i]), one index per thread.
struct axpy_op {
  KOKKOS_INLINE_FUNCTION float operator()(float x, float z) const { return 2.0f * x + z; }
};
struct chain_op {
  KOKKOS_INLINE_FUNCTION float operator()(float x, float z) const { return (x * z + (x - z) * 0.5f) * x; }
};
template <class Op>
void elementwise_by_kokkos(const float* x, const float* z, float* y) {
  Kokkos::parallel_for(
      "elementwise", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, static_cast<std::int64_t>(n)),
      KOKKOS_LAMBDA(const std::int64_t i) { y[i] = Op{}(x[i], z[i]); });
}
template <class Op>
void elementwise_kokkos(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    elementwise_by_kokkos<Op>(o.x.data(), o.z.data(), o.y.data());
    Kokkos::fence();
  }
  finish(state, axpy_bytes);
}

void axpy_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.y = 2.0f * o.x + o.z;
    Kokkos::fence();
  }
  finish(state, axpy_bytes);
}
void chain_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.y = (o.x * o.z + (o.x - o.z) * 0.5f) * o.x;
    Kokkos::fence();
  }
  finish(state, axpy_bytes);
}

// ---- reductions ------------------------------------------------------------------------------
void sum_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.s = kax::sum(o.x);
    Kokkos::fence();
  }
  finish(state, sizeof(float) * double(n));
}
float sum_by_kokkos(const float* x) {
  float total = 0;
  Kokkos::parallel_reduce(
      "sum", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, static_cast<std::int64_t>(n)),
      KOKKOS_LAMBDA(const std::int64_t i, float& acc) { acc += x[i]; }, total);
  return total;
}
void sum_kokkos(benchmark::State& state) {
  auto& o = ops();
  float total = 0;
  for (auto _ : state) {
    total = sum_by_kokkos(o.x.data());  // the host result: parallel_reduce waits for it
    benchmark::DoNotOptimize(total);
  }
  finish(state, sizeof(float) * double(n));
}

constexpr double rowsum_bytes = sizeof(float) * double(rows) * (cols + 1);
void rowsum_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.r = kax::sum(o.X, 1);
    Kokkos::fence();
  }
  finish(state, rowsum_bytes);
}
using team_policy = Kokkos::TeamPolicy<>;
using member = team_policy::member_type;
void rowsum_by_kokkos(const float* X, float* r) {
  Kokkos::parallel_for(
      "rowsum", team_policy(static_cast<int>(rows), Kokkos::AUTO), KOKKOS_LAMBDA(const member& t) {
        const std::size_t b = static_cast<std::size_t>(t.league_rank());
        float acc = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, static_cast<int>(cols)),
            [&](const int d, float& a) { a += X[b * cols + static_cast<std::size_t>(d)]; }, acc);
        Kokkos::single(Kokkos::PerTeam(t), [&] { r[b] = acc; });
      });
}
void rowsum_kokkos(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    rowsum_by_kokkos(o.X.data(), o.r.data());
    Kokkos::fence();
  }
  finish(state, rowsum_bytes);
}

// ---- the seed: y[b] = dot(x[b], w) + sin(x[b]) -------------------------------------------------
constexpr auto seed_f = [](auto x, auto w) { return kax::dot(x, w) + kax::sin(x); };
constexpr double seed_bytes = 2.0 * sizeof(float) * double(rows) * cols;

void seed_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.Y = kax::vmap(seed_f, kax::in_axes(0, kax::none))(o.X, o.w);
    Kokkos::fence();
  }
  finish(state, seed_bytes);
}
// One team per row: the row's dot as a team reduction, then the row of y.
void seed_by_kokkos(const float* X, const float* w, float* Y) {
  Kokkos::parallel_for(
      "seed", team_policy(static_cast<int>(rows), Kokkos::AUTO), KOKKOS_LAMBDA(const member& t) {
        const std::size_t b = static_cast<std::size_t>(t.league_rank());
        const float* xb = X + b * cols;
        float dot = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, static_cast<int>(cols)), [&](const int d, float& a) { a += xb[d] * w[d]; }, dot);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, static_cast<int>(cols)),
                             [&](const int d) { Y[b * cols + static_cast<std::size_t>(d)] = dot + sinf(xb[d]); });
      });
}
void seed_kokkos(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    seed_by_kokkos(o.X.data(), o.w.data(), o.Y.data());
    Kokkos::fence();
  }
  finish(state, seed_bytes);
}

// ---- matmul 4096^3 ---------------------------------------------------------------------------
constexpr double mm_flop = 2.0 * double(mm) * mm * mm;
constexpr double mm_bytes = 3.0 * sizeof(float) * double(mm) * mm;

void matmul_kax(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.C = kax::matmul(o.A, o.B);
    Kokkos::fence();
  }
  finish(state, mm_bytes, mm_flop);
}
// Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first.
void matmul_by_cublas(operands& o) {
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(mm);
  cublasSgemm(o.handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, o.B.data(), m, o.A.data(), m, &zero, o.C.data(), m);
}
void matmul_cublas(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    matmul_by_cublas(o);
    cudaDeviceSynchronize();
  }
  finish(state, mm_bytes, mm_flop);
}

// ---- checks: every kax variant against its baseline, before any timing ----------------------------
template <class T, std::size_t R>
double max_rel_diff(const kax::Array<T, R>& a, const kax::Array<T, R>& b) {
  const auto ha = kax::to_vector(a);
  const auto hb = kax::to_vector(b);
  double worst = 0;
  for (std::size_t i = 0; i < ha.size(); ++i) {
    const double d = std::abs(double(ha[i]) - double(hb[i])) / (1.0 + std::abs(double(hb[i])));
    if (!(d <= worst)) worst = d;  // NaN counts
  }
  return worst;
}

bool check(const char* what, double diff, double tol) {
  std::printf("check %-8s max relative difference %.3g (tolerance %.1g) %s\n", what, diff, tol,
              diff <= tol ? "ok" : "WRONG");
  return diff <= tol;
}

bool check_all() {
  auto& o = ops();
  bool ok = true;
  o.y = 2.0f * o.x + o.z;
  vec ref = kax::empty<float>(n);
  elementwise_by_kokkos<axpy_op>(o.x.data(), o.z.data(), ref.data());
  Kokkos::fence();
  ok = check("axpy", max_rel_diff(o.y, ref), 0) && ok;
  o.y = (o.x * o.z + (o.x - o.z) * 0.5f) * o.x;
  elementwise_by_kokkos<chain_op>(o.x.data(), o.z.data(), ref.data());
  Kokkos::fence();
  ok = check("chain", max_rel_diff(o.y, ref), 1e-6) && ok;
  o.s = kax::sum(o.x);
  const double s_kax = kax::to_vector(o.s)[0], s_ref = sum_by_kokkos(o.x.data());
  ok = check("sum", std::abs(s_kax - s_ref) / (1.0 + std::abs(s_ref)), 1e-3) && ok;
  o.r = kax::sum(o.X, 1);
  vec r_ref = kax::empty<float>(rows);
  rowsum_by_kokkos(o.X.data(), r_ref.data());
  Kokkos::fence();
  ok = check("rowsum", max_rel_diff(o.r, r_ref), 1e-4) && ok;
  o.Y = kax::vmap(seed_f, kax::in_axes(0, kax::none))(o.X, o.w);
  mat Y_ref = kax::empty<float>(rows, cols);
  seed_by_kokkos(o.X.data(), o.w.data(), Y_ref.data());
  Kokkos::fence();
  ok = check("seed", max_rel_diff(o.Y, Y_ref), 1e-4) && ok;
  o.C = kax::matmul(o.A, o.B);
  mat C_ref = kax::empty<float>(mm, mm);
  std::swap(o.C, C_ref);
  matmul_by_cublas(o);
  std::swap(o.C, C_ref);
  cudaDeviceSynchronize();
  ok = check("matmul", max_rel_diff(o.C, C_ref), 1e-3) && ok;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);
  benchmark::AddCustomContext("kax_benchmark", "gpu");
  benchmark::AddCustomContext("kax_execution_space", Kokkos::DefaultExecutionSpace::name());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!check_all()) {
    data.reset();
    return 1;
  }
  const std::pair<const char*, void (*)(benchmark::State&)> cases[] = {
      {"axpy/kax", axpy_kax},         {"axpy/kokkos", elementwise_kokkos<axpy_op>},     {"chain/kax", chain_kax},
      {"chain/kokkos", elementwise_kokkos<chain_op>}, {"sum/kax", sum_kax},             {"sum/kokkos", sum_kokkos},
      {"rowsum/kax", rowsum_kax},     {"rowsum/kokkos", rowsum_kokkos}, {"seed/kax", seed_kax},
      {"seed/kokkos", seed_kokkos},   {"matmul/kax", matmul_kax},       {"matmul/cublas", matmul_cublas}};
  for (const auto& [name, fn] : cases)
    benchmark::RegisterBenchmark(name, fn)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  data.reset();  // before Kokkos finalizes
  return 0;
}
