"""`seqbench models` and `seqbench tasks`: what can be trained."""

from __future__ import annotations

from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._flags import flags
from seqbench.cli._output import Format, FormatOption, render
from seqbench.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("models", short_help="List the models: kind, size and context rule.")(models)
    app.command("tasks", short_help="List the tasks, or check a data file (--path).")(tasks)


def _problems(problems: list[str]) -> None:
    for line in problems:  # a broken plugin: one line each, the rest are listed
        typer.echo(f"warning: {flags(line)}", err=True)


def models(fmt: FormatOption = Format.table) -> None:
    """List the models with a one-line description and their size at the default width.

    Parameter counts are for the adding task (2 inputs, 1 output) at T = 100. The state
    column is the state size (Zoology's): the real numbers a recurrent model carries from step
    to step, or a feedforward one holds within its context (a TCN: receptive field ×
    channels; window attention: 2·d·window a layer); recorded with every run and a report
    axis (--by state_size). The context
    column is the family's rule for what a run stores as k: a feedforward model's output at t
    depends on exactly the last k inputs; a recurrent model's k is its truncated
    backpropagation, and no k (NULL) means full backpropagation. Models from installed
    plugins (entry points in the group seqbench.models) are listed with their package and
    version in the source column (docs/plugins.md). The --set column lists the fields of its
    own a family reads (beyond seq_len, k, hidden, layers and the training fields every run
    has); another family's is refused on it (a window takes its base's too).

    Example: seqbench models --format markdown
    """
    problems: list[str] = []
    rows = [
        (m.name, m.kind, m.hidden, m.n_params, m.state_size, flags(m.context), m.options,
         m.source, flags(m.description))
        for m in api.model_catalog(problems)
    ]  # fmt: skip
    _problems(problems)
    head = ["model", "kind", "hidden", "params", "state", "context k", "--set", "source",
            "description"]  # fmt: skip
    render(head, rows, fmt)


def _table_rows(f) -> list[tuple]:
    """What `tasks --path` shows of a table cut into windows."""
    t = f.table
    sizes = "/".join(str(f.sizes[s]) for s in ("train", "valid", "test"))
    dates = t["time_dates"]
    ranges = "; ".join(
        f"{s} {_at(lo, dates)}–{_at(hi, dates)}" for s, (lo, hi) in t["time_range"].items()
    )
    return [
        ("task", "file-regression"),
        ("kind", "regression (a forecast from a table)"),
        ("metric", "mse (of the standardised targets)"),
        ("targets", f"{t['y_cols']}, {t['horizon']} step(s) after the window"),
        ("inputs", t["x_cols"] or f"{t['y_cols']} (its own past)"),
        ("T", f.seq_len),
        ("time", t["time_col"] or "row order"),
        ("series", f"{t['series']}" + (f" (by {t['series_col']})" if t["series_col"] else "")),
        ("train/valid/test", f"{sizes} windows"),
        ("split", f"by the target's time, 60/20/20 ({ranges})"),
        ("baseline", f"{f.baseline:.6g} ({f.baseline_note})"),
        ("persistence", f"{f.persistence:.6g} (the target's last value in the window)"),
        ("sha256", f"{f.data_hash} (of the columns used)"),
    ]


def _at(v: float, dates: bool) -> str:
    """A target time as the table gave it: a number, or (a date column) nanoseconds shown as
    a date; 1970-01-01 is 0 ns, a date like any other."""
    if dates:
        import pandas as pd

        return str(pd.Timestamp(int(v)).date())
    return f"{v:g}"


def tasks(
    fmt: FormatOption = Format.table,
    path: Annotated[
        str | None,
        typer.Option(help="A data file (.npz, or a directory of .npy): what it holds instead."),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option(
            help="With --path: file (what train, sweep and memory take), or file-KIND, as "
            "--target does."
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(help="With --path: regression, classification or next-token."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="With a CSV or Parquet --path: how to cut it, as key=value "
            "(y_cols, x_cols, time_col, series_col, horizon, seq_len).",
        ),
    ] = None,
) -> None:
    """List the tasks with their metric, default length and trivial baseline; with --path,
    check a data file and show the task it makes (kind, length, splits, content hash and the
    trivial baselines computed from its train split).

    Example: seqbench tasks --format csv

    Example: seqbench tasks --path data.npz

    Example: seqbench tasks --path sunspots.csv --set y_cols=SUNACTIVITY --set time_col=YEAR
    """
    if task is not None:
        if path is None:
            raise UsageError("--task is for a data file: give --path too")
        kind = None if task == "file" else task.removeprefix("file-")
        if task != "file" and not task.startswith("file-"):
            raise UsageError(f"--task with --path is file or file-KIND, got {task!r}")
        if target is not None and kind is not None and target != kind:
            raise UsageError(f"--task {task} asks for {kind}, but --target is {target!r}")
        target = target or kind
    if path is not None:
        _file_rows(api.data_file(path, target, table=api.table_fields(set_)), fmt)
        return
    problems: list[str] = []
    rows = [
        (t.name, t.metric, t.better, t.seq_len or "file", flags(t.baseline), t.options,
         t.source, flags(t.description))
        for t in api.task_catalog(problems)
    ]  # fmt: skip
    _problems(problems)
    head = ["task", "metric", "better", "T", "baseline", "--set", "source", "description"]
    render(head, rows, fmt)


def _file_rows(f, fmt: Format) -> None:
    """What a data file makes: a table's cut, or an array file's task, one field a row."""
    if f.table is not None:
        render(["field", "value"], _table_rows(f), fmt)
        return
    split = "the file's" if f.split_seed is None else f"seeded ({f.split_seed})"
    base = f"{f.baseline:.6g} ({f.baseline_note})"
    metric = f.metric
    if f.target_sd is not None:  # what runs see and score (scale=standard, the default)
        metric = "mse (of the standardised targets; --set scale=raw: of the data's own)"
        base = (
            f"{f.baseline / f.target_sd**2:.6g} standardised, {f.baseline:.6g} in the "
            f"data's own units ({f.baseline_note})"
        )
    rows = [
        ("task", f"file-{f.kind}"),
        ("kind", f"{f.kind} ({f.kind_source})"),
        ("metric", metric),
        ("T", f.seq_len),
        ("inputs", f"token ids, vocab {f.vocab}" if f.vocab else f"{f.in_dim} features"),
        ("targets", "per step" if f.per_step else "per sequence"),
        ("classes", f.n_classes if f.n_classes else "-"),
        ("train/valid/test", "/".join(str(f.sizes[s]) for s in ("train", "valid", "test"))),
        ("split", split),
        ("baseline", base),
        ("sha256", f.data_hash),
    ]
    render(["field", "value"], rows, fmt)
