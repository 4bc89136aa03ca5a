"""`seqbench stress`: gradient explosion/vanishing and truncation error, per model and seed."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._options import QuietOption, ThreadsOption, joined, state
from seqbench.cli._output import Format, FormatOption, output_path, render
from seqbench.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("stress")(stress)


DEFAULT_MODELS = ["rnn", "lstm", "gru", "indrnn", "tcn"]


def _csv(value: str) -> list[str]:
    return api.split_list(value)


Models = Annotated[
    list[str] | None,
    typer.Option("--models", "--model", help="Models to analyse at initialisation: rnn,lstm,..."),
]
SeqLen = Annotated[int, typer.Option(help="Sequence length T.")]
Hidden = Annotated[int, typer.Option(help="Width H of fresh models.")]
K = Annotated[
    int | None,
    typer.Option("--k", help="Context of fresh feedforward models (as `train --k` builds them)."),
]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Another model field of fresh models, key=value; "
        "each model takes it where it reads it.",
    ),
]
Batch = Annotated[int, typer.Option(help="Sequences averaged over.")]
Seeds = Annotated[list[str] | None, typer.Option("--seeds", "--seed", help="Seeds: 0,1,2.")]
Runs = Annotated[
    list[str] | None,
    typer.Option("--run", help="Also analyse this trained run's checkpoint (repeatable)."),
]
Dtype = Annotated[str, typer.Option(help="float32 or float64.")]
Rtol = Annotated[float, typer.Option(help="Horizon: gradient ≥ rtol × lag-0 gradient.")]
Eps = Annotated[float, typer.Option(help="Verdict band: stable if |γ − 1| ≤ eps.")]
Plot = Annotated[str | None, typer.Option(help="Write a PNG of both curves.")]
COLUMNS = ["run", "model", "source", "seed", "gain γ", "horizon", "verdict", "spectral norm",
           "decay bound", "trunc decay"]  # fmt: skip


def stress(
    ctx: typer.Context,
    models: Models = None,
    seq_len: SeqLen = 5000,
    hidden: Hidden = 128,
    k: K = None,
    set_: Sets = None,
    batch: Batch = 4,
    seeds: Seeds = None,
    run: Runs = None,
    dtype: Dtype = "float32",
    rtol: Rtol = 1e-6,
    eps: Eps = 1e-3,
    plot: Plot = None,
    quiet: QuietOption = False,
    threads: ThreadsOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Measure how gradients and state differences travel through time.

    Per model and seed: the gradient norm at every lag from one backward pass over T steps, its
    per-step gain γ, memory horizon and verdict (exploding / vanishing / stable), the recurrent
    spectra, and the truncation error ‖y_T(full) − y_T(last k)‖ for k = 1, 2, 4, …, T with its
    decay rate. Everything is stored as runs of kind 'stress' (curves + summaries).

    Fresh models are built as `train` builds them on the adding task, with --hidden, --k
    (feedforward models' context) and --set; the stored run's k is the model's context.

    Example: seqbench stress --models rnn,lstm,indrnn,tcn --seq-len 5000 --plot stress.png

    Example: seqbench stress --models tcn,gcnn --k 16 --seq-len 80 --set kernel_size=3
    """
    if plot:
        output_path(plot, "--plot")
    seeds_text = joined(seeds) or "0"
    try:
        seed_list = [int(s) for s in _csv(seeds_text)]
    except ValueError:
        raise UsageError(f"--seeds expects integers, got {seeds_text!r}") from None
    # no --models: the default five; --models '' (with --run): trained runs only
    model_list = DEFAULT_MODELS if models is None else _csv(joined(models) or "")
    from seqbench.cli._progress import Bar

    bar = Bar("stress", ("last",))
    progress = {} if quiet else {
        "on_start": bar.start,
        "on_result": lambda r: bar.advance(last=f"{r.model} seed {r.seed}: {r.verdict}"),
    }  # fmt: skip
    api.check_threads(threads)  # a store is opened once the input passed every check
    try:
        results = api.stress(
            state(ctx).store, model_list, seq_len=seq_len, hidden=hidden, batch=batch,
            seeds=seed_list, runs=run or [], dtype=dtype, rtol=rtol, eps=eps, threads=threads,
            k=k, overrides=api.parse_assignments(set_), **progress,
        )  # fmt: skip
    finally:
        if not quiet:
            bar.stop()
    rows = [(r.run_id, r.model, r.source, r.seed, r.gain, r.horizon, r.verdict,
             r.spectra.get("spectral_norm"), r.spectra.get("decay_bound"), r.decay)
            for r in results]  # fmt: skip
    render(COLUMNS, rows, fmt, title=f"stress at T={seq_len}")
    if plot:
        api.plot_stress(results, plot)
        typer.echo(f"plot written to {plot}", err=True)
