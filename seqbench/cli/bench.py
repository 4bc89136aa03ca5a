"""`seqbench bench`: microbenchmarks whose results are stored as runs of kind "bench"."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._options import ThreadsOption, state
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
    threads: ThreadsOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Time forward+backward of each IndRNN backend (and cuDNN LSTM/RNN on GPU) side by side.

    Prints ms, achieved GB/s, the fraction of the measured copy bandwidth and the speed-up over
    the autograd reference, and stores each row as a run of kind 'bench'.

    Example: seqbench bench kernels --seq-len 5000 --batch 256 --hidden 1024 --device cuda
    """
    rows, copy_gbps, dev = api.bench_kernels(
        state(ctx).store,
        seq_len=seq_len,
        batch=batch,
        hidden=hidden,
        device=device,
        backends=tuple(backend) if backend else None,
        repeat=repeat,
        threads=threads,
    )
    render(
        ["name", "ms", "GB/s", "of copy BW", "x torch"],
        [_shown(r, fmt) for r in rows],
        fmt,
        title=f"IndRNN fwd+bwd B={batch} T={seq_len} N={hidden} on {dev} "
        f"(copy {copy_gbps:.1f} GB/s)",
    )


def _shown(r, fmt: Format) -> tuple:
    """A row as numbers for json and csv; for people (table, markdown) at three significant
    digits, the copy fraction as a percentage and the speed-up with its ×."""
    raw = (r.name, r.ms, r.gbps, r.copy_fraction, r.speedup_vs_torch)
    if fmt not in (Format.table, Format.markdown):
        return raw

    def num(v, spec: str = "{:.3g}") -> str:
        return "" if v is None else spec.format(v)

    return (
        r.name,
        num(r.ms),
        num(r.gbps),
        num(None if r.copy_fraction is None else 100 * r.copy_fraction, "{:.3g}%"),
        num(r.speedup_vs_torch, "{:.3g}×"),
    )
