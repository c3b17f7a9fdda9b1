# bench/run_common.sh — sourced by bench/run_{reductions,vmap,random,pmap}.sh: builds one
# benchmark and runs it once per configuration (Kokkos is initialized once per process, and the
# host device count is frozen on first use, so one process per thread count / device count).
#   bench_run NAME          2 threads, then 1: bench/results/NAME.json (2 threads), NAME_1t.json
#   bench_run_devices NAME D:T ...
#                           one process per (KAX_HOST_DEVICES=D, T threads) configuration:
#                           bench/results/NAME_dD_tT.json (the caller merges them)
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Sets root, build and results for the caller's report.

# bench_build NAME: sets root, build, min_time and results; builds bench/bench_NAME.
bench_build() {
  name=$1
  root=$(cd "$(dirname "$0")/.." && pwd)
  build=${KAX_BUILD_DIR:-${BUILD:-$root/build}}
  min_time=${KAX_BENCH_MIN_TIME:-0.2}
  [ -f "$build/build.ninja" ] || meson setup "$build" "$root" -Dbenchmarks=enabled
  ninja -C "$build" "bench/bench_$name"
  results=$root/bench/results
  mkdir -p "$results"
}

# bench_process NAME THREADS OUT [VAR=VALUE ...]: one process of bench/bench_NAME on THREADS
# threads (Kokkos and OpenMP), 5 repetitions, JSON into OUT; the VAR=VALUE pairs go into its
# environment.
bench_process() {
  name=$1 t=$2 out=$3
  shift 3
  # Unpinned (OMP_PROC_BIND=false): on a shared 2-core machine a pinned thread that loses its
  # core stalls every barrier; unpinned threads migrate to whichever core is free.
  # Random interleaving runs the repetitions of all cases in one shuffled order: this VM's speed
  # drifts by up to 1.5x from minute to minute.  Timed in blocks, three runs of one build put the
  # training ratio at 0.91x, 1.13x and 1.13x; interleaved, three runs of a build agreed within 2%
  # (docs/performance.md, "Measuring it").
  env "$@" OMP_NUM_THREADS="$t" OMP_PROC_BIND=false \
    "$build/bench/bench_$name" --kokkos-threads="$t" --kokkos-disable-warnings \
    --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time" \
    --benchmark_out="$out" --benchmark_out_format=json
}

# bench_run NAME: bench/bench_NAME, both thread counts.
bench_run() {
  bench_build "$1"
  for t in 2 1; do
    out=$results/$name.json
    [ "$t" = 2 ] || out=$results/${name}_${t}t.json
    echo "== bench_$name, $t thread(s); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    bench_process "$name" "$t" "$out"
  done
}

# bench_run_devices NAME D:T ...: bench/bench_NAME once per configuration, D host devices
# (KAX_HOST_DEVICES) and T threads.
bench_run_devices() {
  bench_build "$1"
  shift
  for config in "$@"; do
    d=${config%:*} t=${config#*:}
    echo "== bench_$name, $d host device(s), $t thread(s); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    bench_process "$name" "$t" "$results/${name}_d${d}_t${t}.json" KAX_HOST_DEVICES="$d"
  done
}

# bench_device_files NAME D:T ...: the JSON files bench_run_devices NAME D:T ... wrote.
bench_device_files() {
  n=$1
  shift
  for config in "$@"; do printf '%s ' "$results/${n}_d${config%:*}_t${config#*:}.json"; done
}
