"""Shared pieces of the bench/run_*.sh reports: reading Google Benchmark's JSON (one file per
thread count) and the time table every section starts with.  Imported by the run scripts' inline
Python (sys.path gets bench/)."""
import json
import os

TO_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load_runs(paths):
    """{threads: ({(case, variant): {"min": s, "median": s}}, context)} from the JSON files."""
    runs = {}
    for path in paths:
        doc = json.load(open(path))
        res = {}
        for b in doc["benchmarks"]:
            if b.get("run_type") == "aggregate" and b["aggregate_name"] in ("min", "median"):
                case, var = b["run_name"].split("/")[:2]
                res.setdefault((case, var), {})[b["aggregate_name"]] = b["real_time"] * TO_S[b["time_unit"]]
        runs[int(doc["context"]["kax_threads"])] = (res, doc["context"])
    return runs


def merge_processes(merged_path, paths):
    """Writes the per-process JSON files of one bench_run_devices run (run_common.sh) as one file:
    every process's benchmarks (their names carry the configuration), and every process's context
    under "kax_processes".  Returns the loaded documents, in the order of `paths`."""
    docs = [json.load(open(p)) for p in paths]
    merged = {"context": dict(docs[0]["context"]), "benchmarks": []}
    merged["context"]["kax_processes"] = [d["context"] for d in docs]
    for d in docs:
        merged["benchmarks"] += d["benchmarks"]
    json.dump(merged, open(merged_path, "w"), indent=1)
    return docs


def fmt(x):
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def plural(t):
    return f"{t} thread{'s' if t > 1 else ''}"


def run_line(runs, threads):
    """The "Run <date> on <n> cores." opening of a section."""
    return f"Run {runs[threads[0]][1].get('date', '')[:10]} on {os.cpu_count()} cores."


def time_header(threads):
    return ["| case | variant | " + " | ".join(f"{plural(t)} ms" for t in threads) + " | rate |",
            "|---|---|" + "---:|" * (len(threads) + 1)]


def time_cells(runs, threads, key):
    """Best (median) in ms per thread count, "—" where a run lacks the benchmark."""
    return [f"{fmt(r['min'] * 1e3)} ({fmt(r['median'] * 1e3)})" if r else "—"
            for r in (runs[t][0].get(key) for t in threads)]


def load_paragraph(runs, threads):
    loads = ", ".join(f"{plural(t)}: {runs[t][1]['load_avg'][0]:.1f}" for t in threads if runs[t][1].get("load_avg"))
    return (f"Load average (1 min) when each process started — {loads}, on {os.cpu_count()} cores. "
            "Anything well above 0 means other work shared the cores: the numbers are pessimistic and noisy.")
