"""Sweep scheduler + store overhead, and scaling from 1 to 2 workers, measured in one run.

A grid of N identical-cost points (~1 s of training each) runs with --workers 1 and then
--workers 2 (fresh stores). Overhead per run = (sweep wall time × workers − Σ run time) / N,
reported against the mean run time; scaling = wall(1 worker) / wall(2 workers).

Usage: python benchmarks/sweep_overhead.py [--points 12] [--steps 150]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from seqbench.store.query import run_query

p = argparse.ArgumentParser()
p.add_argument("--points", type=int, default=12)
p.add_argument("--steps", type=int, default=150)
a = p.parse_args()

seeds = f"0:{a.points - 1}:+1"
grid = ["sweep", "--models", "rnn", "--tasks", "adding", "--seeds", seeds, "--set",
        f"steps={a.steps}", "--set", "hidden=32", "--set", "seq_len=50", "--set",
        "eval_size=200", "--quiet"]  # fmt: skip
print("| workers | points | sweep wall s | Σ run s | mean run s | overhead/run | of a run |")
print("|---|---|---|---|---|---|---|")
walls = {}
with tempfile.TemporaryDirectory() as d:
    for workers in (1, 2):
        db = os.path.join(d, f"w{workers}.db")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "seqbench", "--db", db, *grid, "--workers",
                        str(workers)], check=True, capture_output=True)  # fmt: skip
        wall = time.perf_counter() - t
        walls[workers] = wall
        _, rows = run_query(db, "SELECT SUM(wall_seconds), AVG(wall_seconds), COUNT(*) FROM "
                                "runs WHERE status = 'completed'")  # fmt: skip
        total, mean, n = rows[0]
        over = (wall * workers - total) / n
        print(f"| {workers} | {n} | {wall:.1f} | {total:.1f} | {mean:.2f} | {over:.3f} s | "
              f"{over / mean:.1%} |")  # fmt: skip
print(
    f"\n2 workers vs 1: {walls[1] / walls[2]:.2f}x the throughput "
    f"(wall includes process start-up and the pool's worker start)"
)
