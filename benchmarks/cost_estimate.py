"""How close the time a dry run states is to the time the runs take: the README's memory
example (the linear teacher at λ = 0.5, T = 16, 800 steps, a TCN over k beside a GRU, three
seeds), its first round of runs, on a fresh store.

Per condition (idle, then beside a busy neighbour: one process spinning on a core), in one
run: the estimate `memory --dry-run` prints for the first round (sweep/cost.probe_cost: a
timing probe of each model and context, shared among the workers), then those same runs
trained as a sweep with the same workers, timed; the ratio real / estimate side by side.

    .venv/bin/python benchmarks/cost_estimate.py        # ~3 minutes on 2 cores
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import time
from pathlib import Path

import seqbench.api as sb

SETS = ["teacher_kind=linear", "teacher_lam=0.5", "seq_len=16", "steps=800"]
WORKERS = 2


def _spin() -> None:
    while True:
        pass


def condition(title: str) -> tuple[str, float, float]:
    plan = sb.memory_plan("teacher", sets=SETS, families=["tcn"], references=["gru"])
    t = time.perf_counter()
    estimate = sb.memory_cost(None, plan, WORKERS)["seconds"]
    probing = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        store = sb.open_store(str(Path(d) / "cost.db"))
        try:
            first = sb.SweepPlan(plan.name, {"grids": plan.grids()}, plan.points)
            t = time.perf_counter()
            out = sb.run_sweep(store, first, workers=WORKERS)
            real = time.perf_counter() - t
        finally:
            store.dispose()
    assert out.ran == len(plan.points), out
    print(
        f"{title}: {len(plan.points)} runs, estimate {estimate:.1f} s (probing took "
        f"{probing:.1f} s), trained in {real:.1f} s: real / estimate {real / estimate:.2f}"
    )
    return title, estimate, real


def main() -> None:
    rows = [condition("idle")]
    neighbour = mp.Process(target=_spin, daemon=True)
    neighbour.start()
    try:
        rows.append(condition("beside a busy neighbour"))
    finally:
        neighbour.terminate()
    print("\n| condition | estimate s | real s | real / estimate |")
    print("|---|---|---|---|")
    for title, est, real in rows:
        print(f"| {title} | {est:.1f} | {real:.1f} | {real / est:.2f} |")


if __name__ == "__main__":  # the sweep's workers import this file again: run nothing then
    main()
