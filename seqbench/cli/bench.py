"""`seqbench bench`: microbenchmarks whose results are stored as runs of kind "bench"."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, render

app = typer.Typer(
    help="Benchmarks; results are stored as runs of kind 'bench'.", no_args_is_help=True
)


@app.command()
def kernels(
    ctx: typer.Context,
    seq_len: Annotated[int, typer.Option(help="Sequence length T.")] = 1000,
    batch: Annotated[int, typer.Option(help="Batch size B.")] = 32,
    hidden: Annotated[int, typer.Option(help="Width N.")] = 128,
    device: Annotated[str, typer.Option(help="cpu or cuda.")] = "cpu",
    backend: Annotated[
        list[str] | None, typer.Option(help="Only these IndRNN backends (repeatable).")
    ] = None,
    repeat: Annotated[int, typer.Option(help="Timed repeats (median is reported).")] = 3,
    fmt: FormatOption = Format.table,
) -> None:
    """Time forward+backward of each IndRNN backend (and cuDNN LSTM/RNN on GPU) side by side.

    Prints ms, achieved GB/s, the fraction of the measured copy bandwidth and the speed-up over
    the autograd reference, and stores each row as a run of kind 'bench'.

    Example: seqbench bench kernels --seq-len 5000 --batch 256 --hidden 1024 --device cuda
    """
    from seqbench.bench import bench_kernels, store_bench
    from seqbench.errors import UsageError
    from seqbench.training.loop import resolve_device

    for name, v in (("seq-len", seq_len), ("batch", batch), ("hidden", hidden), ("repeat", repeat)):
        if v <= 0:
            raise UsageError(f"--{name} must be positive, got {v}")
    dev = resolve_device(device)
    rows, copy_gbps = bench_kernels(
        seq_len, batch, hidden, str(dev), tuple(backend) if backend else None, repeat
    )
    params = {"seq_len": seq_len, "batch": batch, "hidden": hidden, "device": str(dev)}
    store_bench(state(ctx).store(), rows, params, copy_gbps)
    render(
        ["name", "ms", "GB/s", "of copy BW", "x torch"],
        [(r.name, r.ms, r.gbps, r.copy_fraction, r.speedup_vs_torch) for r in rows],
        fmt,
        title=f"IndRNN fwd+bwd B={batch} T={seq_len} N={hidden} on {dev} "
        f"(copy {copy_gbps:.1f} GB/s)",
    )
