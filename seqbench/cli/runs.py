"""`seqbench runs` and `seqbench show`: list runs and look at one."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._flags import flags
from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, output_path, render, render_mapping
from seqbench.errors import SeqbenchError, UsageError

app = typer.Typer(
    help="List runs, newest first (the subcommands name, tag, untag, archive, restore and "
    "delete manage them).\n\n"
    "Example: seqbench runs --model lstm --status completed --tag owner=me",
    invoke_without_command=True,
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="runs", short_help="List runs; name, tag, archive or delete them.")
    root.command("show", short_help="Show one run: config, environment and metrics.")(show)
    root.command("diff", short_help="Compare two runs: config, environment, summaries.")(diff)
    root.command("curves", short_help="Learning curves of runs: a table or a figure.")(curves)


@app.callback()
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
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Only runs tagged key=value (repeatable).")
    ] = None,
    archived: Annotated[
        bool, typer.Option("--archived", help="List the archived runs instead.")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            help="At most this many, newest first (0: all; default 50 in a table, all in csv/json)."
        ),
    ] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """List runs, newest first (archived runs only with --archived). The metric column names
    what test_metric is for the run's task (mse, acc, bpc, ...).

    Example: seqbench runs --model lstm --status completed --format csv
    """
    if ctx.invoked_subcommand is not None:
        return
    if limit is None:
        limit = 0 if fmt in (Format.csv, Format.json) else 50
    tags = api.parse_assignments(tag, "--tag") or None
    filters = dict(
        model=model, task=task, status=status, sweep=sweep, kind=kind, tags=tags, archived=archived
    )
    listed = api.list_runs(lambda: state(ctx).store("read"), limit=limit, **filters)
    rows = [
        (
            r.id,
            r.name,
            r.kind,
            r.status,
            r.model,
            r.task,
            r.k,
            r.seq_len,
            r.seed,
            api.metric_name(r.task) if r.kind == "train" else None,
            metric,
            r.wall_seconds,
            r.created_at,
        )
        for r, metric in listed
    ]
    cols = ["id", "name", "kind", "status", "model", "task", "k", "seq_len", "seed"]
    render([*cols, "metric", "test_metric", "wall_s", "created"], rows, fmt)
    if limit and len(rows) == limit:  # there may be more: say how many
        total = api.count_runs(state(ctx).store("read"), **filters)
        if total > limit:
            typer.echo(f"showing {limit} of {total} runs (--limit 0 for all)", err=True)


RunsArgument = Annotated[list[str], typer.Argument(help="Run ids (or names, or uuid prefixes).")]


@app.command("name")
def name_run(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id (or name, or uuid prefix).")],
    name: Annotated[str | None, typer.Argument(help="The new name.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Take the run's name away.")] = False,
) -> None:
    """Name a run; the name then works wherever a run is asked for (show, diff, curves, ...).
    Names need not be unique, but a name that several runs share must be given as an id.

    Example: seqbench runs name 3 lstm-baseline && seqbench show lstm-baseline
    """

    if (name is None) == (not clear):
        raise UsageError("give a name, or --clear to take it away")
    run_id = api.name_run(state(ctx).store("update"), run, None if clear else name)
    typer.echo(f"run {run_id}: " + ("name cleared" if clear else f"named {name!r}"))


@app.command("archive")
def archive_runs(ctx: typer.Context, run: RunsArgument) -> None:
    """Archive runs: they leave runs, report, check and baseline save, and keep every row
    (runs --archived lists them; runs restore brings them back). A sweep still counts an
    archived run's point as done.

    Example: seqbench runs archive 7 8
    """
    ids = api.archive_runs(state(ctx).store("update"), run)
    typer.echo(f"archived {len(ids)} run(s): {', '.join(map(str, ids))}")


@app.command("restore")
def restore_runs(ctx: typer.Context, run: RunsArgument) -> None:
    """Bring archived runs back into lists and reports.

    Example: seqbench runs restore 7 8
    """
    ids = api.archive_runs(state(ctx).store("update"), run, archived=False)
    typer.echo(f"restored {len(ids)} run(s): {', '.join(map(str, ids))}")


@app.command("tag")
def tag_runs(
    ctx: typer.Context,
    run: RunsArgument,
    tag: Annotated[list[str], typer.Option("--tag", help="key=value to set (repeatable).")],
) -> None:
    """Tag runs after the fact (a key already there gets the new value).

    Example: seqbench runs tag 3 4 --tag paper=fig2 --tag owner=me
    """
    ids = api.tag_runs(state(ctx).store("update"), run, add=api.parse_assignments(tag, "--tag"))
    typer.echo(f"tagged {len(ids)} run(s): {', '.join(map(str, ids))}")


@app.command("untag")
def untag_runs(
    ctx: typer.Context,
    run: RunsArgument,
    key: Annotated[list[str], typer.Option("--key", help="Tag key to remove (repeatable).")],
) -> None:
    """Remove tags from runs.

    Example: seqbench runs untag 3 --key paper
    """
    ids = api.tag_runs(state(ctx).store("update"), run, remove=key)
    typer.echo(f"untagged {len(ids)} run(s): {', '.join(map(str, ids))}")


@app.command("delete")
def delete_runs(
    ctx: typer.Context,
    run: RunsArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete runs with their metrics, summaries and curves (all in one transaction).

    Example: seqbench runs delete 7 8 --yes
    """
    if not yes and not typer.confirm(f"delete {len(run)} run(s) and everything logged for them?"):
        raise typer.Exit(1)
    ids = api.delete_runs(state(ctx).store("update"), run)
    typer.echo(f"deleted {len(ids)} run(s): {', '.join(map(str, ids))}")


def show(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id (or name, or uuid prefix).")],
    fmt: FormatOption = Format.table,
) -> None:
    """Show one run: its config, environment, summary metrics and last metric values.

    Example: seqbench show 3 --format json
    """
    r, summaries, last = api.run_details(state(ctx).store("read"), run)
    pairs: list[tuple[str, object]] = [
        ("id", r.id),
        ("uuid", r.uuid),
        ("name", r.name),
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
        ("archived_at", r.archived_at),
    ]
    pairs += [(f"config.{k}", v) for k, v in sorted((r.config or {}).items())]
    pairs += [(f"env.{k}", v) for k, v in sorted((r.environment or {}).items())]
    pairs += [(f"summary.{k}", v) for k, v in summaries.items()]
    for k, (step, v) in last.items():  # numbers, in every format
        pairs += [(f"last.{k}", v), (f"last.{k}.step", step)]
    if r.error:
        pairs.append(("error", flags(r.error.strip().splitlines()[-1])))  # the library's words
    render_mapping(pairs, fmt, title=f"run {r.id}")


def diff(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(help="A run id (or name, or uuid prefix).")],
    b: Annotated[str, typer.Argument(help="The run to compare it with.")],
    metric: Annotated[str, typer.Option(help="The curve --plot overlays.")] = "valid_metric",
    plot: Annotated[str | None, typer.Option(help="Also draw both runs' curves (PNG).")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Compare two runs: the config fields that differ, what they ran on where it differs
    (versions, threads, device, host, packages, seqbench's commit and dirty flag), then every
    summary side by side with B − A.

    Example: seqbench diff 3 7 --plot diff.png
    """
    if plot:
        output_path(plot, "--plot")
    store = state(ctx).store("read")
    d = api.diff_runs(store, a, b)
    ra, rb = f"run {d.a.id}", f"run {d.b.id}"
    if d.config:
        render(["config field", ra, rb], d.config, fmt, title="config: what differs")
        if fmt == Format.markdown:
            typer.echo()  # two markdown tables in a row read as one without a blank line
    else:
        typer.echo("the two configs are the same (tags aside)", err=True)

    if d.environment:
        render(["environment", ra, rb], d.environment, fmt, title="environment: what differs")
        if fmt == Format.markdown:
            typer.echo()

    def delta(x, y):
        return y - x if isinstance(x, float) and isinstance(y, float) else None

    rows = [(k, x, y, delta(x, y)) for k, x, y in d.summaries]
    render(["summary", ra, rb, f"{rb} − {ra}"], rows, fmt, title="summaries")
    if plot:
        n = api.plot_curves(store, [d.a, d.b], metric, plot, title=f"{metric}: {ra} vs {rb}")
        typer.echo(f"plot written to {plot} ({n} curves)", err=True)


def curves(
    ctx: typer.Context,
    run: Annotated[
        list[str] | None, typer.Argument(help="Run ids or names (or select with flags).")
    ] = None,
    metric: Annotated[str, typer.Option(help="Metric key (train_loss, valid_metric, ...).")] = (
        "valid_metric"
    ),
    sweep: Annotated[str | None, typer.Option(help="All runs of this sweep.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    plot: Annotated[str | None, typer.Option(help="Draw the curves (PNG).")] = None,
    group_by: Annotated[
        str | None,
        typer.Option(help="One curve per group of runs sharing these fields: model,k (mean)."),
    ] = None,
    band: Annotated[
        str, typer.Option(help="With --group-by: std (±1 std) or ci (95% CI of the mean).")
    ] = "std",
    fmt: FormatOption = Format.table,
) -> None:
    """Learning curves: a metric against the step for each run, as a table (long: run, step,
    value) and with --plot as a figure (a colour per line, the legend beside the axes). With
    --group-by, one curve per group of runs (the seeds of a config, say): its mean per step
    and a band over the group's runs.

    Example: seqbench curves 3 4 5 --metric valid_metric --plot curves.png

    Example: seqbench curves --sweep bai-tcn-small --task adding --metric train_loss -f csv

    Example: seqbench curves --sweep S --group-by model,k --band ci --plot grouped.png
    """
    if plot:
        output_path(plot, "--plot")
    store = state(ctx).store("read")
    runs = api.curve_runs(store, run or [], sweep=sweep, model=model, task=task)
    if group_by is not None:
        groups, frame = api.grouped_curves(store, runs, metric, api.split_list(group_by), band)
        if frame.empty:
            raise SeqbenchError(f"no {metric!r} values logged for these runs")
        render(["group", "step", "mean", "lo", "hi", "n"], frame.values.tolist(), fmt)
        if plot:
            drawn = api.plot_grouped(frame, groups, metric, band, plot, runs[0].task)
            typer.echo(f"plot written to {plot} ({len(drawn)} groups)", err=True)
        return
    df = api.curves_frame(store, [r.id for r in runs], [metric])
    if df.empty:
        raise SeqbenchError(f"no {metric!r} values logged for these runs")
    cols = zip(df["run_id"], df["step"], df["value"], strict=True)
    rows = [(int(r), int(s), v) for r, s, v in cols]
    render(["run", "step", metric], rows, fmt)
    if plot:
        n = api.plot_curves(store, runs, metric, plot)
        typer.echo(f"plot written to {plot} ({n} curves)", err=True)
