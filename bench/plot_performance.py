#!/usr/bin/python3
"""Turns bench_elementwise's Google Benchmark JSON into docs/performance.md's elementwise section
(between <!-- elementwise:begin --> and <!-- elementwise:end -->) and a bar chart.

Usage: plot_performance.py --doc docs/performance.md --png docs/img/elementwise.png R1.json R2.json
where each JSON comes from one process (one thread count, read from the kax_threads context).
Only the standard library is needed for the table; matplotlib (python3-matplotlib) for the PNG.
"""
import argparse
import json
import os
import re
import sys

BEGIN = "<!-- elementwise:begin -->"
END = "<!-- elementwise:end -->"
# Bytes moved per element, as STREAM counts (reads + writes, no write-allocate).
BYTES_PER_ELEMENT = {"copy": 16, "triad": 24, "fused": 48}
KERNELS = {
    "copy": "`y = a`",
    "triad": "`y = a + s*b`",
    "fused": "`y = a*b + sin(c)*2 - d/e`",
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
        f"writes (copy 16 B/element, triad 24, fused 48: five inputs, one output). Each cell is the "
        f"best of 5 repetitions (median in parentheses); ratios use the best. The thread count is "
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


def write_doc(path, section):
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text, flags=re.S)
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
    fig, axes = plt.subplots(1, len(KERNELS), figsize=(13, 4))
    for ax, kernel in zip(axes, KERNELS):
        vars_ = [v for v in VARIANTS if (kernel, v) in res[threads[0]]]
        width = 0.8 / len(threads)
        for j, t in enumerate(threads):
            vals = [res[t].get((kernel, v), {}).get("best", 0) for v in vars_]
            xs = [i + (j - (len(threads) - 1) / 2) * width for i in range(len(vars_))]
            ax.bar(xs, vals, width, label=f"{t} thread{'s' if t > 1 else ''}")
        ax.set_xticks(range(len(vars_)))
        ax.set_xticklabels(vars_, rotation=30, ha="right")
        ax.set_title(f"{kernel}: " + KERNELS[kernel].strip("`"), fontsize=9)
        ax.set_ylabel("GB/s")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(png) or ".", exist_ok=True)
    fig.savefig(png, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
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
