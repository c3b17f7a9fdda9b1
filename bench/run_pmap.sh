#!/bin/sh
# Builds bench_pmap, runs it once per configuration (the host device count, KAX_HOST_DEVICES, and
# Kokkos' thread count are fixed per process), merges the JSON files and prints the pmap section
# for docs/performance.md (Markdown between <!-- pmap:begin --> and <!-- pmap:end -->; paste it
# in, this script does not edit docs).  Under a minute on the 2-core reference machine.
# Configurations, devices:threads (bench/bench_pmap.cpp says which cases each one runs):
#   1:1  one device on one thread: one device's share (1, N) and the whole work (1, 2N)
#   1:2  one device with the full OpenMP pool; kax::eval without pmap on both threads
#   2:1  two devices, one thread each (the headline pmap runs); psum over 2 devices
#   2:2  two devices with a 2-thread Kokkos pool (each device's kernels still run on its own task's
#        thread: pmap keeps the caller, Kokkos' OpenMP master, out of the device tasks)
#   4:1  psum over 4 devices
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/pmap_dD_tT.json per configuration, merged into bench/results/pmap.json
# (with every process's context under "kax_processes"); the section also goes to
# bench/results/pmap.md.
set -eu
. "$(dirname "$0")/run_common.sh"
configs="1:1 1:2 2:1 2:2 4:1"
bench_run_devices pmap $configs
# Ratios are best against best repetition, with medians against medians in parentheses: on the
# shared 2-core machine a 2-thread repetition is easily disturbed by other work (the best one the
# least); the time table shows the best repetition with the median in parentheses.
# shellcheck disable=SC2086
/usr/bin/python3 - "$root/bench" "$results/pmap.json" $(bench_device_files pmap $configs) <<'EOF_PY' | tee "$results/pmap.md"
import json, sys
sys.path.insert(0, sys.argv.pop(1))
from bench_report import TO_S, fmt, merge_processes
docs = merge_processes(sys.argv[1], sys.argv[2:])

res, conf = {}, {}  # (case, variant) -> {"min", "median"} in s; -> (devices, threads)
for d in docs:
    cfg = (int(d["context"]["kax_host_devices"]), int(d["context"]["kax_threads"]))
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate" and b["aggregate_name"] in ("min", "median"):
            key = tuple(b["run_name"].split("/")[:2])
            res.setdefault(key, {})[b["aggregate_name"]] = b["real_time"] * TO_S[b["time_unit"]]
            conf[key] = cfg
med = lambda c, v: res[(c, v)]["median"] if (c, v) in res else None
best = lambda c, v: res[(c, v)]["min"] if (c, v) in res else None
# "best (median)" of a ratio num / den of two variants' times
def ratio(c, num, den, scale=1.0):
    if None in (best(c, num), best(c, den)):
        return "—"
    return f"{scale * best(c, num) / best(c, den):.2f} ({scale * med(c, num) / med(c, den):.2f})"

N = 1 << 22
CASES = {  # title, bytes per element of the whole (n, N) work (input read, output written)
    "psum2": ("`pmap<\"i\">(psum<\"i\">)(X)`, X (2, 2^22) float32", 8),
    "psum4": ("`pmap<\"i\">(psum<\"i\">)(X)`, X (4, 2^22) float32", 8),
    "sincos": ("f(x) = `sin(x) * 2 + cos(x)`, N = 2^22 float32 per device", 8),
    "sincos_sum": ("f(x) = `sum(sin(x) * 2 + cos(x))`, N = 2^22 float32 per device", 4),
}
VARIANTS = {  # name, elements of the input
    "kax": ("**kax `Y = pmap<\"i\">(f)(X);`**", None),
    "kax_donated": ("**kax `pmap<\"i\">(f, donate_argnums<0>)(X)`**: the result in X's buffer", None),
    "kax_t2": ("**kax, Kokkos pool of 2 threads**", None),
    "omp": ("hand-written: `omp parallel num_threads(n)`, reduce-scatter + `omp barrier` + copy", None),
    "omp_fresh": ("the same into a fresh `kax::empty<float>(n, N)` per call", None),
    "threads": ("hand-written: std::thread per call, reduce-scatter + std::barrier + copy", None),
    "pmap_d1_t1_1N": ("**pmap, 1 device, X (1, N)**: one device's share", 1),
    "pmap_d1_t1_1N_donated": ("**pmap, 1 device, X (1, N), donate_argnums<0>**", 1),
    "pmap_d1_t1_2N": ("**pmap, 1 device, X (1, 2N)**", 2),
    "pmap_d1_t2_2N": ("**pmap, 1 device (full OpenMP pool), X (1, 2N)**", 2),
    "pmap_d2_t1": ("**pmap, 2 devices, X (2, N)**", 2),
    "pmap_d2_t1_donated": ("**pmap, 2 devices, X (2, N), donate_argnums<0>**", 2),
    "pmap_d2_t2": ("**pmap, 2 devices, X (2, N), Kokkos pool of 2 threads**", 2),
    "eval_t1": ("kax::eval(f(X)) without pmap, X (2, N) (a fresh output)", 2),
    "eval_t2": ("kax::eval(f(X)) without pmap, X (2, N) (a fresh output)", 2),
    "assign_t1": ("`y = f(X);` without pmap into a preallocated (2, N)", 2),
    "assign_t2": ("`y = f(X);` without pmap into a preallocated (2, N)", 2),
    "omp_t1": ("hand-written `omp parallel for simd`, libmvec sinf/cosf, (2, N)", 2),
    "omp_t2": ("hand-written `omp parallel for simd`, libmvec sinf/cosf, (2, N)", 2),
}
date = docs[0]["context"].get("date", "")[:10]
L = ["<!-- pmap:begin -->", "## pmap", "",
     f"Run {date} on 2 cores. One process per configuration: host devices (`KAX_HOST_DEVICES`) and "
     "Kokkos/OpenMP threads (`--kokkos-threads`, `OMP_PROC_BIND=false`); devices are oneTBB tasks. "
     "Each cell is the best of 5 repetitions, interleaved at random with the other cases' "
     "(median in parentheses), in ms; the rate is the "
     "median's, counting the minimum traffic (every input read once, the output written once). "
     "N = 2^22.", "",
     "| case | variant | devices | threads | ms | rate |", "|---|---|---:|---:|---:|---:|"]
for case, (title, per) in CASES.items():
    n = int(case[-1]) if case.startswith("psum") else None
    for var, (name, mult) in VARIANTS.items():
        if (case, var) not in res:
            continue
        r = res[(case, var)]
        d, t = conf[(case, var)]
        elems = n * N if n else mult * N
        L.append(f"| {title} | {name} | {d} | {t} | {fmt(r['min'] * 1e3)} ({fmt(r['median'] * 1e3)}) | "
                 f"{fmt(per * elems / r['median'] / 1e9)} GB/s |")
loads = ", ".join(f"{c['kax_host_devices']} device(s) / {c['kax_threads']} thread(s): {c['load_avg'][0]:.1f}"
                  for c in (d["context"] for d in docs) if c.get("load_avg"))
L += ["", f"Load average (1 min) when each process started — {loads}, on 2 cores. Anything well "
      "above 0 means other work shared the cores: the numbers are pessimistic and noisy.", "",
      "### psum", "",
      "Speed ratios, baseline time / kax time (< 1: kax is slower): best repetition against best "
      "(median against median in parentheses).", "",
      "| devices | kax ms | omp / kax | omp with a fresh output / kax | std::thread / kax | kax donated ms | omp / kax donated |",
      "|---:|---:|---:|---:|---:|---:|---:|"]
for n in (2, 4):
    c = f"psum{n}"
    if best(c, "kax") is None:
        continue
    L.append(f"| {n} | {fmt(best(c, 'kax') * 1e3)} ({fmt(med(c, 'kax') * 1e3)}) | {ratio(c, 'omp', 'kax')} | "
             f"{ratio(c, 'omp_fresh', 'kax')} | {ratio(c, 'threads', 'kax')} | "
             + (f"{fmt(best(c, 'kax_donated') * 1e3)} ({fmt(med(c, 'kax_donated') * 1e3)}) | {ratio(c, 'omp', 'kax_donated')} |"
                if best(c, "kax_donated") is not None else "— | — |"))
L += ["", "### Scaling from 1 to 2 devices", "",
      "Weak: 2 × T(1 device, 1 thread, X (1, N)) / T(2 devices, X (2, N)) — throughput ratio, target "
      "≥ 1.8. Strong: the same total work, T(1 device, X (1, 2N)) / T(2 devices, X (2, N)), on 1 "
      "thread and with the full OpenMP pool. pmap overhead: T(kax::eval, no pmap) / T(pmap) on the "
      "same threads (< 1: pmap is slower). Best repetition against best (median against median in "
      "parentheses); the target is judged on the best.", "",
      "| workload | weak (target ≥ 1.8) | strong vs 1 thread | strong vs 2-thread pool | eval / pmap, 1 thread | "
      "eval / pmap, 2 threads (2 devices) | 2 devices with a 2-thread pool / 1 thread | met |",
      "|---|---:|---:|---:|---:|---:|---:|---|"]
for c in ("sincos", "sincos_sum"):
    if best(c, "pmap_d2_t1") is None or best(c, "pmap_d1_t1_1N") is None:
        continue
    weak = 2 * best(c, "pmap_d1_t1_1N") / best(c, "pmap_d2_t1")
    L.append(f"| {CASES[c][0]} | **{ratio(c, 'pmap_d1_t1_1N', 'pmap_d2_t1', 2.0)}** | "
             f"{ratio(c, 'pmap_d1_t1_2N', 'pmap_d2_t1')} | {ratio(c, 'pmap_d1_t2_2N', 'pmap_d2_t1')} | "
             f"{ratio(c, 'eval_t1', 'pmap_d1_t1_2N')} | {ratio(c, 'eval_t2', 'pmap_d2_t1')} | "
             f"{ratio(c, 'pmap_d2_t1', 'pmap_d2_t2')} | {'yes' if weak >= 1.8 else '**no**'} |")
    if best(c, "pmap_d2_t1_donated") is not None and best(c, "pmap_d1_t1_1N_donated") is not None:
        weak = 2 * best(c, "pmap_d1_t1_1N_donated") / best(c, "pmap_d2_t1_donated")
        L.append(f"| {CASES[c][0]}, `donate_argnums<0>` (no new output per call) | "
                 f"**{ratio(c, 'pmap_d1_t1_1N_donated', 'pmap_d2_t1_donated', 2.0)}** | — | — | — | — | — | "
                 f"{'yes' if weak >= 1.8 else '**no**'} |")
L += ["", "<!-- pmap:end -->"]
print("\n".join(L))
EOF_PY
