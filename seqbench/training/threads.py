"""How many CPU threads torch gets for `train`, `stress` and `bench` (a sweep's workers get
their share of the cores from the pool instead).

In order: `--threads N`, then `SEQBENCH_THREADS`, then `OMP_NUM_THREADS` (as torch itself
honours it), else seqbench's choice. The choice: one thread when a step's work is small, as it
is for every family's default config (their ops are too short to pay for waking a second
thread, and with a busy neighbour a second thread waits for a core: benchmarks/threads.py
measured 7-20x slower steps that way); for larger steps, the cores that are free now (the
usable cores less the other runnable processes, from /proc/loadavg), at least one. The count
is recorded in the run's environment (`threads`, `threads_from`), not in its config hash:
every count computes the same function.
"""

from __future__ import annotations

import os

from seqbench.errors import UsageError

MAX_THREADS = 1024
# multiply-adds of one step, roughly: batch × T × hidden² × layers. Below this one thread was
# fastest, idle or loaded, for every case of benchmarks/threads.py (the family defaults are
# 50 × 100 × 128² ≈ 8e7); above it the free cores are used.
SMALL_STEP = 1e9


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask: taskset, cgroups' cpusets), not the
    machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def busy_cpus() -> int:
    """Other processes runnable right now (the running count of /proc/loadavg, less this
    one); 0 where it cannot be read."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - 1)


def check_threads(n: int | None) -> int | None:
    if n is not None and not 1 <= n <= MAX_THREADS:
        raise UsageError(f"--threads must be in 1..{MAX_THREADS}, got {n}")
    return n


def _from_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return check_threads(int(raw))
    except (ValueError, UsageError):
        raise UsageError(
            f"{name} must be a thread count in 1..{MAX_THREADS}, got {raw!r}"
        ) from None


def step_work(batch_size: int, seq_len: int, hidden: int | None, layers: int | None) -> float:
    return float(batch_size) * seq_len * (hidden or 128) ** 2 * (layers or 1)


def choose_threads(explicit: int | None = None, work: float = 0.0) -> tuple[int, str]:
    """(threads, where the number came from: flag, SEQBENCH_THREADS, OMP_NUM_THREADS or
    auto) for a step of `work` multiply-adds."""
    if check_threads(explicit) is not None:
        return explicit, "flag"
    for name in ("SEQBENCH_THREADS", "OMP_NUM_THREADS"):
        n = _from_env(name)
        if n is not None:
            return n, name
    if work < SMALL_STEP:
        return 1, "auto"
    cores = usable_cpus()
    return max(1, min(cores, cores - busy_cpus())), "auto"


def apply_threads(n: int) -> int:
    """Set torch's intra-op threads (and numba's, which follows torch's) to `n`."""
    import torch

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
