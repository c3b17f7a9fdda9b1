// bench/bench_sharding.cpp — a row-sharded matmul with kax::shard_map over 1 and 2 host devices
// beside Eigen's GEMM on 1 and 2 threads.
//
//   C = shard_map(matmul, make_mesh({n}, {"x"}), in_specs(P("x", none), P()), out_specs(P("x", none)))(A, B)
//
// A, B float (2048, 2048): every device multiplies its (2048 / n, 2048) rows of A by all of B (one
// Eigen GEMM inside its program, exec/host_gemm.hpp) into its rows of C.  As in bench_pmap.cpp the
// host device count (KAX_HOST_DEVICES) and Kokkos' thread count are fixed per process, so
// bench/run_sharding.sh runs this binary once per configuration; the configuration is part of
// every name:
//   KAX_HOST_DEVICES=1, --kokkos-threads=1   matmul/{kax_d1_t1, kax_d1_t1_sharded, kax_d1_t1_jit, assign_t1,
//                                            eigen_t1}
//   KAX_HOST_DEVICES=1, --kokkos-threads=2   matmul/{kax_d1_t2, kax_d1_t2_sharded, assign_t2}
//   KAX_HOST_DEVICES=2, --kokkos-threads=1   matmul/{kax_d2_t1, kax_d2_t1_sharded, kax_d2_t1_jit, kax_d2_t1_nb2,
//                                            eigen_t1_d2, eigen_t2}
//   KAX_HOST_DEVICES=2, --kokkos-threads=2   matmul/{kax_d2_t2, kax_d2_t2_sharded}
// Variants:
//   kax_dD_tT          shard_map(f, mesh, ...)(A, B) with the global kax::Arrays (each device gets a
//                      zero-copy view of its rows of A and all of B); a new ShardedArray per call
//   kax_dD_tT_sharded  the same with ShardedArrays placed once before the timing loop
//                      (device_put(A, P("x", none)), device_put(B, P())), as a program that keeps
//                      its data sharded between calls
//   kax_dD_t1_jit      kax::jit(matmul, in_shardings(P("x", none), P()), out_shardings(P("x", none)))
//                      on the placed ShardedArrays: the whole-array function, partitioned by kax
//   kax_d2_t1_nb2      kax_d2_t1 while Eigen::setNbThreads(2) is in force (a program that also
//                      calls Eigen's GEMM on 2 threads itself): the count is global to Eigen
//   assign_tT          C = kax::matmul(A, B) into a preallocated Array, no shard_map
//   eigen_tT           Eigen: c.noalias() = a * b, MatrixXf, preallocated c, Eigen::setNbThreads(T)
//                      (eigen_t1_d2: eigen_t1 again in the 2-device process, beside kax_d2)
// Before timing, every process prints how many OpenMP threads the devices' GEMMs use: what each
// device program sees (omp_get_max_threads, Eigen::nbThreads, Kokkos::OpenMP::in_parallel) and how
// many OS threads the first GEMMs started (libgomp starts a team's threads on first use; TBB's
// workers are started by an earlier shard_map without a GEMM).  Every variant is checked against
// an independent double loop first (exit status 2); the operands are multiples of 1/8 in
// [-1, 1], so every product and partial sum is exact in float whatever the summation order.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "kax/kax.hpp"

namespace {

using namespace kax_bench;

constexpr std::size_t S = 2048;

int devices = 1;  // kax::local_device_count() of this process: the mesh size
int threads = 1;  // Kokkos' (and OpenMP's default) thread count

constexpr auto matmul_f = [](auto a, auto b) { return kax::matmul(a, b); };

float a_value(std::size_t i, std::size_t k) { return static_cast<float>(int((i * 7 + k * 3) % 17) - 8) / 8.0f; }
float b_value(std::size_t k, std::size_t j) { return static_cast<float>(int((k * 5 + j * 11) % 13) - 6) / 8.0f; }

auto sharded_matmul(const kax::Mesh& mesh) {
  return kax::shard_map(matmul_f, mesh, kax::in_specs(kax::P("x", kax::none), kax::P()),
                        kax::out_specs(kax::P("x", kax::none)));
}

auto sharded_jit(const kax::Mesh& mesh) {
  return kax::jit(matmul_f, kax::in_shardings(kax::NamedSharding(mesh, kax::P("x", kax::none)), kax::NamedSharding(mesh, kax::P())),
                  kax::out_shardings(kax::NamedSharding(mesh, kax::P("x", kax::none))));
}

struct operands {
  kax::Array<float, 2> a = kax::empty<float>(S, S), b = kax::empty<float>(S, S), c = kax::empty<float>(S, S);
  Eigen::MatrixXf ea{Eigen::Index(S), Eigen::Index(S)}, eb{Eigen::Index(S), Eigen::Index(S)},
      ec{Eigen::Index(S), Eigen::Index(S)};
  kax::Mesh mesh = kax::make_mesh({static_cast<std::size_t>(devices)}, {"x"});
  std::optional<kax::ShardedArray<float, 2>> as, bs;
  operands() {
    for (std::size_t i = 0; i < S; ++i)
      for (std::size_t j = 0; j < S; ++j) {
        a.data()[i * S + j] = ea(Eigen::Index(i), Eigen::Index(j)) = a_value(i, j);
        b.data()[i * S + j] = eb(Eigen::Index(i), Eigen::Index(j)) = b_value(i, j);
      }
    ec.setZero();
    as = kax::device_put(a, kax::NamedSharding(mesh, kax::P("x", kax::none)));
    bs = kax::device_put(b, kax::NamedSharding(mesh, kax::P()));
  }
};
std::unique_ptr<operands> data;
operands& ops() {
  if (!data) data = std::make_unique<operands>();
  return *data;
}

// Eigen's thread count for a scope: Eigen::setNbThreads is one global (0: back to
// omp_get_max_threads() of the calling thread).
struct eigen_threads {
  explicit eigen_threads(int n) { Eigen::setNbThreads(n); }
  ~eigen_threads() { Eigen::setNbThreads(0); }
};

// Items: multiply-adds.  The report recomputes GFLOP/s from the repetitions' times.
void finish(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * std::int64_t(S * S * S));
  benchmark::ClobberMemory();
}

void kax_global(benchmark::State& state) {
  auto& o = ops();
  const auto mm = sharded_matmul(o.mesh);
  for (auto _ : state) {
    kax::ShardedArray<float, 2> c = mm(o.a, o.b);
    benchmark::DoNotOptimize(c.blocks().front().data());
  }
  finish(state);
}
void kax_sharded(benchmark::State& state) {
  auto& o = ops();
  const auto mm = sharded_matmul(o.mesh);
  for (auto _ : state) {
    kax::ShardedArray<float, 2> c = mm(*o.as, *o.bs);
    benchmark::DoNotOptimize(c.blocks().front().data());
  }
  finish(state);
}
// kax::jit with the same shardings: the whole-array matmul, partitioned by kax (no communication
// for this layout); the difference to kax_sharded is jit's per-call tracing and rewrite.
void kax_jit(benchmark::State& state) {
  auto& o = ops();
  const auto mm = sharded_jit(o.mesh);
  for (auto _ : state) {
    kax::ShardedArray<float, 2> c = mm(*o.as, *o.bs);
    benchmark::DoNotOptimize(c.blocks().front().data());
  }
  finish(state);
}
void kax_global_nb2(benchmark::State& state) {
  const eigen_threads nb(2);
  kax_global(state);
}
void kax_assign(benchmark::State& state) {
  auto& o = ops();
  for (auto _ : state) {
    o.c = kax::matmul(o.a, o.b);
    benchmark::DoNotOptimize(o.c.data());
  }
  finish(state);
}
template <int T>
void eigen_gemm(benchmark::State& state) {
  auto& o = ops();
  const eigen_threads nb(T);
  for (auto _ : state) {
    o.ec.noalias() = o.ea * o.eb;
    benchmark::DoNotOptimize(o.ec.data());
  }
  finish(state);
}

// ---- checks ------------------------------------------------------------------------------------

bool ok = true;

// Every 97th row of C and the rows around the device boundary against a double loop; exact.
template <class At>
void check(const char* name, At&& at) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < S; i += 97) rows.push_back(i);
  for (std::size_t i : {S / 2 - 1, S / 2, S - 1}) rows.push_back(i);
  std::vector<double> bt(S * S);  // B transposed: the reference walks rows of both
  for (std::size_t k = 0; k < S; ++k)
    for (std::size_t j = 0; j < S; ++j) bt[j * S + k] = b_value(k, j);
  double worst = 0;
  for (std::size_t i : rows) {
    std::vector<double> ai(S);
    for (std::size_t k = 0; k < S; ++k) ai[k] = a_value(i, k);
    for (std::size_t j = 0; j < S; ++j) {
      double ref = 0;
      for (std::size_t k = 0; k < S; ++k) ref += ai[k] * bt[j * S + k];
      worst = std::max(worst, std::abs(double(at(i, j)) - ref));
    }
  }
  std::fprintf(stderr, "check %s: max abs error %g (tolerance 0)\n", name, worst);
  if (!(worst == 0)) ok = false;
}

void check_kax(const char* name, const kax::ShardedArray<float, 2>& c) {
  const auto h = kax::to_host(c);
  check(name, [&](std::size_t i, std::size_t j) { return h.data()[i * S + j]; });
}

int os_threads() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// What the devices' GEMMs run on: each device program reports what Eigen's parallelize_gemm reads
// on its thread, and the OS thread count tells how many OpenMP threads the GEMMs started.
std::string probe(const char* label) {
  auto& o = ops();
  std::mutex m;
  std::string seen;
  const auto before = os_threads();
  auto c = kax::shard_map(
      [&](auto a, auto b) {
        {
          const std::lock_guard<std::mutex> lock(m);
          seen += " [omp_get_max_threads " + std::to_string(omp_get_max_threads()) + ", Eigen::nbThreads " +
                  std::to_string(Eigen::nbThreads()) +
#if defined(KOKKOS_ENABLE_OPENMP)
                  ", in_parallel " + std::to_string(int(Kokkos::OpenMP::in_parallel())) +
#endif
                  "]";
        }
        return kax::matmul(a, b);
      },
      o.mesh, kax::in_specs(kax::P("x", kax::none), kax::P()), kax::out_specs(kax::P("x", kax::none)))(o.a, o.b);
  const auto after = os_threads();
  const std::string line = std::string(label) + ": devices" + seen + "; OS threads " + std::to_string(before) +
                           " -> " + std::to_string(after) + " (+" + std::to_string(after - before) + ")";
  std::fprintf(stderr, "gemm threads %s\n", line.c_str());
  check_kax(label, c);
  return line;
}

void check_all() {
  auto& o = ops();
  // TBB's workers first (a shard_map without a GEMM), so that the probe counts OpenMP threads only.
  (void)kax::shard_map([](auto a, auto) { return a + 1.0f; }, o.mesh, kax::in_specs(kax::P("x", kax::none), kax::P()),
                       kax::out_specs(kax::P("x", kax::none)))(o.a, o.b);
  std::string lines = probe("default");
  if (devices == 2 && threads == 1) {
    const eigen_threads nb(2);
    lines += " | " + probe("Eigen::setNbThreads(2)");
  }
  benchmark::AddCustomContext("kax_gemm_threads", lines);
  const auto mm = sharded_matmul(o.mesh);
  check_kax("kax sharded", mm(*o.as, *o.bs));
  check_kax("kax jit", sharded_jit(o.mesh)(*o.as, *o.bs));
  o.c = kax::matmul(o.a, o.b);
  check("assign", [&](std::size_t i, std::size_t j) { return o.c.data()[i * S + j]; });
  for (int t : {1, 2}) {
    const eigen_threads nb(t);
    o.ec.noalias() = o.ea * o.eb;
    check(t == 1 ? "eigen_t1" : "eigen_t2",
          [&](std::size_t i, std::size_t j) { return o.ec(Eigen::Index(i), Eigen::Index(j)); });
  }
}

// This configuration's cases; false (and a message) for one run_sharding.sh doesn't use.
bool run_configuration() {
  if (devices == 1 && threads == 1) {
    const bench_case cases[] = {{"matmul/kax_d1_t1", kax_global},
                                {"matmul/kax_d1_t1_sharded", kax_sharded},
                                {"matmul/kax_d1_t1_jit", kax_jit},
                                {"matmul/assign_t1", kax_assign},
                                {"matmul/eigen_t1", eigen_gemm<1>}};
    run(cases);
  } else if (devices == 1 && threads == 2) {
    const bench_case cases[] = {{"matmul/kax_d1_t2", kax_global},
                                {"matmul/kax_d1_t2_sharded", kax_sharded},
                                {"matmul/assign_t2", kax_assign}};
    run(cases);
  } else if (devices == 2 && threads == 1) {
    const bench_case cases[] = {{"matmul/kax_d2_t1", kax_global},
                                {"matmul/kax_d2_t1_sharded", kax_sharded},
                                {"matmul/kax_d2_t1_jit", kax_jit},
                                {"matmul/eigen_t2", eigen_gemm<2>},
                                {"matmul/eigen_t1_d2", eigen_gemm<1>},
                                {"matmul/kax_d2_t1_nb2", kax_global_nb2}};
    run(cases);
  } else if (devices == 2 && threads == 2) {
    const bench_case cases[] = {{"matmul/kax_d2_t2", kax_global}, {"matmul/kax_d2_t2_sharded", kax_sharded}};
    run(cases);
  } else {
    std::fprintf(stderr, "bench_sharding: no cases for %d host devices on %d threads (see the file comment)\n",
                 devices, threads);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kax::ScopeGuard guard(argc, argv);  // strips --kokkos-* flags before Google Benchmark sees argv
  int status = 0;
  {
    if (!kax_bench::start_devices(argc, argv, "sharding", devices, threads)) return 1;
    check_all();
    if (!ok || !run_configuration()) {
      std::fprintf(stderr, "bench_sharding: a variant computes wrong values or the configuration is unknown\n");
      status = 2;
    }
    data.reset();  // Views must go before Kokkos::finalize
  }
  return status;
}
