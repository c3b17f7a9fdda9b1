#!/bin/sh
# Builds bench_random, runs it on 2 threads and then on 1 (Kokkos is initialized once per process,
# so one process per thread count) and prints the random section for docs/performance.md (Markdown
# between <!-- random:begin --> and <!-- random:end -->; paste it in, this script does not edit docs).
# About 1.5 minutes on the 2-core reference machine.
# The 2-thread run is the headline; the 1-thread run is a cross-check that other load on a shared
# machine distorts far less (no barriers).
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/random.json (2 threads), bench/results/random_1t.json; the section also
# goes to bench/results/random.md.
set -eu
. "$(dirname "$0")/run_common.sh"
bench_run random
# Ratios are medians against medians (as in the vmap section); the time table shows the best
# repetition with the median in parentheses.
/usr/bin/python3 - "$root/bench" "$results/random.json" "$results/random_1t.json" <<'EOF' | tee "$results/random.md"
import sys
sys.path.insert(0, sys.argv.pop(1))
from bench_report import fmt, load_paragraph, load_runs, plural, run_line, time_cells, time_header
N = 1 << 25
CASES = {  # title, the sampler as the variants call it
    "normal": ("`sum(normal(k, n) * a)`, a = 0.5f, n = 2^25 float32", "normal"),
    "uniform": ("`sum(uniform(k, n) * a)`, a = 0.5f, n = 2^25 float32", "uniform"),
    "normal_dot": ("`sum(normal(k, n) * a)`, a (2^25,) float32", "normal"),
}
VARIANTS = {
    "kax": "kax, fused: `s = sum({f}(k, {{n}}) * a);`",
    "kax_materialize": "kax, materialized: `z = {f}(k, {{n}}); s = sum(z * a);`",
    "omp": "hand-written threefry{erf}, `omp parallel for` + `omp simd`, 64 accumulators",
}
# The issue's targets (speed ratios, baseline time / fused kax time), applied to every case;
# "normal" is the headline.
TARGETS = {"kax_materialize": 1.5, "omp": 0.9}
runs = load_runs(sys.argv[1:])
threads = sorted(runs, reverse=True)
L = ["<!-- random:begin -->", "## random", "",
     run_line(runs, threads) + " One process per thread count (Kokkos "
     "and OpenMP, `OMP_PROC_BIND=false`); kernels warm; key = `kax::random::key(42)`. Each cell is the "
     "best of 5 repetitions, interleaved at random with the other cases' (median in "
     "parentheses), in ms; the rate is the median's, in samples "
     "generated per second. The hand-written baseline is its own scalar threefry2x32-20 and XLA's "
     "float erfinv (log1pf from glibc's libmvec) in an `omp simd` loop, checked at startup to give "
     "kax's values to 2 ulp.", "",
     *time_header(threads)]
for case, (title, f) in CASES.items():
    for var, name in VARIANTS.items():
        if (case, var) not in runs[threads[0]][0]:
            continue
        name = name.format(f=f, erf=" + erfinv" if f == "normal" else "")
        cells = time_cells(runs, threads, (case, var))
        rate = N / runs[threads[0]][0][(case, var)]["median"] / 1e9
        name = f"**{name}**" if var == "kax" else name
        L.append(f"| {title} | {name} | " + " | ".join(cells) + f" | {fmt(rate)} G samples/s ({plural(threads[0])}) |")
L += ["", load_paragraph(runs, threads),
      "", "Speed ratios, baseline time / fused kax time (> 1: kax is faster), median against median of "
      "the same process. Targets (the issue's): fused ≥ 1.5× the materializing version, ≥ 0.9× "
      "hand-written.", "",
      "| case | threads | fused kax / materialized kax | fused kax / hand-written | met |",
      "|---|---:|---:|---:|---|"]
for case in CASES:
    for t in threads:
        res = runs[t][0]
        if (case, "kax") not in res:
            continue
        k = res[(case, "kax")]["median"]
        cells, ok = [], True
        for var, bar in TARGETS.items():
            if (case, var) not in res:
                cells.append("—")
                continue
            r = res[(case, var)]["median"] / k
            ok = ok and r >= bar
            cells.append(f"{r:.2f}×" if r >= bar else f"**{r:.2f}×**")
        L.append(f"| {case} | {t} | " + " | ".join(cells) + f" | {'yes' if ok else '**no**'} |")
L += ["", "<!-- random:end -->"]
print("\n".join(L))
EOF
