"""Sweep scheduler + store overhead per run, and scaling from 1 to 2 workers, in one process.

N identical-cost points (~1 s of training each) run through run_sweep() on a warm pool of 1,
then 2 workers, in interleaved rounds (this VM's speed drifts; medians are reported). Each
worker reports how long each point took inside it (task and model built, trained, evaluated);
everything else is the scheduler's and the store's: overhead per run =
(sweep wall × workers − Σ time inside workers) / N. Scaling = wall(1 worker) / wall(2 workers).
The pool start-up (a fork server importing torch, ~2 s) is paid once per sweep and excluded.

Usage: python benchmarks/sweep_overhead.py [--points 16] [--steps 150] [--rounds 3]
"""

import argparse
import concurrent.futures as cf
import os
import statistics
import tempfile
import time

from seqbench.api import make_config
from seqbench.store.opening import open_store
from seqbench.sweep.executors import LocalExecutor
from seqbench.sweep.runner import plan_sweep, run_sweep


class TimedExecutor(LocalExecutor):
    busy = 0.0

    def wait(self, handles, timeout):
        out = super().wait(handles, timeout)
        self.busy += sum(rec["worker_seconds"] for _, rec, _ in out if rec)
        return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--points", type=int, default=16)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    configs = [
        make_config(
            "rnn",
            "adding",
            {"seed": s, "steps": a.steps, "hidden": 32, "seq_len": 50, "eval_size": 200},
        )
        for s in range(a.points)
    ]

    def swept(workers: int, d: str, r: int) -> tuple[float, float]:
        store = open_store(os.path.join(d, f"w{workers}-{r}.db"))
        sweep_id = plan_sweep(store, "bench", {"w": workers}, configs, force=False)
        ex = TimedExecutor(workers)
        cf.wait([ex.pool.submit(time.sleep, 0.2) for _ in range(workers)])  # warm the pool
        t = time.perf_counter()
        out = run_sweep(store, sweep_id, lambda: ex)
        wall = time.perf_counter() - t
        assert out.counts["completed"] == a.points
        store.dispose()
        return wall, ex.busy

    res: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            for w in (1, 2):
                res[w].append(swept(w, d, r))
    n = a.points
    print(f"medians of {a.rounds} interleaved rounds, {n} points each\n")
    print(
        "| workers | sweep wall s | time in workers s | per point in a worker s | "
        "overhead/run | of a run |"
    )
    print("|---|---|---|---|---|---|")
    walls = {}
    for w in (1, 2):
        wall = statistics.median(x for x, _ in res[w])
        busy = statistics.median(b for _, b in res[w])
        over = statistics.median((x * w - b) / n for x, b in res[w])
        walls[w] = wall
        print(
            f"| {w} | {wall:.2f} | {busy:.2f} | {busy / n:.3f} | {over * 1e3:.0f} ms | "
            f"{over / (busy / n):.1%} |"
        )
    print(f"\n2 workers vs 1: {walls[1] / walls[2]:.2f}x the throughput")


if __name__ == "__main__":  # the worker pool re-imports this module
    main()
