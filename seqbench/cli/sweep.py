"""`seqbench sweep`: grids of training runs over k × models × tasks × seeds (× any field)."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._options import (
    AddressOption,
    ExecutorOption,
    QuietOption,
    RetryFailedOption,
    WorkersOption,
    joined,
    resumable,
    state,
)
from seqbench.cli._output import Format, FormatOption, render
from seqbench.errors import SeqbenchError, UsageError

app = typer.Typer(
    help=(
        "Run a grid of training runs: resumable (completed points are skipped), crash-safe, "
        "on a local process pool or a Ray cluster.\n\n"
        "Example: seqbench sweep --models rnn,lstm,tcn --tasks adding --k 1:256:x2 --seeds 0,1,2"
    ),
    invoke_without_command=True,
)


Models = Annotated[list[str] | None, typer.Option("--models", "--model", help="Models: rnn,lstm.")]
Tasks = Annotated[list[str] | None, typer.Option("--tasks", "--task", help="Tasks: adding,copy.")]
Ks = Annotated[list[str] | None, typer.Option(help="k values: 1,2,4 or 1:256:x2.")]
Seeds = Annotated[
    list[str] | None, typer.Option("--seeds", "--seed", help="Seeds: 0,1,2 or 0:9:+1.")
]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Another axis: field=v1,v2 (repeatable); "
        "each point takes it where its model and task read it.",
    ),
]
Spec = Annotated[str | None, typer.Option(help="A TOML sweep spec file.")]
Preset = Annotated[
    str | None,
    typer.Option(
        help="miller-hardt, indrnn-adding, bai-tcn, zoology-mqar (recall against state "
        "size), lru-stable (the LRU held to |λ| ≤ λ beside TCNs of context k), "
        "memory-functions (four memory kernels across six families: seqbench memory kernels), "
        "or canary (the CI gate's: every family on a task each learns in 150 steps)."
    ),
]
Scale = Annotated[str, typer.Option(help="Preset size: tiny, small or paper.")]
Name = Annotated[str | None, typer.Option(help="Sweep name (default: from the spec).")]
Gpus = Annotated[
    str | None,
    typer.Option(help="GPUs for points on CUDA, e.g. 0,2 (default: every visible GPU)."),
]
RunsPerGpu = Annotated[
    int, typer.Option(help="Points run at once on each GPU (Ray: a 1/N GPU share).")
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the grid; run nothing.")]
Force = Annotated[
    bool, typer.Option("--force", help="Re-run done points; replace a reused name's spec.")
]
Replan = Annotated[
    bool,
    typer.Option(
        "--replan",
        help="Take a reused name's new spec (a preset a newer seqbench extended); points "
        "already done keep their runs.",
    ),
]
StaleAfter = Annotated[
    float, typer.Option(help="Seconds without heartbeat before a running row is stale.")
]
AllowFailed = Annotated[
    bool,
    typer.Option("--allow-failed", help="Exit 0 even when points failed (default: exit 1)."),
]


@app.callback()
def sweep(
    ctx: typer.Context,
    models: Models = None,
    tasks: Tasks = None,
    k: Ks = None,
    seeds: Seeds = None,
    set_: Sets = None,
    spec: Spec = None,
    preset: Preset = None,
    scale: Scale = "small",
    name: Name = None,
    workers: WorkersOption = None,
    gpus: Gpus = None,
    runs_per_gpu: RunsPerGpu = 1,
    executor: ExecutorOption = "local",
    address: AddressOption = "auto",
    dry_run: DryRun = False,
    force: Force = False,
    replan: Replan = False,
    retry_failed: RetryFailedOption = False,
    stale_after: StaleAfter = 60.0,
    allow_failed: AllowFailed = False,
    quiet: QuietOption = False,
    fmt: FormatOption = Format.table,
) -> None:
    """Run a sweep (see `seqbench sweep status` for progress). Exits 1 when any point is left
    without a result (failed or crashed), so `sweep && check` never passes on nothing.

    Example: seqbench sweep --preset miller-hardt --scale tiny --workers 2
    """
    if ctx.invoked_subcommand is not None:
        return
    api.check_sweep_flags(executor, workers, runs_per_gpu, stale_after)
    plan = api.sweep_plan(
        models=joined(models), tasks=joined(tasks), k=joined(k), seeds=joined(seeds) or "0",
        set_=set_, spec=spec, preset=preset, scale=scale, name=name,
    )  # fmt: skip
    if dry_run:
        _say_budget(plan)
        render(*api.sweep_grid(plan.points), fmt, title=f"{len(plan.points)} points")
        secs = api.sweep_cost(plan.points, workers)
        typer.echo(
            f"sweep {plan.name!r}: {len(plan.points)} points; "
            + (f"about {secs:.0f} s to train them all here (a timing probe of each model)"
               if secs is not None
               else "no time estimate (timing each model here would take too long)"),
            err=True,
        )  # fmt: skip
        return
    bar, on_points, on_result = _progress(quiet, plan.name)

    def on_start(total: int, todo: int) -> None:  # the plan stored: a refused one says only why
        _say_budget(plan)
        on_points(total, todo)

    # Ctrl-C or SIGTERM: the points in flight are recorded interrupted
    out = resumable(
        "sweep", plan.name,
        lambda: api.run_sweep(
            state(ctx).store, plan, executor=executor, address=address, workers=workers,
            gpus=_gpu_list(gpus), runs_per_gpu=runs_per_gpu, force=force, replan=replan,
            retry_failed=retry_failed, stale_after=stale_after, on_start=on_start,
            on_result=on_result,
        ),
        bar.stop if bar is not None else lambda: None,
    )  # fmt: skip
    _say(out, plan.name, allow_failed)


def _say(out, name: str, allow_failed: bool) -> None:
    """The sweep's one line of counts; exit 1 (SeqbenchError) when points have no result."""
    c = out.counts
    crashed = c.get("crashed")
    typer.echo(
        f"sweep {name!r}: {out.total} points, {out.skipped} already done or skipped, ran "
        f"{out.ran}: {c.get('completed', 0)} completed, {c.get('diverged', 0)} diverged, "
        f"{c.get('failed', 0)} failed"
        + (f", {crashed} crashed (their workers died; run the command again)" if crashed else "")
    )
    if out.unfinished and not allow_failed:
        raise SeqbenchError(
            f"{out.unfinished} of {out.total} point(s) of sweep {name!r} have no result (failed "
            "or crashed): see `seqbench runs --status failed`; --retry-failed runs them again, "
            "--allow-failed exits 0"
        )


def _gpu_list(gpus: str | None) -> list[int] | None:
    if gpus is None:
        return None
    try:
        return [int(g) for g in api.split_list(gpus)]
    except ValueError:
        raise UsageError(f"--gpus expects GPU indices like 0,2, got {gpus!r}") from None


def _say_budget(plan) -> None:
    if plan.held_budget is not None:
        typer.echo(
            f"sweep {plan.name!r}: every model at {plan.held_budget:,} parameters at every k "
            "(one budget across k; --set hidden=H keeps a width, --set params=N another budget)",
            err=True,
        )


def _progress(quiet: bool, name: str):
    if quiet:
        return None, lambda total, todo: None, lambda status: None
    from seqbench.cli._progress import Bar

    bar = Bar(name, ("failed",))
    failed = 0

    def on_start(total, todo):
        typer.echo(f"sweep {name!r}: {total} points, {todo} to run", err=True)
        bar.start(todo)

    def on_result(status):
        nonlocal failed
        failed += status == "failed"
        bar.advance(failed=failed)

    return bar, on_start, on_result


@app.command("status")
def status(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Only this sweep.")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Show done / running / failed / remaining points per sweep.

    Example: seqbench sweep status my-sweep --format json
    """
    rows = api.sweep_status(state(ctx).store("read"), name)
    cols = [
        "name",
        "status",
        "total",
        "completed",
        "diverged",
        "running",
        "failed",
        "remaining",
        "created",
    ]
    render(cols, [[r[c] for c in cols] for r in rows], fmt)
