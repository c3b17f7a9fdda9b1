#!/usr/bin/python3
"""Turns Google Benchmark JSON from bench/ into a section of docs/performance.md and a bar chart.

  plot_performance.py --doc docs/performance.md --png docs/img/elementwise.png R1.json R2.json
      bench_elementwise, one JSON per process (one thread count, read from the kax_threads
      context): the section between <!-- elementwise:begin --> and <!-- elementwise:end -->.
  plot_performance.py --doc docs/performance.md --png docs/img/reductions.png R2.json [R1.json]
      bench_reductions (its JSON carries the context kax_benchmark=reductions), one JSON per
      process (thread count): the section between <!-- reductions:begin --> and
      <!-- reductions:end -->; the chart shows the run with the most threads.
Only the standard library is needed for the tables; matplotlib (python3-matplotlib) for the PNG.
"""
import argparse
import json
import os
import re
import sys

BEGIN = "<!-- elementwise:begin -->"
END = "<!-- elementwise:end -->"
# Bytes moved per element, as STREAM counts (reads + writes, no write-allocate).
BYTES_PER_ELEMENT = {"copy": 16, "triad": 24, "fused": 48, "rows": 16.5, "bias": 16}
KERNELS = {
    "copy": "`y = a`",
    "triad": "`y = a + s*b`",
    "fused": "`y = a*b + sin(c)*2 - d/e`",
    "rows": "`y = a + expand_dims(r, 1)`, rows of 16",
    "bias": "`y = sin(a + v)`, v added to rows of 1024",
}
VARIANTS = {
    "kax": "kax `y = expr;`",
    "omp": "hand-written `omp parallel for simd`",
    "omp_libmvec": "hand-written `omp parallel for simd`, libmvec sin",
    "kokkos": "raw Kokkos `parallel_for`",
    "eigen": "Eigen ArrayXd (always 1 thread)",
    "eigen_omp": "Eigen per thread chunk",
}
SINGLE_THREADED = {"eigen"}
TO_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(path):
    """{(kernel, variant): {"best": GB/s, "median": GB/s}}, threads, context."""
    with open(path) as f:
        doc = json.load(f)
    ctx = doc["context"]
    n = int(ctx["kax_elements"])
    threads = int(ctx["kax_threads"])
    out = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "aggregate" or b["aggregate_name"] not in ("min", "median"):
            continue
        kernel, variant = b["run_name"].split("/")[:2]
        seconds = b["real_time"] * TO_S[b["time_unit"]]
        gbs = BYTES_PER_ELEMENT[kernel] * n / seconds / 1e9
        key = "best" if b["aggregate_name"] == "min" else "median"
        out.setdefault((kernel, variant), {})[key] = gbs
    return out, threads, ctx


def cpu_description():
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    simd = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "SSE")
    return f"{os.cpu_count()}-core {model}, {simd}"


def fmt(x):
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def best_baseline(res, kernel, threads):
    """The fastest non-kax variant at `threads` (Eigen single-threaded counts at any thread count)."""
    cands = [(v["best"], var) for (k, var), v in res[threads].items() if k == kernel and var != "kax"]
    return max(cands)


def markdown(res, ctxs):
    ctx = ctxs[min(ctxs)]
    threads = sorted(res)
    lines = [BEGIN, "## Elementwise", ""]
    lines += [
        f"Machine: {cpu_description()}; run {ctx.get('date', '')[:10]}. "
        f"2^{int(ctx['kax_elements']).bit_length() - 1} doubles per array; GB/s counts reads + "
        f"writes (copy 16 B/element, triad 24, fused 48: five inputs, one output; rows 16.5: a and y "
        f"seen as 2^20 rows of 16, r one value per row, NumPy broadcasting; bias 16: a and y seen as "
        f"2^14 rows of 1024, v (1024,) added to every row). Each cell is the "
        f"best of 5 repetitions, interleaved at random with the other cases' (median in "
        f"parentheses); ratios use the best. The thread count is "
        f"the process's (Kokkos and OpenMP); Eigen runs on one thread in both processes.",
        "",
        "| kernel | variant | " + " | ".join(f"{t} thread{'s' if t > 1 else ''} GB/s" for t in threads) + " |",
        "|---|---|" + "---:|" * len(threads),
    ]
    for kernel in KERNELS:
        for var in VARIANTS:
            if (kernel, var) not in res[threads[0]]:
                continue
            cells = []
            for t in threads:
                r = res[t].get((kernel, var))
                cells.append(f"{fmt(r['best'])} ({fmt(r['median'])})" if r else "—")
            name = VARIANTS[var] + (", std::sin" if (kernel, var) == ("fused", "omp") else "")
            name = f"**{name}**" if var == "kax" else name
            lines.append(f"| {KERNELS[kernel]} | {name} | " + " | ".join(cells) + " |")
    loads = ", ".join(
        f"{t} thread{'s' if t > 1 else ''}: {ctxs[t]['load_avg'][0]:.1f}" for t in threads if ctxs[t].get("load_avg"))
    if loads:
        lines += ["", f"Load average (1 min) when each process started — {loads}. Anything well above 0 "
                  "means other work shared the two cores and the numbers are pessimistic and noisy."]
    lines += [
        "",
        "Ratios (> 1: kax is faster). Targets: kax ≥ 0.95× the hand-written loop; kax on 2 threads "
        "≥ 1.8× Eigen on 1 thread.",
        "",
        "| kernel | threads | kax / hand-written omp | kax / best baseline (which) |",
        "|---|---:|---:|---:|",
    ]
    for kernel in KERNELS:
        for t in threads:
            kax = res[t][(kernel, "kax")]["best"]
            hand = max(v["best"] for (k, var), v in res[t].items() if k == kernel and var.startswith("omp"))
            bb, which = best_baseline(res, kernel, t)
            lines.append(f"| {kernel} | {t} | {kax / hand:.2f} | {kax / bb:.2f} ({which}) |")
    # Eigen is single-threaded in every process; taking it from the 2-thread process keeps both
    # sides of the ratio in one run (same machine state), as for the other ratios.
    top = max(threads)
    if top >= 2:
        lines += ["", f"| kernel | kax on {top} threads / Eigen on 1 thread (same process) |", "|---|---:|"]
        for kernel in KERNELS:
            k2 = res[top][(kernel, "kax")]["best"]
            e1 = res[top][(kernel, "eigen")]["best"]
            lines.append(f"| {kernel} | {k2 / e1:.2f} |")
    lines += ["", "![elementwise GB/s](img/elementwise.png)", "", END]
    return "\n".join(lines)


def write_doc(path, section, begin=BEGIN, end=END):
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: section, text, flags=re.S)
    else:
        text = (text.rstrip() + "\n\n" if text else "# Performance\n\n") + section + "\n"
    with open(path, "w") as f:
        f.write(text)


def plot(res, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_performance.py: matplotlib missing, no PNG written", file=sys.stderr)
        return
    threads = sorted(res)
    fig, axes = plt.subplots(1, len(KERNELS), figsize=(16, 4))
    for ax, kernel in zip(axes, KERNELS):
        vars_ = [v for v in VARIANTS if (kernel, v) in res[threads[0]]]
        width = 0.8 / len(threads)
        for j, t in enumerate(threads):
            vals = [res[t].get((kernel, v), {}).get("best", 0) for v in vars_]
            xs = [i + (j - (len(threads) - 1) / 2) * width for i in range(len(vars_))]
            ax.bar(xs, vals, width, label=f"{t} thread{'s' if t > 1 else ''}")
        ax.set_xticks(range(len(vars_)))
        ax.set_xticklabels(vars_, rotation=30, ha="right")
        ax.set_title(f"{kernel}: " + KERNELS[kernel].replace("`", ""), fontsize=9)
        ax.set_ylabel("GB/s")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
    fig.savefig(png, dpi=110)



# ---- bench_reductions ----------------------------------------------------------------------------
RED_BEGIN = "<!-- reductions:begin -->"
RED_END = "<!-- reductions:end -->"
# Work per iteration, as bench_reductions.cpp defines it: minimum bytes moved (each input read
# once, each output written once) or, for matmul, flops.
RED_CASES = {
    "sum": ("`s = sum(x)`, 2^25 float64", "GB/s", 8 * 2**25),
    "dot": ("`s = x·y`, 2^25 float64", "GB/s", 16 * 2**25),
    "softmax": ("`softmax(x, -1)`, (4096, 1024) float32", "GB/s", 8 * 4096 * 1024),
    "matmul": ("`a @ b`, 1024³ float32", "GFLOP/s", 2 * 1024**3),
    "seed": ("`dot(x, w) + sin(x)`, x (10000, 256), w (256, 1) float32", "GB/s", 8 * 10000 * 256),
}
RED_VARIANTS = {
    "kax": "kax `y = expr;`",
    "kax_sum": "kax `s = kax::sum(x * y);`",
    "kax_dot": "kax `s = kax::dot(x, y);`",
    "omp": "hand-written `omp parallel for` (reduction)",
    "omp_acc": "hand-written, 16 accumulators per thread",
    "eigen": "Eigen on a Map (1 thread; GEMM: OpenMP)",
    "eigen_omp": "Eigen per thread chunk",
}
# (baseline family, minimum kax/baseline speed ratio) per case; None: reported only.
RED_TARGETS = {"sum": ("omp", 0.9), "dot": ("omp", 0.9), "softmax": None,
               "matmul": ("eigen", 0.8), "seed": ("omp", 0.9)}


def red_load(path):
    """{(case, variant): {"best": s, "median": s}}, context."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "aggregate" or b["aggregate_name"] not in ("min", "median"):
            continue
        case, variant = b["run_name"].split("/")[:2]
        key = "best" if b["aggregate_name"] == "min" else "median"
        out.setdefault((case, variant), {})[key] = b["real_time"] * TO_S[b["time_unit"]]
    return out, doc["context"]


def red_rate(case, seconds):
    return RED_CASES[case][2] / seconds / 1e9


def red_best(res, case, prefix):
    """(best time, variant) among the variants of `case` whose name starts with `prefix`."""
    c = [(v["best"], var) for (k, var), v in res.items() if k == case and var.startswith(prefix)]
    return min(c) if c else (None, None)


def red_markdown(runs, png_written):
    """runs: {threads: (res, ctx)}; the table has one time column per thread count."""
    threads = sorted(runs, reverse=True)
    ctx = runs[threads[0]][1]
    plural = lambda t: f"{t} thread{'s' if t > 1 else ''}"
    lines = [RED_BEGIN, "## Reductions, contractions, planner", ""]
    lines += [
        f"Machine: {cpu_description()}; run {ctx.get('date', '')[:10]}. One process per thread "
        "count (Kokkos and OpenMP, `OMP_PROC_BIND=false`); kernels warm (each case runs before it "
        "is timed). Each cell is the best of 5 repetitions, interleaved at random with the other "
        "cases' (median in parentheses), in ms; the rate "
        "is the best repetition's, counting the minimum traffic (every input read once, the output "
        "written once) or, for matmul, flops.",
        "",
        "| case | variant | " + " | ".join(f"{plural(t)} ms" for t in threads) + " | rate |",
        "|---|---|" + "---:|" * (len(threads) + 1),
    ]
    for case, (title, unit, _) in RED_CASES.items():
        for var in RED_VARIANTS:
            if (case, var) not in runs[threads[0]][0]:
                continue
            cells = []
            for t in threads:
                r = runs[t][0].get((case, var))
                cells.append(f"{fmt(r['best'] * 1e3)} ({fmt(r['median'] * 1e3)})" if r else "—")
            rate = fmt(red_rate(case, runs[threads[0]][0][(case, var)]["best"]))
            name = f"**{RED_VARIANTS[var]}**" if var.startswith("kax") else RED_VARIANTS[var]
            lines.append(f"| {title} | {name} | " + " | ".join(cells) +
                         f" | {rate} {unit} ({plural(threads[0])}) |")
    loads = ", ".join(f"{plural(t)}: {runs[t][1]['load_avg'][0]:.1f}" for t in threads
                      if runs[t][1].get("load_avg"))
    if loads:
        lines += ["", f"Load average (1 min) when each process started — {loads}, on "
                  f"{os.cpu_count()} cores. Anything well above 0 means other work shared the cores: "
                  "the numbers are pessimistic and noisy, multi-threaded ones (OpenMP barriers) most "
                  "of all."]
    lines += [
        "",
        "Ratios are speed ratios, baseline time / kax time (> 1: kax is faster), best repetition "
        "against best repetition of the same process.",
        "",
        "| case | kax variant | threads | kax / best hand-written (which) | kax / best Eigen (which) "
        "| target | met |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for case in RED_CASES:
        for var in RED_VARIANTS:
            for t in threads:
                res = runs[t][0]
                if not var.startswith("kax") or (case, var) not in res:
                    continue
                k = res[(case, var)]["best"]
                cells, ratios = [], {}
                for prefix in ("omp", "eigen"):
                    tb, which = red_best(res, case, prefix)
                    ratios[prefix] = tb / k if tb else None
                    cells.append(f"{tb / k:.2f} ({which})" if tb else "—")
                target = RED_TARGETS.get(case)
                if target:
                    fam, bar = target
                    got = ratios[fam]
                    tcell = f"≥ {bar}× best {'hand-written' if fam == 'omp' else 'Eigen'}"
                    met = "yes" if got is not None and got >= bar else "**no**"
                else:
                    tcell, met = "—", "—"
                lines.append(f"| {case} | {var} | {t} | {cells[0]} | {cells[1]} | {tcell} | {met} |")
    if png_written:
        lines += ["", f"![reductions: speed relative to kax, {plural(threads[0])}](img/reductions.png)"]
    lines += ["", RED_END]
    return "\n".join(lines)


def red_plot(res, png):
    """One panel per case: each variant's speed relative to kax (kax = 1).  False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_performance.py: matplotlib missing, no PNG written", file=sys.stderr)
        return False
    cases = [c for c in RED_CASES if any(k == c for k, _ in res)]
    fig, axes = plt.subplots(1, len(cases), figsize=(3 * len(cases), 3.6))
    for ax, case in zip(axes, cases):
        ref = min(v["best"] for (k, var), v in res.items() if k == case and var.startswith("kax"))
        vars_ = [v for v in RED_VARIANTS if (case, v) in res]
        vals = [ref / res[(case, v)]["best"] for v in vars_]
        colors = ["tab:blue" if v.startswith("kax") else "tab:gray" for v in vars_]
        ax.bar(range(len(vars_)), vals, color=colors)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(range(len(vars_)))
        ax.set_xticklabels(vars_, rotation=35, ha="right", fontsize=8)
        ax.set_title(case, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("speed relative to the fastest kax variant")
    fig.tight_layout()
    os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
    fig.savefig(png, dpi=110)
    return True


def reductions_main(args):
    runs = {}
    for path in args.json:
        res, ctx = red_load(path)
        runs[int(ctx["kax_threads"])] = (res, ctx)
    png_written = red_plot(runs[max(runs)][0], args.png)
    section = red_markdown(runs, png_written or os.path.exists(args.png))
    write_doc(args.doc, section, RED_BEGIN, RED_END)
    print(section)

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
    with open(args.json[0]) as f:
        kind = json.load(f)["context"].get("kax_benchmark", "elementwise")
    if kind == "reductions":
        reductions_main(args)
        return
    res, ctxs = {}, {}
    for path in args.json:
        r, t, c = load(path)
        res[t], ctxs[t] = r, c
    section = markdown(res, ctxs)
    write_doc(args.doc, section)
    plot(res, args.png)
    print(section)


if __name__ == "__main__":
    main()
