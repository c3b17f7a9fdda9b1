#!/bin/sh
# Builds bench_vmap, runs it on 2 threads and then on 1 (Kokkos is initialized once per process,
# so one process per thread count) and prints the vmap section for docs/performance.md (Markdown
# between <!-- vmap:begin --> and <!-- vmap:end -->; paste it in, this script does not edit docs).
# About 1.5 minutes on the 2-core reference machine, most of it the per-row loop.
# The 2-thread run is the headline; the 1-thread run is a cross-check that other load on a shared
# machine distorts far less (no barriers).
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/vmap.json (2 threads), bench/results/vmap_1t.json; the section also
# goes to bench/results/vmap.md.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KAX_BUILD_DIR:-${BUILD:-$root/build}}
min_time=${KAX_BENCH_MIN_TIME:-0.2}
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" -Dbenchmarks=enabled
ninja -C "$build" bench/bench_vmap
results=$root/bench/results
mkdir -p "$results"
for t in 2 1; do
  out=$results/vmap.json
  [ "$t" = 2 ] || out=$results/vmap_${t}t.json
  echo "== bench_vmap, $t thread(s); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Unpinned (OMP_PROC_BIND=false): on a shared 2-core machine a pinned thread that loses its
  # core stalls every barrier; unpinned threads migrate to whichever core is free.
  OMP_NUM_THREADS=$t OMP_PROC_BIND=false \
    "$build/bench/bench_vmap" --kokkos-threads="$t" --kokkos-disable-warnings \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time" \
    --benchmark_out="$out" --benchmark_out_format=json
done
# Ratios are medians against medians (the brief of the vmap issue); the time table shows the best
# repetition with the median in parentheses, as the reductions section does.
/usr/bin/python3 - "$results/vmap.json" "$results/vmap_1t.json" <<'EOF' | tee "$results/vmap.md"
import json, os, sys
TO_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
CASES = {  # title, minimum bytes per run (each input read once, the output written once)
    "seed": ("`vmap(f, in_axes(0, none))(X, w)`, f = `dot(x, w) + sin(x)`, X (10000, 256), w (256,) float32",
             8 * 10000 * 256),
    "bmm": ("`vmap(matmul)(A, B)`, A, B (100000, 8, 8) float32", 12 * 100000 * 64),
}
VARIANTS = {
    "kax": "kax `y = vmap(f, ...)(args);` (vmap built in the loop)",
    "kax_expr": "kax, the batch written by hand without vmap",
    "rows_kax": "manual batching: kax evaluation of f per example",
    "omp": "hand-written `omp parallel for`, one pass per example",
    "omp_2phase": "hand-written, two phases (bench_reductions' seed loop)",
    "eigen": "Eigen on Maps (1 thread; bmm: fixed-size 8x8)",
    "eigen_omp": "Eigen under `omp parallel` (bmm: fixed-size 8x8)",
}
# (baseline families, minimum speed ratio kax / best of them)
TARGETS = {"seed": (("omp",), 0.9, "≥ 0.9× best hand-written, ≥ 10× per-row loop"),
           "bmm": (("omp", "eigen"), 0.9, "≥ 0.9× best hand-written or Eigen")}
runs = {}
for path in sys.argv[1:]:
    doc = json.load(open(path))
    res = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b["aggregate_name"] in ("min", "median"):
            case, var = b["run_name"].split("/")[:2]
            res.setdefault((case, var), {})[b["aggregate_name"]] = b["real_time"] * TO_S[b["time_unit"]]
    runs[int(doc["context"]["kax_threads"])] = (res, doc["context"])
fmt = lambda x: f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"
plural = lambda t: f"{t} thread{'s' if t > 1 else ''}"
threads = sorted(runs, reverse=True)
ctx = runs[threads[0]][1]
L = ["<!-- vmap:begin -->", "## vmap", "",
     f"Run {ctx.get('date', '')[:10]} on {os.cpu_count()} cores. One process per thread count (Kokkos "
     "and OpenMP, `OMP_PROC_BIND=false`); kernels warm. Each cell is the best of 5 repetitions "
     "(median in parentheses), in ms; the rate is the median's, counting the minimum traffic (every "
     "input read once, the output written once).", "",
     "| case | variant | " + " | ".join(f"{plural(t)} ms" for t in threads) + " | rate |",
     "|---|---|" + "---:|" * (len(threads) + 1)]
for case, (title, nbytes) in CASES.items():
    for var, name in VARIANTS.items():
        if (case, var) not in runs[threads[0]][0]:
            continue
        cells = [f"{fmt(r['min'] * 1e3)} ({fmt(r['median'] * 1e3)})" if r else "—"
                 for r in (runs[t][0].get((case, var)) for t in threads)]
        rate = nbytes / runs[threads[0]][0][(case, var)]["median"] / 1e9
        name = f"**{name}**" if var.startswith("kax") else name
        L.append(f"| {title} | {name} | " + " | ".join(cells) + f" | {fmt(rate)} GB/s ({plural(threads[0])}) |")
loads = ", ".join(f"{plural(t)}: {runs[t][1]['load_avg'][0]:.1f}" for t in threads if runs[t][1].get("load_avg"))
L += ["", f"Load average (1 min) when each process started — {loads}, on {os.cpu_count()} cores. "
      "Anything well above 0 means other work shared the cores: the numbers are pessimistic and noisy.",
      "", "Ratios are speed ratios, baseline time / kax time (> 1: kax is faster), median against "
      "median of the same process.", "",
      "| case | kax variant | threads | kax / best hand-written (which) | kax / best Eigen (which) "
      "| kax / per-row kax loop | target | met |", "|---|---|---:|---:|---:|---:|---|---|"]
for case in CASES:
    for var in VARIANTS:
        for t in threads:
            res = runs[t][0]
            if not var.startswith("kax") or (case, var) not in res:
                continue
            k = res[(case, var)]["median"]
            best = {}
            for fam in ("omp", "eigen", "rows"):
                c = [(v["median"], w) for (cc, w), v in res.items() if cc == case and w.startswith(fam)]
                best[fam] = min(c) if c else None
            ratio = {f: (b[0] / k if b else None) for f, b in best.items()}
            cell = lambda f: f"{ratio[f]:.2f} ({best[f][1]})" if best[f] else "—"
            fams, bar, text = TARGETS[case]
            # against the fastest baseline of the families: the smallest ratio
            got = min(ratio[f] for f in fams if ratio[f] is not None)
            ok = got >= bar and (case != "seed" or (ratio["rows"] or 0) >= 10)
            rows = f"{ratio['rows']:.1f}" if ratio["rows"] else "—"
            L.append(f"| {case} | {var} | {t} | {cell('omp')} | {cell('eigen')} | {rows} | {text} | "
                     f"{'yes' if ok else '**no**'} |")
L += ["", "<!-- vmap:end -->"]
print("\n".join(L))
EOF
