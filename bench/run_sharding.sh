#!/bin/sh
# Builds bench_sharding, runs it once per configuration (the host device count, KAX_HOST_DEVICES,
# and Kokkos' thread count are fixed per process), merges the JSON files and prints the sharding
# section for docs/performance.md (Markdown between <!-- sharding:begin --> and
# <!-- sharding:end -->; paste it in, this script does not edit docs).  About a minute on the
# 2-core reference machine.  Configurations, devices:threads (bench/bench_sharding.cpp says which
# cases each one runs):
#   1:1  shard_map over 1 device on one thread; kax::matmul without shard_map; Eigen on 1 thread
#   1:2  shard_map over 1 device with the full OpenMP pool (it runs on the caller); kax::matmul
#   2:1  shard_map over 2 devices, one thread each (the headline); Eigen on 2 threads and on 1
#   2:2  2 devices with OMP_NUM_THREADS=2 and a 2-thread Kokkos pool: what the devices' GEMMs do
#        when OpenMP's default team on their threads is 2
#   KAX_BUILD_DIR (or BUILD)  build directory (default: <repo>/build; set up with meson if missing)
#   KAX_BENCH_MIN_TIME        --benchmark_min_time per repetition in seconds (default 0.2)
# Raw JSON: bench/results/sharding_dD_tT.json per configuration, merged into
# bench/results/sharding.json (every process's context under "kax_processes"); the section also
# goes to bench/results/sharding.md.
set -eu
. "$(dirname "$0")/run_common.sh"
configs="1:1 1:2 2:1 2:2"
bench_run_devices sharding $configs
# Ratios are best against best repetition, with medians against medians in parentheses (as
# run_pmap.sh: on the shared 2-core machine the best repetition is the least disturbed).
# shellcheck disable=SC2086
/usr/bin/python3 - "$root/bench" "$results/sharding.json" $(bench_device_files sharding $configs) <<'EOF_PY' | tee "$results/sharding.md"
import json, sys
sys.path.insert(0, sys.argv.pop(1))
from bench_report import TO_S, fmt, merge_processes
docs = merge_processes(sys.argv[1], sys.argv[2:])

res, conf = {}, {}  # variant -> {"min", "median"} in s; -> (devices, threads)
for d in docs:
    cfg = (int(d["context"]["kax_host_devices"]), int(d["context"]["kax_threads"]))
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate" and b["aggregate_name"] in ("min", "median"):
            var = b["run_name"].split("/")[1]
            res.setdefault(var, {})[b["aggregate_name"]] = b["real_time"] * TO_S[b["time_unit"]]
            conf[var] = cfg
best = lambda v: res[v]["min"] if v in res else None
med = lambda v: res[v]["median"] if v in res else None
def ratio(num, den):  # "best (median)" of T(num) / T(den)
    if None in (best(num), best(den)):
        return "—"
    return f"{best(num) / best(den):.2f} ({med(num) / med(den):.2f})"
def ms(v):
    return f"{fmt(best(v) * 1e3)} ({fmt(med(v) * 1e3)})" if v in res else "—"

S = 2048
FLOP = 2.0 * S ** 3
SM = "`shard_map(matmul, mesh, in_specs(P(\"x\", none), P()), out_specs(P(\"x\", none)))`"
VARIANTS = {  # name, what
    "kax_d1_t1": "**kax shard_map, 1 device**, global kax::Array arguments",
    "kax_d1_t1_sharded": "**kax shard_map, 1 device**, ShardedArray arguments (device_put once)",
    "kax_d1_t2": "**kax shard_map, 1 device (runs on the caller: full OpenMP pool)**, global arguments",
    "kax_d1_t2_sharded": "**kax shard_map, 1 device (full OpenMP pool)**, ShardedArray arguments",
    "kax_d2_t1": "**kax shard_map, 2 devices**, global kax::Array arguments",
    "kax_d2_t1_sharded": "**kax shard_map, 2 devices**, ShardedArray arguments (device_put once)",
    "kax_d1_t1_jit": "**kax::jit, 1 device**, ShardedArray arguments (the whole-array matmul, partitioned by kax)",
    "kax_d2_t1_jit": "**kax::jit, 2 devices**, ShardedArray arguments",
    "kax_d2_t2": "kax shard_map, 2 devices, `OMP_NUM_THREADS=2` (Kokkos pool of 2), global arguments",
    "kax_d2_t2_sharded": "kax shard_map, 2 devices, `OMP_NUM_THREADS=2` (Kokkos pool of 2), ShardedArray arguments",
    "kax_d2_t1_nb2": "kax shard_map, 2 devices, global arguments, while `Eigen::setNbThreads(2)` is in force",
    "assign_t1": "`C = kax::matmul(A, B);` without shard_map, preallocated C",
    "assign_t2": "`C = kax::matmul(A, B);` without shard_map, preallocated C",
    "eigen_t1": "Eigen `c.noalias() = a * b`, MatrixXf, preallocated, `Eigen::setNbThreads(1)`",
    "eigen_t1_d2": "the same, in the 2-device process (beside the 2-device runs)",
    "eigen_t2": "Eigen `c.noalias() = a * b`, MatrixXf, preallocated, `Eigen::setNbThreads(2)`",
}
date = docs[0]["context"].get("date", "")[:10]
L = ["<!-- sharding:begin -->", "## Sharding (shard_map and jit)", "",
     f"Run {date} on 2 cores. C = A @ B, A and B float32 ({S}, {S}), with {SM} on "
     "`make_mesh({n}, {\"x\"})`: every device multiplies its rows of A by all of B (one Eigen GEMM "
     "in its program). One process per configuration: host devices (`KAX_HOST_DEVICES`) and "
     "Kokkos/OpenMP threads (`--kokkos-threads`, `OMP_NUM_THREADS`, `OMP_PROC_BIND=false`); devices "
     "are oneTBB tasks. Each cell is the best of 5 repetitions, interleaved at random with the "
     "other cases' (median in parentheses), in ms; "
     "GFLOP/s is the median's (2 × 2048³ flops).", "",
     "| variant | devices | threads | ms | GFLOP/s |", "|---|---:|---:|---:|---:|"]
for var, name in VARIANTS.items():
    if var in res:
        d, t = conf[var]
        L.append(f"| {name} | {d} | {t} | {ms(var)} | {fmt(FLOP / med(var) / 1e9)} |")
loads = ", ".join(f"{c['kax_host_devices']} device(s) / {c['kax_threads']} thread(s): {c['load_avg'][0]:.1f}"
                  for c in (d["context"] for d in docs) if c.get("load_avg"))
L += ["", f"Load average (1 min) when each process started — {loads}, on 2 cores. Anything well "
      "above 0 means other work shared the cores: the numbers are pessimistic and noisy.", "",
      "### Scaling from 1 to 2 devices, and Eigen", "",
      "Scaling: T(1 device, 1 thread) / T(2 devices, one thread each), target ≥ 1.7. Eigen / kax: "
      "Eigen's time / kax's (< 1: kax is slower). Best repetition against best (median against "
      "median in parentheses); the target is judged on the best.", "",
      "| arguments | scaling 2 / 1 device (target ≥ 1.7) | Eigen 1 thread / kax 1 device | "
      "Eigen 2 threads / kax 2 devices | kax 1 device, 2-thread pool / kax 2 devices | met |",
      "|---|---:|---:|---:|---:|---|"]
for label, sfx in (("shard_map, global kax::Array", ""), ("shard_map, ShardedArray (placed once)", "_sharded"),
                   ("jit, ShardedArray (placed once)", "_jit")):
    d1, d2 = "kax_d1_t1" + sfx, "kax_d2_t1" + sfx
    if best(d1) is None or best(d2) is None:
        continue
    met = "yes" if best(d1) / best(d2) >= 1.7 else "**no**"
    pool = "kax_d1_t2" + ("_sharded" if sfx == "_jit" else sfx)
    L.append(f"| {label} | **{ratio(d1, d2)}** | {ratio('eigen_t1', d1)} | {ratio('eigen_t2', d2)} | "
             f"{ratio(pool, d2)} | {met} |")
L += ["", f"Eigen's own scaling, T(1 thread) / T(2 threads): {ratio('eigen_t1', 'eigen_t2')} "
      f"({ratio('eigen_t1_d2', 'eigen_t2')} against its 1-thread run in the same process). "
      f"shard_map overhead on 1 device, T(kax::matmul without shard_map) / T(shard_map): "
      f"{ratio('assign_t1', 'kax_d1_t1')} on 1 thread, {ratio('assign_t2', 'kax_d1_t2')} on 2. "
      f"jit's overhead (tracing and partitioning every call) against shard_map on the same arguments, "
      f"T(shard_map) / T(jit): {ratio('kax_d1_t1_sharded', 'kax_d1_t1_jit')} on 1 device, "
      f"{ratio('kax_d2_t1_sharded', 'kax_d2_t1_jit')} on 2.", "",
      "### Threads per device", "",
      "Every device's program runs on its own oneTBB thread, where Kokkos runs its kernels inline. "
      "Eigen's GEMM, left to itself, opens an OpenMP team of `Eigen::nbThreads()` on the calling "
      "thread: the thread's `omp_get_max_threads()` (`OMP_NUM_THREADS`, else the core count) unless "
      "`Eigen::setNbThreads(n)` set a process-wide count; the OS thread counts below the table show "
      "whether the devices' GEMMs started threads of their own. Time relative to one thread per device "
      "(T(one thread per device) / T(variant), < 1: slower).", "",
      "| variant | ms | one thread per device / this |", "|---|---:|---:|"]
for var in ("kax_d2_t1", "kax_d2_t2", "kax_d2_t1_nb2", "kax_d2_t1_sharded", "kax_d2_t2_sharded"):
    if var in res:
        base = "kax_d2_t1_sharded" if var.endswith("_sharded") else "kax_d2_t1"
        L.append(f"| {VARIANTS[var]} | {ms(var)} | {ratio(base, var)} |")
L += ["", "What the devices' GEMMs ran on, per process (each device program's view, and the OS threads "
      "its first GEMMs started):", ""]
for c in (d["context"] for d in docs):
    for part in c.get("kax_gemm_threads", "").split(" | "):
        if part:
            L.append(f"- {c['kax_host_devices']} device(s) / {c['kax_threads']} thread(s), {part}")
L += ["", "<!-- sharding:end -->"]
print("\n".join(L))
EOF_PY
