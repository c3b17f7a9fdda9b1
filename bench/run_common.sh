# bench/run_common.sh — sourced by bench/run_{reductions,vmap,random}.sh: builds one benchmark and
# runs it on 2 threads and then on 1 (Kokkos is initialized once per process, so one process per
# thread count), writing bench/results/NAME.json (2 threads) and NAME_1t.json.
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Sets root, build and results for the caller's report.

# bench_run NAME: bench/bench_NAME, both thread counts.
bench_run() {
  name=$1
  root=$(cd "$(dirname "$0")/.." && pwd)
  build=${KAX_BUILD_DIR:-${BUILD:-$root/build}}
  min_time=${KAX_BENCH_MIN_TIME:-0.2}
  [ -f "$build/build.ninja" ] || meson setup "$build" "$root" -Dbenchmarks=enabled
  ninja -C "$build" "bench/bench_$name"
  results=$root/bench/results
  mkdir -p "$results"
  for t in 2 1; do
    out=$results/$name.json
    [ "$t" = 2 ] || out=$results/${name}_${t}t.json
    echo "== bench_$name, $t thread(s); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    # Unpinned (OMP_PROC_BIND=false): on a shared 2-core machine a pinned thread that loses its
    # core stalls every barrier; unpinned threads migrate to whichever core is free.
    OMP_NUM_THREADS=$t OMP_PROC_BIND=false \
      "$build/bench/bench_$name" --kokkos-threads="$t" --kokkos-disable-warnings \
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_min_time="$min_time" \
      --benchmark_out="$out" --benchmark_out_format=json
  done
}
