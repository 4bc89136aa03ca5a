"""What a grid of runs will cost on this machine before any is trained: a timing probe of
each model and context (training.probe.probe_seconds), the runs shared among the workers as
a sweep's pool runs them. `sweep --dry-run` and `memory` say it."""

from __future__ import annotations

import time

from seqbench.config import RunConfig
from seqbench.sweep.executors import threads_per_worker
from seqbench.training.threads import usable_cpus

PROBE_BUDGET = 15.0  # seconds of probing at most; past it, no estimate rather than a slow dry run


def probe_cost(
    points: list[RunConfig], workers: int | None = None, budget: float = PROBE_BUDGET
) -> float | None:
    """Wall seconds to train `points` with `workers` parallel runs (default: one per usable
    core), from a probe of one point per model and context at each worker's share of the
    cores (torch's first-use costs paid by an untimed probe first); None when probing would
    take more than `budget` seconds."""
    from seqbench.training.probe import probe_seconds

    if not points:
        return 0.0
    workers = max(1, min(workers or usable_cpus(), len(points)))
    share = threads_per_worker(workers)
    groups: dict[tuple, list[RunConfig]] = {}
    for c in points:
        groups.setdefault((c.model, c.task, c.k, c.seq_len), []).append(c)
    start = time.perf_counter()
    probe_seconds(points[0], threads=share)  # torch's first use, not a run's cost
    total = 0.0
    for g in groups.values():
        if time.perf_counter() - start > budget:
            return None
        total += probe_seconds(g[0], threads=share) * len(g)
    return total / workers
