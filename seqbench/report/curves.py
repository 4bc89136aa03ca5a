"""Looking at runs side by side: `seqbench diff A B` (the config fields that differ, the
summaries beside each other) and learning curves (`seqbench curves`, `diff --plot`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from seqbench.config import NOT_COMPUTED
from seqbench.report.frames import curves_frame, metric_direction
from seqbench.report.plots import plain_log_ticks
from seqbench.store.opening import reads


@dataclass
class RunDiff:
    a: Any  # the two runs (store rows)
    b: Any
    config: list[tuple[str, Any, Any]]  # (field, in a, in b) for the fields that differ
    summaries: list[tuple[str, float | None, float | None]]  # every key of either run
    environment: list[tuple[str, Any, Any]]  # what they ran on, where it differs


def diff_runs(store, a_ref: str, b_ref: str) -> RunDiff:
    """The config fields whose values differ between two runs (a field one run lacks, from an
    older seqbench, shows as None) and every summary of either."""
    a, b = store.require_run(a_ref), store.require_run(b_ref)
    ca, cb = a.config or {}, b.config or {}
    config = [
        (k, ca.get(k), cb.get(k))
        for k in sorted(set(ca) | set(cb))
        if k not in NOT_COMPUTED  # device and backend differences are shown
        and json.dumps(ca.get(k), sort_keys=True) != json.dumps(cb.get(k), sort_keys=True)
    ]
    sa, sb = store.summaries(a.id), store.summaries(b.id)
    summaries = [(k, sa.get(k), sb.get(k)) for k in sorted(set(sa) | set(sb))]
    return RunDiff(a, b, config, summaries, environment_differences(a, b))


# environment keys that differ between any two runs and say nothing of what they ran on
_ENV_PER_RUN = {"pid", "driver_pid", "stale_after"}


def environment_differences(a, b) -> list[tuple[str, Any, Any]]:
    """(key, in a, in b) for what two runs ran on that differs (versions, device, host, the
    thread count, the package set, the source's commit and dirty flag): the same config on 2
    threads and on 1 takes very different times."""
    ea, eb = a.environment or {}, b.environment or {}
    return [
        (k, ea.get(k), eb.get(k))
        for k in sorted(set(ea) | set(eb))
        if k not in _ENV_PER_RUN and ea.get(k) != eb.get(k)
    ]


def run_label(run) -> str:
    parts = [f"run {run.id}", run.model, run.task]
    if run.k is not None:
        parts.append(f"k={run.k}")
    parts.append(f"seed {run.seed}")
    return " ".join(str(p) for p in parts)


def distinct_colors(n: int) -> list:
    """n colours no two of which repeat in a figure: tab10 up to 10, tab20 up to 20, then n
    evenly spaced hues of a perceptual map (matplotlib's own cycle repeats every 10)."""
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](i) for i in range(n)]
    return [colormaps["turbo"](0.05 + 0.9 * i / (n - 1)) for i in range(n)]


def _legend_outside(fig, ax, entries: int) -> None:
    """The legend right of the axes, in columns of at most 25 entries, never over the data."""
    if entries:
        ax.legend(
            fontsize=8,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            ncol=max(1, math.ceil(entries / 25)),
            frameon=False,
        )


def _finish(fig, ax, drawn, metric: str, task, title: str, path) -> None:
    """Log y where the drawn values (a Series) span decades, the axis labels, and the file
    (none: the caller keeps the figure)."""
    values = drawn[drawn.map(lambda v: math.isfinite(v) and v > 0)] if len(drawn) else drawn
    if len(values) and values.max() / values.min() > 100:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    arrow = "↑" if metric_direction(metric, task) == "higher" else "↓"
    ax.set(xlabel="step", ylabel=f"{metric} {arrow}", title=title)
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")  # room for the outside legend


@reads
def plot_curves(store, runs: list, metric: str, path: str, title: str | None = None) -> int:
    """One line per run of `metric` against the step (log y when the values span decades),
    each its own colour, the legend outside the axes; returns how many runs had the metric.
    The y axis names the metric and its direction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = curves_frame(store, [r.id for r in runs], [metric])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = [r for r in runs if df[(df["run_id"] == r.id)]["value"].map(math.isfinite).any()]
    for run, color in zip(drawn, distinct_colors(len(drawn)), strict=True):
        c = df[df["run_id"] == run.id]
        c = c[c["value"].map(math.isfinite)]
        ax.plot(c["step"], c["value"], marker="o", ms=3, lw=1.2, label=run_label(run), color=color)
    _legend_outside(fig, ax, len(drawn))
    task = runs[0].task if runs else None
    _finish(fig, ax, df["value"], metric, task, title or f"{metric} per step", path)
    plt.close(fig)
    return len(drawn)


BANDS = ("std", "ci")
RUN_COLUMNS = ("model", "task", "k", "seq_len", "seed", "sweep_id")


def _group_value(run, field: str):
    if field in RUN_COLUMNS:
        return getattr(run, field)
    return (run.config or {}).get(field)


@reads
def grouped_curves(store, runs: list, metric: str, by: list[str], band: str = "std"):
    """`metric` against the step per group of runs that share the `by` fields (run columns or
    config fields): (groups, frame). groups: label -> the runs in it; frame columns group,
    step, mean, lo, hi, n, the band std (mean ± std over the group's runs at that step) or ci
    (the 95% t interval of the mean). Non-finite values are left out of a step's mean."""
    import pandas as pd

    from seqbench.configure import FIELDS  # loads the registries: their options are fields
    from seqbench.errors import UnknownNameError, UsageError
    from seqbench.report.stats import interval

    if band not in BANDS:
        raise UsageError(f"`band` must be std or ci, got {band!r}")
    for f in by:
        if f not in RUN_COLUMNS and f not in FIELDS:
            raise UnknownNameError("`group_by` field", f, [*RUN_COLUMNS, *FIELDS])
    groups: dict[str, list] = {}
    for run in runs:
        label = " ".join(f"{f}={_group_value(run, f)}" for f in by) or "all runs"
        groups.setdefault(label, []).append(run)
    df = curves_frame(store, [r.id for r in runs], [metric])
    df = df[df["value"].map(math.isfinite).astype(bool)]  # bool even when empty
    label_of = {r.id: label for label, rs in groups.items() for r in rs}
    df = df.assign(group=df["run_id"].map(label_of))
    rows = []
    for (label, step), g in df.groupby(["group", "step"], sort=False):
        n, mean = len(g), float(g["value"].mean())
        sd = float(g["value"].std()) if n > 1 else 0.0
        lo, hi = (mean - sd, mean + sd) if band == "std" else interval(mean, sd, n)
        rows.append((label, int(step), mean, lo, hi, n))
    frame = pd.DataFrame(rows, columns=["group", "step", "mean", "lo", "hi", "n"])
    order = {label: i for i, label in enumerate(groups)}
    frame = frame.sort_values(
        ["group", "step"], key=lambda c: c.map(order) if c.name == "group" else c
    )
    return groups, frame.reset_index(drop=True)


def plot_grouped(frame, groups: dict, metric: str, band: str, path: str | None, task=None):
    """One line per group (its mean) with its band shaded, each group its own colour, one
    legend entry per group outside the axes; returns [(label, colour)] as drawn (with `path`
    None: (figure, drawn), the figure not saved)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [g for g in groups if (frame["group"] == g).any()]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = []
    for label, color in zip(labels, distinct_colors(len(labels)), strict=True):
        g = frame[frame["group"] == label]
        n = len(groups[label])
        ax.plot(g["step"], g["mean"], lw=1.4, color=color, label=f"{label} (n={n})")
        ax.fill_between(g["step"], g["lo"], g["hi"], color=color, alpha=0.18, lw=0)
        drawn.append((label, color))
    _legend_outside(fig, ax, len(drawn))
    shade = "±1 std over runs" if band == "std" else "95% CI of the mean"
    title = f"{metric} per step"
    if any(len(groups[label]) > 1 for label in labels):  # one run has no band to speak of
        title += f" (band: {shade})"
    _finish(fig, ax, frame["mean"], metric, task, title, path)
    if path is None:
        return fig, drawn
    plt.close(fig)
    return drawn
