#!/bin/sh
# Builds bench_vmap, runs it on 2 threads and then on 1 (Kokkos is initialized once per process,
# so one process per thread count) and prints the vmap section for docs/performance.md (Markdown
# between <!-- vmap:begin --> and <!-- vmap:end -->; paste it in, this script does not edit docs).
# About 2 minutes on the 2-core reference machine, most of it the per-row loop.
# The 2-thread run is the headline; the 1-thread run is a cross-check that other load on a shared
# machine distorts far less (no barriers).
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/vmap.json (2 threads), bench/results/vmap_1t.json; the section also
# goes to bench/results/vmap.md.
set -eu
. "$(dirname "$0")/run_common.sh"
bench_run vmap
# Ratios are medians against medians (the brief of the vmap issue); the time table shows the best
# repetition with the median in parentheses, as the reductions section does.
/usr/bin/python3 - "$root/bench" "$results/vmap.json" "$results/vmap_1t.json" <<'EOF' | tee "$results/vmap.md"
import sys
sys.path.insert(0, sys.argv.pop(1))
from bench_report import fmt, load_paragraph, load_runs, plural, run_line, time_cells, time_header
CASES = {  # title, minimum bytes per run (each input read once, the output written once)
    "seed": ("`vmap(f, in_axes(0, none))(X, w)`, f = `dot(x, w) + sin(x)`, X (10000, 256), w (256,) float32",
             8 * 10000 * 256),
    "norm": ("`vmap(x - mean(x))(X)`, X (10000, 256) float32", 8 * 10000 * 256),
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
# (baseline families, minimum speed ratio kax / best of them); norm has no target (it shows the
# row-fused plan, kax, against the staged one, kax_expr, and a one-pass hand-written loop)
TARGETS = {"seed": (("omp",), 0.9, "≥ 0.9× best hand-written, ≥ 10× per-row loop"),
           "norm": (("omp", "eigen"), None, "none (row-fused vs staged)"),
           "bmm": (("omp", "eigen"), 0.9, "≥ 0.9× best hand-written or Eigen")}
runs = load_runs(sys.argv[1:])
threads = sorted(runs, reverse=True)
L = ["<!-- vmap:begin -->", "## vmap", "",
     run_line(runs, threads) + " One process per thread count (Kokkos "
     "and OpenMP, `OMP_PROC_BIND=false`); kernels warm. Each cell is the best of 5 repetitions, "
     "interleaved at random with the other cases' (median in parentheses), in ms; the rate is "
     "the median's, counting the minimum traffic (every "
     "input read once, the output written once).", "",
     *time_header(threads)]
for case, (title, nbytes) in CASES.items():
    for var, name in VARIANTS.items():
        if (case, var) not in runs[threads[0]][0]:
            continue
        cells = time_cells(runs, threads, (case, var))
        rate = nbytes / runs[threads[0]][0][(case, var)]["median"] / 1e9
        name = f"**{name}**" if var.startswith("kax") else name
        L.append(f"| {title} | {name} | " + " | ".join(cells) + f" | {fmt(rate)} GB/s ({plural(threads[0])}) |")
L += ["", load_paragraph(runs, threads),
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
            ok = bar is not None and got >= bar and (case != "seed" or (ratio["rows"] or 0) >= 10)
            met = "—" if bar is None else "yes" if ok else "**no**"
            rows = f"{ratio['rows']:.1f}" if ratio["rows"] else "—"
            L.append(f"| {case} | {var} | {t} | {cell('omp')} | {cell('eigen')} | {rows} | {text} | {met} |")
L += ["", "<!-- vmap:end -->"]
print("\n".join(L))
EOF
