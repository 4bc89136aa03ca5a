"""Kernel benchmarks: forward + backward of every IndRNN backend (and cuDNN LSTM/RNN of the same
width on GPU), timed side by side in one process, with achieved bandwidth against the device's
measured copy bandwidth. Results are stored as runs of kind "bench"."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from seqbench.config import digest
from seqbench.store.store import Store


@dataclass(frozen=True)
class BenchRow:
    name: str
    ms: float  # forward + backward, median over repeats
    gbps: float | None  # achieved bandwidth (IndRNN backends only)
    copy_fraction: float | None  # gbps / measured copy bandwidth
    speedup_vs_torch: float | None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_fn(fn: Callable[[], None], device: torch.device, repeat: int, warmup: int = 1) -> float:
    """Median wall time of fn() in milliseconds."""
    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def copy_bandwidth(device: torch.device, n_bytes: int = 1 << 28) -> float:
    """GB/s of a device-to-device tensor copy (read + write counted)."""
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    ms = time_fn(lambda: dst.copy_(src), device, repeat=5)
    return 2 * n_bytes / (ms / 1e3) / 1e9


def indrnn_bytes(B: int, T: int, N: int, x_itemsize: int = 4) -> int:
    """Compulsory traffic of forward + backward: read x, write h; read h and g_out, write dx."""
    return B * T * N * (x_itemsize + 4 + 4 + 4 + x_itemsize)


def bench_kernels(
    store: Store | Callable[[], Store] | None = None,
    *,
    seq_len: int = 1000,
    batch: int = 32,
    hidden: int = 128,
    device: str = "cpu",
    backends: tuple[str, ...] | None = None,
    repeat: int = 3,
    threads: int | None = None,
) -> tuple[list[BenchRow], float, str]:
    """Time every available backend; returns (rows, measured copy GB/s, the device used).
    With a `store` (or a function that opens it, called once the arguments are checked, so
    bad input creates no store), each row is stored as a run of kind "bench"."""
    from seqbench.environment import require_ram
    from seqbench.errors import UsageError
    from seqbench.ops.common import numba_available, triton_available
    from seqbench.ops.indrnn import indrnn
    from seqbench.training.setup import resolve_device

    for flag, v in (("seq-len", seq_len), ("batch", batch), ("hidden", hidden), ("repeat", repeat)):
        if v <= 0:
            raise UsageError(f"--{flag} must be positive, got {v}")
    from seqbench.training.heap import keep_freed_memory
    from seqbench.training.threads import apply_threads, choose_threads

    n_threads, threads_from = choose_threads(threads)
    device = str(resolve_device(device))
    need = 8 * indrnn_bytes(batch, seq_len, hidden)  # inputs, outputs, grads, the loop's state
    if torch.device(device).type == "cpu":
        require_ram(
            need, f"bench at T={seq_len}, B={batch}, N={hidden}", "`seq_len`, `batch` or `hidden`"
        )
    apply_threads(n_threads)
    keep_freed_memory()
    dev = torch.device(device)
    if backends is None:
        backends = ("torch", "cpu")
        backends += ("numba",) if numba_available(dev)[0] else ()
        backends += ("triton",) if triton_available(dev)[0] else ()
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(batch, seq_len, hidden, generator=g) * 0.5).to(dev).requires_grad_()
    u = (torch.rand(hidden, generator=g)).to(dev).requires_grad_()
    gout = torch.randn(batch, seq_len, hidden, generator=g).to(dev)
    copy_gbps = copy_bandwidth(dev)
    n_bytes = indrnn_bytes(batch, seq_len, hidden)
    timings: dict[str, float] = {}
    for be in backends:

        def step(be=be):
            x.grad = u.grad = None
            indrnn(x, u, None, backend=be).backward(gout)

        # the autograd loop is slow at long T: one repeat is plenty to rank it
        timings[be] = time_fn(step, dev, repeat=1 if be == "torch" else repeat)
    rows = []
    for be, ms in timings.items():
        gbps = n_bytes / (ms / 1e3) / 1e9
        speed = timings["torch"] / ms if "torch" in timings else None
        rows.append(BenchRow(f"indrnn[{be}]", ms, gbps, gbps / copy_gbps, speed))
    if dev.type == "cuda":
        for kind in ("lstm", "rnn"):
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.RNN
            net = cls(hidden, hidden, batch_first=True).to(dev)
            xi = x.detach().requires_grad_()

            def step(net=net, xi=xi):
                net(xi)[0].backward(gout)

            ms = time_fn(step, dev, repeat)
            speed = timings["torch"] / ms if "torch" in timings else None
            rows.append(BenchRow(f"cudnn-{kind}", ms, None, None, speed))
    if store is not None:
        params = {"seq_len": seq_len, "batch": batch, "hidden": hidden, "device": device}
        store_bench(store() if callable(store) else store, rows, params, copy_gbps, threads_from)
    return rows, copy_gbps, device


def store_bench(
    store: Store,
    rows: list[BenchRow],
    params: dict,
    copy_gbps: float,
    threads_from: str | None = None,
) -> list[int]:
    """One run of kind "bench" per row, with the timings as summaries."""
    from seqbench import environment
    from seqbench.store.values import utcnow
    from seqbench.training.heap import heap_state

    ids = []
    for row in rows:
        cfg = {**params, "backend": row.name}
        values = {k: v for k, v in asdict(row).items() if k != "name" and v is not None}
        run_id = store.recorder().finish(
            "completed",
            summaries={**values, "copy_gbps": copy_gbps},
            kind="bench",
            model=row.name,
            task="kernel",
            seq_len=params["seq_len"],
            config=cfg,
            config_hash=digest(cfg),
            environment=environment.capture(params["device"], threads_from, heap_state()),
            started_at=utcnow(),
            wall_seconds=row.ms / 1e3,
        )
        ids.append(run_id)
    return ids
