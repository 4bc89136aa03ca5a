"""`seqbench train`: one training run, saved in the store."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperCommand

from seqbench import api
from seqbench.cli._options import (
    QuietOption,
    ThreadsOption,
    interrupt_exit_code,
    sigterm_as_interrupt,
    state,
)


def _defaults_epilog() -> str:
    """Every default `train` resolves, by layer, for its --help."""

    def fmt(d):
        return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())

    lines = [
        "Defaults (later wins): each field's own < the model family's < the task's < the "
        "papers' for the (model, task) pair < --config < flags and --set."
    ]
    for layer, entries in api.default_layers():
        cells = "; ".join(f"{name} {fmt(d)}".strip() for name, d in entries)
        lines.append(f"{layer}: {cells}")
    lines.append("One pair's resolved config: seqbench train -m tcn -t copy --dry-run")
    return "\n\n".join(lines)


class _TrainCommand(TyperCommand):
    """`train`, whose --help ends with every default by layer: read from the registries when
    the help is shown, not when the command line is built (`seqbench --help` needs none)."""

    @property
    def epilog(self) -> str:
        return _defaults_epilog()

    @epilog.setter
    def epilog(self, _value) -> None:
        pass


def register(app: typer.Typer) -> None:
    app.command(
        "train", cls=_TrainCommand, short_help="Train one model on one task and save the run."
    )(train)


def _progress(quiet: bool):
    if quiet:
        return api.Progress()
    from seqbench.cli._progress import Bar

    bar = Bar("train", ("loss", "valid"))

    def on_run(run_id, cfg):
        typer.echo(
            f"run {run_id} started: {cfg.model} on {cfg.task}, T={cfg.seq_len}, {cfg.steps} steps",
            err=True,
        )

    return api.Progress(
        on_run=on_run,
        on_start=bar.start,
        on_step=lambda step, loss: bar.update(step, loss=f"{loss:.4g}"),
        on_eval=lambda step, ev: bar.update(step, valid=f"{ev['metric']:.4g}"),
        on_end=bar.stop,
    )


# The flags that set a config field of the same name (with --stable and --save-checkpoint,
# which set theirs to true); the rest say how to run.
_FIELDS = ("seq_len", "k", "hidden", "params", "layers", "steps", "max_steps", "epochs",
           "batch_size", "lr", "optimizer", "clip", "seed", "device", "lam", "backend", "path",
           "subset")  # fmt: skip
_Int = int | None
Model = Annotated[str | None, typer.Option("--model", "-m", help="Model name (seqbench models).")]
Task = Annotated[str | None, typer.Option("--task", "-t", help="Task name (seqbench tasks).")]
SeqLen = Annotated[_Int, typer.Option(help="Sequence length T (task default).")]
K = Annotated[
    _Int, typer.Option(help="Truncation length (TBPTT) for recurrent models, context otherwise.")
]
Hidden = Annotated[_Int, typer.Option(help="Width H (model default).")]
Params = Annotated[_Int, typer.Option(help="Parameter budget: choose H to land within 5%.")]
Layers = Annotated[_Int, typer.Option(help="Depth.")]
Steps = Annotated[
    str | None,
    typer.Option(
        help="Optimiser steps, or 'auto': the pair's steps at least, then on until the "
        "validation metric has stopped improving, at most 10x them (or --max-steps).",
        metavar="INTEGER|auto",
    ),
]
MaxSteps = Annotated[
    _Int,
    typer.Option(help="Train past --steps until converged, at most this many steps (as 'auto')."),
]
Epochs = Annotated[_Int, typer.Option(help="Epochs (tasks with a fixed train set).")]
BatchSize = Annotated[_Int, typer.Option(help="Batch size.")]
Lr = Annotated[
    float | None,
    typer.Option(
        help="Learning rate (a family may train some parameters at a rate of their own, "
        "as its reference code does: ModelSpec.own_lr, docs/science.md)."
    ),
]
Optimizer = Annotated[str | None, typer.Option(help="adam, sgd or rmsprop.")]
Clip = Annotated[float | None, typer.Option(help="Gradient-norm clipping threshold.")]
Seed = Annotated[_Int, typer.Option(help="Seed for data and initialisation.")]
Device = Annotated[str | None, typer.Option(help="auto, cpu or cuda.")]
Stable = Annotated[
    bool, typer.Option("--stable", help="Project onto the stable set after every step.")
]
Lam = Annotated[float | None, typer.Option(help="Stability bound λ for --stable.")]
Backend = Annotated[
    str | None, typer.Option(help="IndRNN recurrence: auto, numba, cpu, triton or torch.")
]
Path = Annotated[
    str | None,
    typer.Option(help="Data file: .npz or a .npy directory (--task file), text (--task text)."),
]
Subset = Annotated[_Int, typer.Option(help="Real-data tasks: use only the first N examples.")]
Tag = Annotated[list[str] | None, typer.Option("--tag", help="key=value label (repeatable).")]
Name = Annotated[str | None, typer.Option(help="A name for the run (usable wherever a run id is).")]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="A config field as key=value (repeatable); "
        "one the model and task do not read is refused (the --set column of models, tasks).",
    ),
]
Config = Annotated[str | None, typer.Option("--config", help="A TOML file of config fields.")]
SaveCheckpoint = Annotated[
    bool, typer.Option("--save-checkpoint", help="Save the best weights; path in the run.")
]
FromRun = Annotated[
    str | None,
    typer.Option(
        "--from-run", help="Start from a stored run's config (flags and --set change it)."
    ),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print the resolved config as TOML; train nothing.")
]


def train(
    ctx: typer.Context,
    model: Model = None,
    task: Task = None,
    seq_len: SeqLen = None,
    k: K = None,
    hidden: Hidden = None,
    params: Params = None,
    layers: Layers = None,
    steps: Steps = None,
    max_steps: MaxSteps = None,
    epochs: Epochs = None,
    batch_size: BatchSize = None,
    lr: Lr = None,
    optimizer: Optimizer = None,
    clip: Clip = None,
    seed: Seed = None,
    device: Device = None,
    stable: Stable = False,
    lam: Lam = None,
    backend: Backend = None,
    path: Path = None,
    subset: Subset = None,
    tag: Tag = None,
    name: Name = None,
    set_: Sets = None,
    config: Config = None,
    save_checkpoint: SaveCheckpoint = False,
    from_run: FromRun = None,
    dry_run: DryRun = False,
    quiet: QuietOption = False,
    threads: ThreadsOption = None,
) -> None:
    """Train one model on one task and save the run (config, metrics, summaries) in the store.

    Flags override --config, which overrides --from-run; the fully resolved config is stored
    with the run. Defaults follow the papers for each (model, task) pair and finish in minutes
    on a CPU. --dry-run prints the resolved config as TOML, a file that --config accepts.

    Example: seqbench train --model indrnn --task adding --seq-len 100

    Example: seqbench train --model gru --task adding --seq-len 10 --steps 500 --max-steps 5000

    Example: seqbench train --from-run 12 --set lr=0.0005 --dry-run > rerun.toml

    Example: seqbench train --model gru --task file --path data.npz (docs/your-own.md)
    """
    given = locals()
    api.check_threads(threads)  # before a store is opened
    overrides = api.flags_and_sets({f: given[f] for f in _FIELDS}, set_)
    overrides.update({f: True for f in ("stable", "save_checkpoint") if given[f]})
    cfg = api.train_config_from(
        model, task, overrides=overrides, config_file=config, from_run=from_run,
        store=state(ctx).store("read") if from_run is not None else None,
        tags=api.parse_assignments(tag, "--tag"),
    )  # fmt: skip
    api.check_run_name(name)
    note = _data_note(cfg)
    if note and not quiet and not dry_run:
        typer.echo(note, err=True)
    if dry_run:
        typer.echo(api.config_toml(cfg), nl=False)
        return
    api.check_fits(cfg)  # before the store is opened
    try:
        with sigterm_as_interrupt():
            outcome = api.train_config(  # the store opened once the task and model are built
                cfg, db=lambda: state(ctx).store(), progress=_progress(quiet), name=name,
                threads=threads,
            )  # fmt: skip
    except KeyboardInterrupt as e:
        typer.echo("interrupted: the run is saved with status 'interrupted'", err=True)
        raise typer.Exit(interrupt_exit_code(e)) from None
    _say(outcome)


def _say(outcome) -> None:
    """The run's one line: completed with its test metric, or diverged (exit 1) and why."""
    s = outcome.summaries
    if outcome.status == "diverged":
        if "diverged_step" in s:  # the training loss blew up
            why = f"at step {int(s['diverged_step'])} (loss {s['final_train_loss']})"
        else:  # training finished, the result is not one (not finite, far worse than trivial)
            why = f"after training: {outcome.error}"
        typer.echo(f"run {outcome.run_id} diverged {why}", err=True)
        raise typer.Exit(1)
    metric = api.task_metric(outcome.config.task)
    base = f" (baseline {s['baseline']:.4g})" if "baseline" in s else ""
    steps, c = f"{int(s['steps'])} steps", outcome.config
    if s.get("stopped_early"):
        steps += f" (stopped early: at most {c.max_steps or c.steps})"
    elif s.get("converged") == 1.0:
        steps += f" (converged: at least {c.steps}, at most {c.max_steps})"
    elif "converged" in s:
        steps += " (the cap, still improving: train longer with --max-steps N)"
    typer.echo(
        f"run {outcome.run_id} completed: test {metric} {s['test_metric']:.4g}{base}, "
        f"{steps} in {s['wall_seconds']:.1f}s"
    )


def _data_note(cfg) -> str | None:
    """One line on a file task's data, as `train` prints it (None for other tasks)."""

    if not api.is_file_task(cfg.task):
        return None
    f = api.data_file(cfg.path, cfg.target, cfg.split_seed, cfg.to_dict())
    sizes = "/".join(str(f.sizes[s]) for s in ("train", "valid", "test"))
    if f.table is not None:
        t = f.table
        x = t["x_cols"] or f"{t['y_cols']}'s own past"
        return (
            f"data {f.path}: forecast {t['y_cols']} {t['horizon']} step(s) after windows of "
            f"T={f.seq_len} rows of {x}; {t['series']} series; train/valid/test {sizes} "
            f"(split by time); baseline mse {f.baseline:.4g} (the train mean), persistence "
            f"{f.persistence:.4g} (the last value)"
        )
    how = {
        "inferred": "inferred from the arrays; --set target=... to choose",
        "metadata": "from the file's metadata",
    }.get(f.kind_source, "given")
    split = "the file's splits" if f.split_seed is None else f"split seed {f.split_seed}"
    return (
        f"data {f.path}: {f.kind} ({how}); T={f.seq_len}; train/valid/test {sizes} "
        f"({split}); baseline {f.metric} {f.baseline:.4g} ({f.baseline_note})"
    )
