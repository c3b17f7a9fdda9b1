#!/bin/sh
# Builds bench_training, runs it on 2 threads and then on 1 (Kokkos is initialized once per
# process, so one process per thread count) and prints the training section for
# docs/performance.md (Markdown between <!-- training:begin --> and <!-- training:end -->; paste
# it in, this script does not edit docs).  About 1 minute on the 2-core reference machine.
# The 2-thread run is the headline; the 1-thread run is a cross-check that other load on a shared
# machine distorts far less (no barriers).
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/training.json (2 threads), bench/results/training_1t.json; the section
# also goes to bench/results/training.md.  The binary's stderr carries the correctness checks and
# a one-off split of a kax step's time (value_and_grad, sgd step, forward alone).
set -eu
. "$(dirname "$0")/run_common.sh"
bench_run training
# Ratios are medians against medians, as in the vmap section; the time table shows the best
# repetition with the median in parentheses.
/usr/bin/python3 - "$root/bench" "$results/training.json" "$results/training_1t.json" <<'EOF' | tee "$results/training.md"
import sys
sys.path.insert(0, sys.argv.pop(1))
from bench_report import fmt, load_paragraph, load_runs, plural, run_line, time_cells, time_header
STEP_FLOP = 8 * 2 * 256 * 512 * 512  # 3 forward GEMMs and 5 backward, 256x512x512 each
CASES = {  # title, flop per run (None: no rate)
    "step": ("one SGD step of a 3-layer MLP (gelu, MSE), batch 256, width 512, float32", STEP_FLOP),
    "per_example": ("per-example gradients, MLP 32 → 64 → 1 (gelu), batch 128, float32", None),
}
VARIANTS = {
    "kax": "kax `value_and_grad(loss)(params, x, y)` + `sgd.step(..., donate_argnums<1, 2>)`",
    "eigen": "Eigen by hand: preallocated buffers, noalias() GEMMs, manual backward",
    "vmap_grad": "kax `vmap(grad(loss_one), in_axes(none, 0, 0))(params, X, Y)`",
    "loop_grad": "kax `grad(loss_one)` per example, 128 calls",
}
# (kax variant, baseline variant, what the ratio means, minimum speed ratio baseline / kax)
RATIOS = [("step", "kax", "eigen", "kax step / hand-written Eigen step", 1.0),
          ("per_example", "vmap_grad", "loop_grad", "vmap(grad) / loop of grad", None)]
runs = load_runs(sys.argv[1:])
threads = sorted(runs, reverse=True)
L = ["<!-- training:begin -->", "## Training (grad + optimizer)", "",
     run_line(runs, threads) + " One process per thread count (Kokkos, OpenMP and Eigen's GEMM "
     "threads, `OMP_PROC_BIND=false`); kernels warm. Each cell is the best of 5 repetitions, "
     "interleaved at random with the other cases' (median in parentheses), in ms; the rate is "
     "the median's, counting the 8 GEMMs of a step.", "",
     *time_header(threads)]
for case, (title, flop) in CASES.items():
    for var, name in VARIANTS.items():
        if (case, var) not in runs[threads[0]][0]:
            continue
        cells = time_cells(runs, threads, (case, var))
        rate = f"{fmt(flop / runs[threads[0]][0][(case, var)]['median'] / 1e9)} GFLOP/s ({plural(threads[0])})" if flop else "—"
        name = f"**{name}**" if var in ("kax", "vmap_grad") else name
        L.append(f"| {title} | {name} | " + " | ".join(cells) + f" | {rate} |")
L += ["", load_paragraph(runs, threads),
      "", "Ratios are speed ratios, baseline time / kax time (> 1: kax is faster), median against "
      "median of the same process.", "",
      "| case | comparison | threads | ratio | target | met |", "|---|---|---:|---:|---|---|"]
for case, kvar, base, text, bar in RATIOS:
    for t in threads:
        res = runs[t][0]
        if (case, kvar) not in res or (case, base) not in res:
            continue
        r = res[(case, base)]["median"] / res[(case, kvar)]["median"]
        target = f"≥ {bar:.1f}×" if bar else "—"
        met = ("yes" if r >= bar else "**no**") if bar else "—"
        L.append(f"| {case} | {text} | {t} | {r:.2f}× | {target} | {met} |")
L += ["", "<!-- training:end -->"]
print("\n".join(L))
EOF
