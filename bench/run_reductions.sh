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
. "$(dirname "$0")/run_common.sh"
bench_run reductions
/usr/bin/python3 "$root/bench/plot_performance.py" \
  --doc "$root/docs/performance.md" --png "$root/docs/img/reductions.png" \
  "$results/reductions.json" "$results/reductions_1t.json"
