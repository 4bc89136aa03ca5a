"""`seqbench train`: one training run, saved in the store."""

from __future__ import annotations

from typing import Annotated

import typer

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


def register(app: typer.Typer) -> None:
    app.command("train", epilog=_defaults_epilog())(train)


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


def train(
    ctx: typer.Context,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model name (seqbench models).")
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="Task name (seqbench tasks).")
    ] = None,
    seq_len: Annotated[int | None, typer.Option(help="Sequence length T (task default).")] = None,
    k: Annotated[
        int | None,
        typer.Option(help="Truncation length (TBPTT) for recurrent models, context otherwise."),
    ] = None,
    hidden: Annotated[int | None, typer.Option(help="Width H (model default).")] = None,
    params: Annotated[
        int | None, typer.Option(help="Parameter budget: choose H to land within 5%.")
    ] = None,
    layers: Annotated[int | None, typer.Option(help="Depth.")] = None,
    steps: Annotated[int | None, typer.Option(help="Optimiser steps.")] = None,
    epochs: Annotated[
        int | None, typer.Option(help="Epochs (tasks with a fixed train set).")
    ] = None,
    batch_size: Annotated[int | None, typer.Option(help="Batch size.")] = None,
    lr: Annotated[
        float | None,
        typer.Option(
            help="Learning rate (a family may train some parameters at a rate of their own, "
            "as its reference code does: ModelSpec.own_lr, docs/science.md)."
        ),
    ] = None,
    optimizer: Annotated[str | None, typer.Option(help="adam, sgd or rmsprop.")] = None,
    clip: Annotated[float | None, typer.Option(help="Gradient-norm clipping threshold.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for data and initialisation.")] = None,
    device: Annotated[str | None, typer.Option(help="auto, cpu or cuda.")] = None,
    stable: Annotated[
        bool, typer.Option("--stable", help="Project onto the stable set after every step.")
    ] = False,
    lam: Annotated[float | None, typer.Option(help="Stability bound λ for --stable.")] = None,
    backend: Annotated[
        str | None, typer.Option(help="IndRNN recurrence: auto, numba, cpu, triton or torch.")
    ] = None,
    path: Annotated[
        str | None,
        typer.Option(help="Data file: .npz or a .npy directory (--task file), text (--task text)."),
    ] = None,
    subset: Annotated[
        int | None, typer.Option(help="Real-data tasks: use only the first N examples.")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="key=value label (repeatable).")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="A name for the run (usable wherever a run id is).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Any config field as key=value (repeatable)."),
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="A TOML file of config fields.")
    ] = None,
    save_checkpoint: Annotated[
        bool, typer.Option("--save-checkpoint", help="Save the best weights; path in the run.")
    ] = False,
    from_run: Annotated[
        str | None,
        typer.Option(
            "--from-run", help="Start from a stored run's config (flags and --set change it)."
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the resolved config as TOML; train nothing."),
    ] = False,
    quiet: QuietOption = False,
    threads: ThreadsOption = None,
) -> None:
    """Train one model on one task and save the run (config, metrics, summaries) in the store.

    Flags override --config, which overrides --from-run; the fully resolved config is stored
    with the run. Defaults follow the papers for each (model, task) pair and finish in minutes
    on a CPU. --dry-run prints the resolved config as TOML, a file that --config accepts.

    Example: seqbench train --model indrnn --task adding --seq-len 100

    Example: seqbench train --from-run 12 --set lr=0.0005 --dry-run > rerun.toml

    Example: seqbench train --model gru --task file --path data.npz (docs/your-own.md)
    """
    flags = {
        "seq_len": seq_len,
        "k": k,
        "hidden": hidden,
        "params": params,
        "layers": layers,
        "steps": steps,
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "optimizer": optimizer,
        "clip": clip,
        "seed": seed,
        "device": device,
        "lam": lam,
        "backend": backend,
        "path": path,
        "subset": subset,
    }
    api.check_threads(threads)  # before a store is opened
    overrides = api.flags_and_sets(flags, set_)
    if stable:
        overrides["stable"] = True
    if save_checkpoint:
        overrides["save_checkpoint"] = True
    cfg = api.train_config_from(
        model,
        task,
        overrides=overrides,
        config_file=config,
        from_run=from_run,
        store=state(ctx).store("read") if from_run is not None else None,
        tags=api.parse_assignments(tag, "--tag"),
    )
    api.check_run_name(name)
    note = api.data_note(cfg)
    if note and not quiet and not dry_run:
        typer.echo(note, err=True)
    if dry_run:
        typer.echo(api.config_toml(cfg), nl=False)
        return
    api.check_fits(cfg)  # before the store is opened
    store = state(ctx).store()
    try:
        with sigterm_as_interrupt():
            outcome = api.train_config(
                cfg, db=store, progress=_progress(quiet), name=name, threads=threads
            )
    except KeyboardInterrupt as e:
        typer.echo("interrupted: the run is saved with status 'interrupted'", err=True)
        raise typer.Exit(interrupt_exit_code(e)) from None
    s = outcome.summaries
    if outcome.status == "diverged":
        if "diverged_step" in s:  # the training loss blew up
            why = f"at step {int(s['diverged_step'])} (loss {s['final_train_loss']})"
        else:  # training finished, the result is not one (not finite, far worse than trivial)
            why = f"after training: {outcome.error}"
        typer.echo(f"run {outcome.run_id} diverged {why}", err=True)
        raise typer.Exit(1)
    metric = api.task_metric(cfg.task)
    base = f" (baseline {s['baseline']:.4g})" if "baseline" in s else ""
    typer.echo(
        f"run {outcome.run_id} completed: test {metric} {s['test_metric']:.4g}{base}, "
        f"{int(s['steps'])} steps in {s['wall_seconds']:.1f}s"
    )
