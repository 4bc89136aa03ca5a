"""`seqbench report` on a big store: 10,000 runs, 1,000,000 metric rows.

Generates the database (once, cached at --db), then times, in one process: the report from
`summaries` (what seqbench does), the same numbers computed from the full metric history (what
it avoids), and, each the best of 5 interleaved process starts: `python -c pass`,
`seqbench --help` and the report CLI end to end.

Usage: python benchmarks/report_speed.py [--db /tmp/report_bench.db]
"""

import argparse
import os
import random
import subprocess
import sys
import time

from sqlalchemy import insert

from seqbench.api import build_report
from seqbench.report.rows import comparison_rows
from seqbench.store.opening import open_store
from seqbench.store.query import run_query
from seqbench.store.schema import Metric, Run, Summary

p = argparse.ArgumentParser()
p.add_argument("--db", default="/tmp/seqbench_report_bench.db")
p.add_argument("--runs", type=int, default=10_000)
p.add_argument("--metrics-per-run", type=int, default=100)
a = p.parse_args()

if not os.path.exists(a.db):
    rng = random.Random(0)
    store = open_store(a.db)
    models = ["rnn", "lstm", "gru", "indrnn", "tcn", "gcnn", "window", "transformer"]
    t = time.perf_counter()
    with store.Session.begin() as s:
        s.execute(
            insert(Run),
            [
                {
                    "uuid": f"{i:036d}",
                    "status": "completed",
                    "kind": "train",
                    "model": models[i % 8],
                    "task": ["adding", "copy", "digits"][i % 3],
                    "k": 2 ** (i % 7),
                    "seq_len": 100,
                    "seed": i % 5,
                    "config": {},
                    "config_hash": str(i),
                }
                for i in range(1, a.runs + 1)
            ],
        )
        s.execute(
            insert(Summary),
            [
                {"run_id": i, "key": key, "value": rng.random(), "value_kind": "finite"}
                for i in range(1, a.runs + 1)
                for key in ("test_metric", "test_loss", "best_valid_metric", "baseline", "steps")
            ],
        )
        for start in range(1, a.runs + 1, 1000):
            s.execute(
                insert(Metric),
                [
                    {
                        "run_id": i,
                        "key": "valid_metric",
                        "step": step,
                        "value": rng.random(),
                        "value_kind": "finite",
                    }
                    for i in range(start, min(start + 1000, a.runs + 1))
                    for step in range(a.metrics_per_run)
                ],
            )
    store.dispose()
    print(
        f"generated {a.runs} runs, {a.runs * a.metrics_per_run} metric rows in "
        f"{time.perf_counter() - t:.1f}s"
    )


def timed(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def from_summaries():
    rep = build_report(a.db, compare=["rnn", "tcn"], by="k")
    comparison_rows(rep)


def from_history():  # the last valid_metric per run, scanning the metric table
    run_query(
        a.db,
        "SELECT r.model, r.task, r.k, AVG(m.value) FROM metrics m JOIN runs r "
        "ON r.id = m.run_id WHERE m.key = 'valid_metric' AND m.step = ("
        "SELECT MAX(step) FROM metrics m2 WHERE m2.run_id = m.run_id AND "
        "m2.key = 'valid_metric') GROUP BY r.model, r.task, r.k",
        {},
    )


s_time = timed(from_summaries)
h_time = timed(from_history, repeat=1)
seqbench = [sys.executable, "-m", "seqbench"]
cli = [*seqbench, "--db", a.db, "report", "--compare", "rnn", "tcn", "--by", "k", "--format", "csv"]


def run(cmd):
    return lambda: subprocess.run(cmd, check=True, capture_output=True)


# process starts, interleaved so that the machine's drift hits each alike
starts = {"python -c pass": [], "seqbench --help": [], "seqbench report (CLI)": []}
for _ in range(5):
    starts["python -c pass"].append(timed(run([sys.executable, "-c", "pass"]), repeat=1))
    starts["seqbench --help"].append(timed(run([*seqbench, "--help"]), repeat=1))
    starts["seqbench report (CLI)"].append(timed(run(cli), repeat=1))
best = {k: min(v) for k, v in starts.items()}
print("| what | seconds | target |")
print("|---|---|---|")
print(f"| report from summaries (library) | {s_time:.3f} | |")
print(f"| same numbers from the metric history (library) | {h_time:.3f} | |")
print(f"| `python -c pass` | {best['python -c pass']:.3f} | |")
print(f"| `seqbench --help` | {best['seqbench --help']:.3f} | ≤ 0.3 |")
print(
    f"| `seqbench report --compare rnn tcn --by k` end to end | "
    f"{best['seqbench report (CLI)']:.3f} | ≤ 0.7 |"
)
