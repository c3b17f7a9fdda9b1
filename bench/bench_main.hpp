// bench/bench_main.hpp — what every kax benchmark's main() does around its own cases: the OpenMP
// baselines get Kokkos' thread count, the JSON context records it, and every case is registered
// with real time in ms and a "min" statistic beside the default aggregates.
#pragma once

#include <benchmark/benchmark.h>
#include <omp.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "kax/exec/host_tasks.hpp"
#include "kax/parallel/devices.hpp"

namespace kax_bench {

struct bench_case {
  const char* name;
  void (*fn)(benchmark::State&);
};

// After kax::ScopeGuard has taken the --kokkos-* flags: the raw OpenMP baselines use as many
// threads as Kokkos, the JSON context gets "kax_threads" (and "kax_benchmark" when `name` is
// given; the run scripts read both), Google Benchmark parses the rest of argv.  False when an
// argument is not recognized (reported already).
inline bool start(int& argc, char** argv, const char* name) {
  const int threads = Kokkos::DefaultExecutionSpace::concurrency();
  omp_set_num_threads(threads);
  if (name) benchmark::AddCustomContext("kax_benchmark", name);
  benchmark::AddCustomContext("kax_threads", std::to_string(threads));
  benchmark::Initialize(&argc, argv);
  return !benchmark::ReportUnrecognizedArguments(argc, argv);
}

// start(), for a benchmark of host devices: also this process's device count (KAX_HOST_DEVICES)
// and Kokkos' thread count, both fixed per process, recorded in the JSON context.
inline bool start_devices(int& argc, char** argv, const char* name, int& devices, int& threads) {
  if (!start(argc, argv, name)) return false;
  devices = kax::local_device_count();
  threads = Kokkos::DefaultExecutionSpace::concurrency();
  benchmark::AddCustomContext("kax_host_devices", std::to_string(devices));
  benchmark::AddCustomContext("kax_host_tasks", kax::exec::host_task_engine());
  return true;
}

// Registers the cases and runs those selected on the command line.  "min" is the best
// repetition, the least disturbed by other work on a shared 2-core box (the median comes with the
// default aggregates).
template <std::size_t N>
void run(const bench_case (&cases)[N]) {
  for (const auto& c : cases)
    benchmark::RegisterBenchmark(c.name, c.fn)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}

}  // namespace kax_bench
