"""`seqbench report`, `seqbench baseline` and `seqbench check`."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._flags import flags
from seqbench.cli._options import state
from seqbench.cli._output import Format, FormatOption, output_path, render
from seqbench.errors import UsageError

baseline_app = typer.Typer(
    help="Reference values for regression checks (saved in the store, kept in git as JSON).",
    no_args_is_help=True,
)

WhereOption = Annotated[
    str | None,
    typer.Option(help='A SQL condition on the v_results view, e.g. "seq_len = 100".'),
]
SweepOption = Annotated[str | None, typer.Option(help="Only runs of this sweep.")]


def register(app: typer.Typer) -> None:
    app.command("report", short_help="Compare models across runs: mean ± std over seeds.")(report)
    app.command("check", short_help="Compare with a baseline; exit 1 on a regression.")(check)
    app.add_typer(baseline_app, name="baseline", short_help="Reference values for seqbench check.")


def _split(values: list[str] | None) -> list[str]:
    return api.split_list(values)


Models = Annotated[list[str] | None, typer.Argument(help="Models to show (all if omitted).")]
Compare = Annotated[bool, typer.Option("--compare", help="One column per model, with differences.")]
Tasks = Annotated[
    list[str] | None,
    typer.Option("--task", "--tasks", help="Only these tasks: adding,copy (or repeated)."),
]
Metric = Annotated[str, typer.Option(help="Summary key to report.")]
By = Annotated[
    str | None,
    typer.Option(
        help="Also group by k, seq_len, model or any config field (stable, teacher_lam, "
        "...); several as a comma-separated list: --by teacher_lam,k."
    ),
]
Plot = Annotated[
    str | None,
    typer.Option(help="Also draw a PNG: metric against the first numeric --by field, else bars."),
]
FitDecay = Annotated[
    bool,
    typer.Option(
        "--fit-decay",
        help="Instead of the table, fit gap(k) = metric(k) - full ≈ C·rate^k per model "
        "(needs --by k): how fast a truncated model closes on the full one.",
    ),
]
Ci = Annotated[
    bool,
    typer.Option(
        "--ci",
        help="95% confidence intervals (Student t over seeds) instead of ±std, and the "
        "first two models compared seed by seed (paired: difference, interval, p).",
    ),
]


def report(
    ctx: typer.Context,
    models: Models = None,
    compare: Compare = False,
    task: Tasks = None,
    metric: Metric = "test_metric",
    by: By = None,
    sweep: SweepOption = None,
    where: WhereOption = None,
    plot: Plot = None,
    fit_decay: FitDecay = False,
    ci: Ci = False,
    fmt: FormatOption = Format.table,
) -> None:
    """Compare models across runs: mean ± std over seeds (n), the best highlighted where it is
    ahead of the runner-up beyond the seeds' noise (Welch's t-test, p < 0.05), the difference
    and ratio of the first two compared models, and the task's trivial baseline.
    Without --compare: a leaderboard of the models on each task.

    Example: seqbench report --compare rnn tcn --task adding --by k --plot k.png

    Example: seqbench report --compare window rnn --task teacher --by teacher_lam,k --fit-decay
    """
    if plot:
        output_path(plot, "--plot")
    chosen = _split(models)
    if compare and not chosen:
        raise UsageError("--compare needs models: seqbench report --compare rnn tcn")
    rep = api.build_report(
        state(ctx).store("lean"),  # one connection; the store checked before it is read
        compare=chosen or None, tasks=_split(task) or None, metric=metric, by=by, sweep=sweep,
        where=where,
    )  # fmt: skip
    if rep is None:
        typer.echo("no completed runs in the store match: nothing to report")
        return
    _notes(rep.notes)
    if fit_decay:
        decay_notes: list[str] = []
        render(*api.fit_decay(rep, notes=decay_notes), fmt, title=f"decay of the {metric} gap in k")
        _notes(decay_notes)
    else:
        _table(rep, compare, ci, metric, by, fmt)
    if plot:
        api.plot_report(rep, plot)
        typer.echo(f"plot written to {plot}", err=True)


def _notes(notes: list[str]) -> None:
    for note in notes:
        typer.echo(f"note: {flags(note)}", err=True)


def _table(rep, compare: bool, ci: bool, metric: str, by: str | None, fmt: Format) -> None:
    """The comparison (--compare) or the leaderboard, for people or machines."""
    if compare and rep.compare:
        pair_notes: list[str] = []
        cols, rows, best = api.comparison_rows(rep, ci=ci, notes=pair_notes)
        _notes(pair_notes)
    else:
        cols, rows, best = api.leaderboard_rows(rep)
    if fmt in (Format.table, Format.markdown):  # for people: one "mean ± std (n)" cell
        title = f"{metric}{' by ' + by if by else ''}"
        title += " — 95% CI over seeds; A − B paired by seed" if ci else ""
        render(cols, [[api.format_cell(v, ci) for v in r] for r in rows], fmt, bold=best,
               title=title)  # fmt: skip
    else:
        cell_cols = set(rep.models) if compare and rep.compare else set()
        render(*api.flat_rows(cols, rows, cell_cols, ci), fmt)


@baseline_app.command("save")
def baseline_save(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Baseline name.")],
    sweep: SweepOption = None,
    where: WhereOption = None,
    metric: Annotated[list[str] | None, typer.Option(help="Summary keys (repeatable).")] = None,
    rtol: Annotated[
        float,
        typer.Option(
            help="Tolerance as a share of each point's error (the loss itself; 1 − accuracy): "
            "0.1 fails a point whose error grows by more than 10%."
        ),
    ] = 0.05,
    atol: Annotated[
        float, typer.Option(help="Absolute floor under each tolerance (default none).")
    ] = 0.0,
) -> None:
    """Store the current medians over seeds per (model, task, k, variant, metric) as a baseline;
    the variant holds the config fields that differ between runs of one (model, task, k)
    besides the seed (seq_len, stable, teacher_lam, ...).

    Example: seqbench baseline save nightly --where "task = 'adding'" --rtol 0.1
    """
    api.check_tolerances(rtol, atol)  # before the store is opened
    skipped: list[str] = []
    points = api.save_baseline(
        state(ctx).store("update"),
        name,
        metrics=tuple(metric or ["test_metric"]),
        sweep=sweep,
        where=where,
        rtol=rtol,
        atol=atol,
        skipped=skipped,
    )
    if skipped:
        shown = ", ".join(skipped[:6]) + (
            f" and {len(skipped) - 6} more" if len(skipped) > 6 else ""
        )
        typer.echo(
            f"note: left out {len(skipped)} point(s) whose runs diverged (a diverged run is "
            f"never a baseline value): {shown}",
            err=True,
        )
    typer.echo(f"saved baseline {name!r}: {len(points)} points")


@baseline_app.command("export")
def baseline_export(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Baseline name.")],
    path: Annotated[str, typer.Argument(help="JSON file to write.")],
) -> None:
    """Write a stored baseline to a JSON file (to keep it in git).

    Example: seqbench baseline export nightly baselines/nightly.json
    """
    n = api.export_baseline(state(ctx).store("read"), name, output_path(path, "the baseline file"))
    typer.echo(f"wrote {n} points to {path}")


@baseline_app.command("import")
def baseline_import(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="JSON file written by export.")],
    name: Annotated[str | None, typer.Option(help="Store under this name.")] = None,
) -> None:
    """Load a baseline JSON file into the store.

    Example: seqbench baseline import baselines/bai-tcn-tiny.json
    """
    stored, n = api.import_baseline(state(ctx).store(), path, name)
    typer.echo(f"imported baseline {stored!r}: {n} points")


@baseline_app.command("list")
def baseline_list(ctx: typer.Context, fmt: FormatOption = Format.table) -> None:
    """List stored baselines with their number of points.

    Example: seqbench baseline list --format json
    """
    render(*api.list_baselines(state(ctx).store("lean")), fmt)


def check(
    ctx: typer.Context,
    baseline: Annotated[str, typer.Option(help="Baseline name in the store, or a JSON file.")],
    sweep: SweepOption = None,
    where: WhereOption = None,
    rtol: Annotated[float | None, typer.Option(help="Override the stored tolerance.")] = None,
    atol: Annotated[float | None, typer.Option(help="Override the stored tolerance.")] = None,
    junit: Annotated[str | None, typer.Option(help="Write a JUnit XML report here.")] = None,
    fail_on_missing: Annotated[
        bool, typer.Option("--fail-on-missing", help="Treat missing results as failures.")
    ] = False,
    fmt: FormatOption = Format.table,
) -> None:
    """Compare current results with a baseline; exit 1 if anything regressed.

    Per (model, task, k, variant, metric): the median over seeds of the runs of the very
    config the point was measured on (seed aside) against the baseline value ± tolerance in
    the metric's direction: pass, regressed (a nan always is), improved or missing (a note
    on stderr names the fields by which the nearest current runs differ).
    Exit codes: 0 nothing regressed, 1 a regression, 2 usage error or unknown baseline.

    Example: seqbench check --baseline baselines/bai-tcn-tiny.json --junit check.xml
    """
    if junit:
        output_path(junit, "--junit")

    store = state(ctx).store("read")
    points = api.resolve_baseline(store, baseline)
    rows = api.check(store, points, sweep=sweep, where=where, rtol=rtol, atol=atol)
    cols = [
        "status",
        "model",
        "task",
        "k",
        "variant",
        "metric",
        "baseline",
        "current",
        "tolerance",
        "direction",
    ]
    render(
        cols,
        [
            (
                r.status,
                r.model,
                r.task,
                r.k,
                api.variant_label(r.variant),
                r.metric,
                r.baseline,
                r.current,
                r.tolerance,
                r.direction,
            )
            for r in rows
        ],
        fmt,
        title=f"check against {baseline}",
    )
    for r in rows:
        if r.note:
            label = " ".join(x for x in (f"k={r.k}", api.variant_label(r.variant)) if x)
            typer.echo(f"missing {r.model}/{r.task} {label}: {flags(r.note)}", err=True)
    if junit:
        api.junit_xml(rows, junit)
    counts = {s: sum(r.status == s for r in rows) for s in api.CHECK_STATUSES}
    typer.echo(", ".join(f"{n} {s}" for s, n in counts.items()), err=True)
    if counts["regressed"] or (fail_on_missing and counts["missing"]):
        raise typer.Exit(1)
