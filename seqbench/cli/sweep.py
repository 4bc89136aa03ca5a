"""`seqbench sweep`: grids of training runs over k × models × tasks × seeds (× any field)."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench.cli._options import (
    EXIT_INTERRUPTED,
    interrupt_exit_code,
    sigterm_as_interrupt,
    state,
)
from seqbench.cli._output import Format, FormatOption, render

app = typer.Typer(
    help=(
        "Run a grid of training runs: resumable (completed points are skipped), crash-safe, "
        "on a local process pool or a Ray cluster.\n\n"
        "Example: seqbench sweep --models rnn,lstm,tcn --tasks adding --k 1:256:x2 --seeds 0,1,2"
    ),
    invoke_without_command=True,
)


def _default_workers() -> int:
    import torch

    from seqbench.sweep.executors import usable_cpus

    return torch.cuda.device_count() if torch.cuda.is_available() else usable_cpus()


@app.callback()
def sweep(
    ctx: typer.Context,
    models: Annotated[str | None, typer.Option(help="Comma-separated models.")] = None,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated tasks.")] = None,
    k: Annotated[str | None, typer.Option(help="k values: 1,2,4 or start:stop:xF.")] = None,
    seeds: Annotated[str, typer.Option(help="Seeds: 0,1,2 or 0:9:+1.")] = "0",
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Another axis: field=v1,v2 (repeatable)."),
    ] = None,
    spec: Annotated[str | None, typer.Option(help="A TOML sweep spec file.")] = None,
    preset: Annotated[
        str | None, typer.Option(help="miller-hardt, indrnn-adding or bai-tcn.")
    ] = None,
    scale: Annotated[str, typer.Option(help="Preset size: tiny, small or paper.")] = "small",
    name: Annotated[str | None, typer.Option(help="Sweep name (default: from the spec).")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Parallel runs (default: one per device / core).")
    ] = None,
    executor: Annotated[str, typer.Option(help="local or ray.")] = "local",
    address: Annotated[
        str, typer.Option(help="Ray: auto, local (start one here) or HOST:PORT.")
    ] = "auto",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the grid; run nothing.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Re-run done points; replace a reused name's spec.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run failed points again.")
    ] = False,
    stale_after: Annotated[
        float, typer.Option(help="Seconds without heartbeat before a running row is stale.")
    ] = 60.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    fmt: FormatOption = Format.table,
) -> None:
    """Run a sweep (see `seqbench sweep status` for progress).

    Example: seqbench sweep --preset miller-hardt --scale tiny --workers 2
    """
    if ctx.invoked_subcommand is not None:
        return
    from seqbench.errors import UsageError
    from seqbench.sweep import spec as specs

    if executor not in ("local", "ray"):
        raise UsageError(f"--executor must be local or ray, got {executor!r}")
    if workers is not None and workers <= 0:
        raise UsageError(f"--workers must be positive, got {workers}")
    if not stale_after > 0 or stale_after == float("inf"):
        raise UsageError(f"--stale-after must be a positive number of seconds, got {stale_after}")
    sources = [bool(preset), bool(spec), bool(models or tasks or k or set_)]
    if sum(sources) == 0:
        raise UsageError("give --models and --tasks, a --spec file or a --preset")
    if sum(sources) > 1:
        raise UsageError("give grid flags, --spec or --preset, not several")
    if preset:
        grids = specs.preset_grids(preset, scale)
        if seeds != "0":
            for g in grids:
                g["seeds"] = specs.parse_range(seeds)
        spec_doc = {"preset": preset, "scale": scale, "grids": grids}
        if seeds == "0":  # the preset as shipped: a name to quote in docs and --sweep filters
            name = name or f"{preset}-{scale}"
    elif spec:
        loaded = specs.load_spec_file(spec)
        name = name or loaded.get("name")
        spec_doc = {"grids": loaded["grids"]}
    else:
        spec_doc = {"grids": [specs.grid_from_flags(models, tasks, k, seeds, set_)]}
    points = specs.expand(spec_doc["grids"])  # validates every point before any write
    name = name or specs.spec_name(spec_doc)
    if dry_run:
        _print_grid(points, fmt)
        typer.echo(f"sweep {name!r}: {len(points)} points", err=True)
        return
    from seqbench.sweep.runner import plan_sweep, run_sweep

    if executor == "ray":
        from seqbench.sweep.executors import RayExecutor

        ray_exec = RayExecutor(address, workers)  # an unreachable cluster fails before any write

        def make_executor():
            return ray_exec
    else:
        from seqbench.sweep.executors import LocalExecutor

        n_workers = workers or _default_workers()

        def make_executor():
            return LocalExecutor(n_workers)

    store = state(ctx).store()
    sweep_id = plan_sweep(store, name, spec_doc, points, force)
    bar, on_start, on_result = _progress(quiet, name)
    out = None
    code = EXIT_INTERRUPTED
    try:
        with sigterm_as_interrupt():
            out = run_sweep(store, sweep_id, make_executor, force=force,
                            retry_failed=retry_failed, stale_after=stale_after,
                            on_start=on_start, on_result=on_result)  # fmt: skip
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the points in flight are interrupted
        code = interrupt_exit_code(e)
    finally:
        if bar is not None:
            bar.stop()
    if out is None:
        typer.echo(f"sweep {name!r} interrupted: the same command resumes it", err=True)
        raise typer.Exit(code)
    c = out.counts
    typer.echo(
        f"sweep {name!r}: {out.total} points, {out.skipped} already done or skipped, ran "
        f"{out.ran}: {c.get('completed', 0)} completed, {c.get('diverged', 0)} diverged, "
        f"{c.get('failed', 0)} failed"
        + (f", {c['crashed']} crashed (their workers died; run the command again)"
           if c.get("crashed") else "")
    )  # fmt: skip


def _progress(quiet: bool, name: str):
    if quiet:
        return None, lambda total, todo: None, lambda status: None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn(f"[bold]{name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    tid = {}

    def on_start(total, todo):
        bar.start()
        tid["id"] = bar.add_task(name, total=todo, failed=0)

    def on_result(status):
        task = bar.tasks[0]
        bar.update(tid["id"], advance=1,
                   failed=task.fields["failed"] + (status == "failed"))  # fmt: skip

    return bar, on_start, on_result


def _print_grid(points, fmt: Format) -> None:
    from dataclasses import fields as dc_fields

    from seqbench.config import NOT_HASHED, RunConfig

    names = [f.name for f in dc_fields(RunConfig) if f.name not in NOT_HASHED]
    varying = [n for n in names if len({repr(getattr(p, n)) for p in points}) > 1]
    cols = ["#", *dict.fromkeys(["model", "task", *varying])]
    rows = [[i, *(getattr(p, c) for c in cols[1:])] for i, p in enumerate(points)]
    render(cols, rows, fmt, title=f"{len(points)} points")


@app.command("status")
def status(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Only this sweep.")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Show done / running / failed / remaining points per sweep.

    Example: seqbench sweep status my-sweep --format json
    """
    from seqbench.sweep.runner import sweep_status

    rows = sweep_status(state(ctx).reader(), name)
    cols = ["name", "status", "total", "completed", "diverged", "running", "failed", "remaining",
            "created"]  # fmt: skip
    render(cols, [[r[c] for c in cols] for r in rows], fmt)
