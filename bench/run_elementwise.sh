#!/bin/sh
# Builds bench_elementwise, runs it on 1 and 2 threads (Kokkos is initialized once per process, so
# one process per thread count) and writes the elementwise section of docs/performance.md and
# docs/img/elementwise.png.  About 1.5 minutes on the 2-core reference machine.
#   KAX_BUILD_DIR  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME  --benchmark_min_time per repetition in seconds (default 0.25)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KAX_BUILD_DIR:-$root/build}
min_time=${KAX_BENCH_MIN_TIME:-0.25}
[ -f "$build/build.ninja" ] || meson setup "$build" "$root"
ninja -C "$build" bench/bench_elementwise
results=$build/bench-results
mkdir -p "$results"
for t in 1 2; do
  echo "== bench_elementwise, $t thread(s)"
  # Pinning keeps each OpenMP thread on its own core (Kokkos also warns when it is unset).
  # Repetitions interleave at random across cases, as in run_common.sh (why: there).
  OMP_NUM_THREADS=$t OMP_PROC_BIND=true OMP_PLACES=cores \
    "$build/bench/bench_elementwise" --kokkos-threads="$t" --kokkos-disable-warnings \
    --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time" \
    --benchmark_out="$results/elementwise_${t}t.json" --benchmark_out_format=json
done
/usr/bin/python3 "$root/bench/plot_performance.py" \
  --doc "$root/docs/performance.md" --png "$root/docs/img/elementwise.png" \
  "$results/elementwise_1t.json" "$results/elementwise_2t.json"
