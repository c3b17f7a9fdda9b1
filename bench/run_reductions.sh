#!/bin/sh
# Builds bench_reductions, runs it on 2 threads and then on 1 (Kokkos is initialized once per
# process, so one process per thread count) and writes the reductions section of
# docs/performance.md and docs/img/reductions.png.  About 1 minute on the 2-core reference machine.
# The 2-thread run is the headline; the 1-thread run is a cross-check that other load on a shared
# machine distorts far less (no barriers).
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/reductions.json (2 threads), bench/results/reductions_1t.json.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KAX_BUILD_DIR:-${BUILD:-$root/build}}
min_time=${KAX_BENCH_MIN_TIME:-0.2}
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" -Dbenchmarks=enabled
ninja -C "$build" bench/bench_reductions
results=$root/bench/results
mkdir -p "$results"
for t in 2 1; do
  out=$results/reductions.json
  [ "$t" = 2 ] || out=$results/reductions_${t}t.json
  echo "== bench_reductions, $t thread(s); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Unpinned (OMP_PROC_BIND=false): on a shared 2-core machine a pinned thread that loses its
  # core stalls every barrier; unpinned threads migrate to whichever core is free.
  OMP_NUM_THREADS=$t OMP_PROC_BIND=false \
    "$build/bench/bench_reductions" --kokkos-threads="$t" --kokkos-disable-warnings \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time" \
    --benchmark_out="$out" --benchmark_out_format=json
done
/usr/bin/python3 "$root/bench/plot_performance.py" \
  --doc "$root/docs/performance.md" --png "$root/docs/img/reductions.png" \
  "$results/reductions.json" "$results/reductions_1t.json"
