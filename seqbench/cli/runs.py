"""`seqbench runs` and `seqbench show`: list runs and look at one."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, render, render_mapping


def register(app: typer.Typer) -> None:
    app.command("runs")(runs)
    app.command("show")(show)


def runs(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    status: Annotated[
        str | None,
        typer.Option(help="running, completed, failed, diverged, interrupted or crashed."),
    ] = None,
    sweep: Annotated[str | None, typer.Option(help="Only runs of this sweep (by name).")] = None,
    kind: Annotated[str | None, typer.Option(help="train, stress or bench.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first (0: all).")] = 50,
    fmt: FormatOption = Format.table,
) -> None:
    """List runs, newest first.

    Example: seqbench runs --model lstm --status completed --format csv
    """
    listed = api.list_runs(
        state(ctx).reader,
        model=model,
        task=task,
        status=status,
        sweep=sweep,
        kind=kind,
        limit=limit,
    )
    rows = [
        (
            r.id,
            r.kind,
            r.status,
            r.model,
            r.task,
            r.k,
            r.seq_len,
            r.seed,
            metric,
            r.wall_seconds,
            r.created_at,
        )
        for r, metric in listed
    ]
    cols = ["id", "kind", "status", "model", "task", "k", "seq_len", "seed", "test_metric"]
    render([*cols, "wall_s", "created"], rows, fmt)
    if limit and len(rows) == limit:  # there may be more: say how many
        filters = dict(model=model, task=task, status=status, sweep=sweep, kind=kind)
        total = api.count_runs(state(ctx).reader(), **filters)
        if total > limit:
            typer.echo(f"showing {limit} of {total} runs (--limit 0 for all)", err=True)


def show(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id (or a uuid prefix).")],
    fmt: FormatOption = Format.table,
) -> None:
    """Show one run: its config, environment, summary metrics and last metric values.

    Example: seqbench show 3 --format json
    """
    r, summaries, last = api.run_details(state(ctx).reader(), run)
    pairs: list[tuple[str, object]] = [
        ("id", r.id),
        ("uuid", r.uuid),
        ("kind", r.kind),
        ("status", r.status),
        ("model", r.model),
        ("task", r.task),
        ("k", r.k),
        ("seq_len", r.seq_len),
        ("seed", r.seed),
        ("config_hash", r.config_hash),
        ("created_at", r.created_at),
        ("started_at", r.started_at),
        ("finished_at", r.finished_at),
        ("wall_seconds", r.wall_seconds),
        ("n_params", r.n_params),
        ("checkpoint", r.checkpoint),
        ("tags", r.tags),
    ]
    pairs += [(f"config.{k}", v) for k, v in sorted((r.config or {}).items())]
    pairs += [(f"env.{k}", v) for k, v in sorted((r.environment or {}).items())]
    pairs += [(f"summary.{k}", v) for k, v in summaries.items()]
    pairs += [(f"last.{k}", f"{v:.6g} @ step {step}") for k, (step, v) in last.items()]
    if r.error:
        pairs.append(("error", r.error.strip().splitlines()[-1]))
    render_mapping(pairs, fmt, title=f"run {r.id}")
