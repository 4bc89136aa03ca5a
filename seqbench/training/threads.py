"""How many CPU threads torch gets for `train`, `stress` and `bench` (a sweep's workers get
the same choice within the share of the cores their pool gives them).

In order: `--threads N`, then `SEQBENCH_THREADS`, then `OMP_NUM_THREADS` (as torch itself
honours it), else seqbench's choice: the cores that are free now, the usable cores less the
other runnable processes (from /proc/loadavg), at least one; in a sweep's worker no more than
its share of the cores (a sweep once gave a fused RNN step two threads beside a second sweep,
and its steps ran several times slower). On an idle 2-core machine that is
2 threads, beside one busy neighbour 1 (benchmarks/threads.py measured a second thread beside
a busy neighbour at 1.4-2.4x slower steps for every family's default config, and on an idle
machine up to 1.7x faster for conv, IndRNN and transformer steps). Torch's fused RNN, LSTM and
GRU at small batch × width (ModelSpec.small_steps) get one thread: a second one bought them
nothing idle (0.9-1.1x) and only added noise. The count is recorded in the run's environment
(`threads`, `threads_from`), not in its config hash: every count computes the same function.
"""

from __future__ import annotations

import os

from seqbench.errors import UsageError

MAX_THREADS = 1024
# set by a sweep's pool worker: its share of the cores (sweep/executors.threads_per_worker)
POOL_THREADS = "SEQBENCH_POOL_THREADS"


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
        raise UsageError(f"`threads` must be in 1..{MAX_THREADS}, got {n}")
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


# batch × width² below which a chain of per-step matmuls (ModelSpec.small_steps) runs on one
# thread: the family defaults are 50 × 128² ≈ 8e5; at 256 × 512² ≈ 7e7 two threads were 1.7×
# faster (benchmarks/threads.py)
SMALL_STEP = 2**24


def one_thread_for(cfg) -> bool:
    """Whether the config's steps are too small for a second thread (its family, or a
    window's base, is a chain of small per-step matmuls at this batch and width)."""
    from seqbench.models import base_spec

    return base_spec(cfg).small_steps and cfg.batch_size * (cfg.hidden or 128) ** 2 < SMALL_STEP


def choose_threads(explicit: int | None = None, small: bool = False) -> tuple[int, str]:
    """(threads, where the number came from: flag, SEQBENCH_THREADS, OMP_NUM_THREADS or
    auto). `small`: steps that one thread does fastest (one_thread_for)."""
    if check_threads(explicit) is not None:
        return explicit, "flag"
    for name in ("SEQBENCH_THREADS", "OMP_NUM_THREADS"):
        n = _from_env(name)
        if n is not None:
            return n, name
    if small:
        return 1, "auto"
    cores = usable_cpus()
    free = max(1, min(cores, cores - busy_cpus()))
    share = _from_env(POOL_THREADS)
    if share is not None:  # a sweep worker: its share of the cores, less what is busy now
        return min(share, free), "sweep share"
    return free, "auto"


def apply_threads(n: int) -> int:
    """Set torch's intra-op threads (and numba's, which follows torch's) to `n`."""
    import torch

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
