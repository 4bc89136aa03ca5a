"""Plots of a report (matplotlib, headless): the metric against a numeric --by field with
error bars, or grouped bars, one panel per task."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seqbench.report.tables import Report, baseline_for


def _finish(ax, rep, task: str, ys, xlabel: str | None = None) -> None:
    """A task's panel, finished: a log y-axis where the values span more than 20×, the
    trivial baseline as a dashed line, the title, the axis labels and the legend."""
    if len(ys) and ys.max() / ys.min() > 20:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    base = _plot_baseline(rep, task)
    if base is not None:
        ax.axhline(base, color="grey", ls="--", lw=1, label="trivial baseline")
    ax.set(title=task, ylabel=_ylabel(rep, task), **({"xlabel": xlabel} if xlabel else {}))
    _legend(ax)


def _plot_baseline(rep: Report, task: str) -> float | None:
    """One line per panel, only when the task's rows share one baseline (within 1%)."""
    vals = [v for k, v in rep.baselines.items() if k[0] == task and len(k) > 1]
    if vals and max(vals) - min(vals) > 0.01 * abs(max(vals)):
        return None
    return baseline_for(rep, (task,))


def plot_report(rep: Report, path: str | None):
    """Metric against the first numeric --by field (k, seq_len, teacher_lam, ...) with ±std
    error bars (grouped bars when there is none), one panel per task and one line per model
    (and per value of any other --by field). A run without a value on the x axis (k unset:
    the full recurrent model) is drawn as a dotted horizontal line. Log axes where the values
    span more than a factor of 20. With `path` None: the figure, not saved (the dashboard
    draws it as SVG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = next((b for b in rep.by if b != "model" and _numeric(rep.stats[b])), None)
    if x is None:
        return _bar_plot(rep, path, plt)
    series = [b for b in rep.group[1:] if b != x]
    tasks = sorted(set(rep.stats["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(6.5 * len(tasks), 4.8), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        sub = rep.stats[rep.stats["task"] == task]
        lines = sub.groupby(series, dropna=False, sort=True) if series else [((), sub)]
        for key, g in lines:
            key = key if isinstance(key, tuple) else (key,)
            extra = ", ".join(f"{b}={v}" for b, v in zip(series, key, strict=True))
            colors: dict[str, str] = {}
            for model in rep.models:  # the curves first, so full-model lines can match them
                on_axis = g[(g["model"] == model) & g[x].notna()].sort_values(x)
                if not on_axis.empty:
                    line = ax.errorbar(
                        on_axis[x].astype(float),
                        on_axis["mean"],
                        yerr=on_axis["std"],
                        marker="o",
                        capsize=3,
                        label=model + (f" ({extra})" if extra else ""),
                    )
                    colors[model] = line[0].get_color()
            for model in rep.models:
                # a full model without a curve of its own takes its group's colour (the
                # teacher's λ: window(k) and the full RNN of one λ alike)
                color = colors.get(model) or next(iter(colors.values()), None)
                for _, r in g[(g["model"] == model) & g[x].isna()].iterrows():
                    label = model + (f" ({extra})" if extra else "")
                    ax.axhline(
                        r["mean"], ls=":", lw=1.5, color=color, label=f"{label}, {x} unset (full)"
                    )
        xs = sub[x].dropna().astype(float)
        ys = sub["mean"][np.isfinite(sub["mean"]) & (sub["mean"] > 0)]
        if len(xs) and xs.min() > 0 and xs.max() / xs.min() > 20:
            ax.set_xscale("log", base=2)
            plain_log_ticks(ax.xaxis)
        if len(xs) and all(float(v).is_integer() for v in xs):  # k, T: the values themselves
            ticks = spaced_ticks(sorted(set(xs)), log=ax.get_xscale() == "log")
            ax.set_xticks(ticks, [f"{int(t)}" for t in ticks])
            ax.minorticks_off()
        _finish(ax, rep, task, ys, xlabel=x)
    return _save(fig, rep, path, plt)


def _ylabel(rep: Report, task: str) -> str:
    from seqbench.report.frames import metric_direction
    from seqbench.tasks import TASKS

    arrow = "↑" if metric_direction(rep.metric, task) == "higher" else "↓"
    name = rep.metric
    from seqbench.report.frames import stored_task

    task = stored_task(task)  # a file task named with its data
    if name in ("test_metric", "best_valid_metric", "final_valid_metric") and task in TASKS:
        name = f"{name} ({TASKS.get(task).metric})"  # test_metric (mse)
    return f"{name} {arrow}"


LEGEND_BESIDE = 6  # more entries than this go below the axes, which keep the figure's width


def _legend(ax) -> None:
    """Never over the points; only the series that were drawn. A few entries beside the axes;
    many (a store with a history) below them in columns, so that the axes keep their width."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if len(handles) <= LEGEND_BESIDE:
        ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return
    ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14),
              ncol=2, frameon=False)  # fmt: skip


def spaced_ticks(values: list[float], log: bool) -> list[float]:
    """The values to label on an axis, none crowding the one before: on a log axis no two
    closer than a factor 1.3, on a linear one than 1/12 of the range; the first and the last
    always kept (the search's neighbouring contexts, 3 beside 4, would run together)."""
    if len(values) < 3:
        return list(values)
    span = values[-1] - values[0]
    out = [values[0]]
    for v in values[1:]:
        close = v / out[-1] < 1.3 if log and out[-1] > 0 else v - out[-1] < span / 12
        if not close:
            out.append(v)
    if out[-1] != values[-1]:
        out[-1] = values[-1]
    return out


def _caption(fig, rep: Report) -> None:
    ns = sorted(set(int(n) for n in rep.stats["n"]))
    seeds = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}"
    fig.text(
        0.01,
        -0.02,
        f"each value: the mean over seeds ({seeds}); error bars: ±1 std over those seeds",
        fontsize=8,
        ha="left",
        va="top",
    )
    fig.tight_layout()


def _bar_plot(rep: Report, path: str | None, plt):
    """Without a numeric --by field: grouped bars (one per model) with ±std, one panel per
    task, one group per value of the other --by fields."""
    tasks = sorted(set(rep.stats["task"]))
    fig, axes = plt.subplots(
        1, len(tasks), figsize=(max(6.0, 3.2 * len(tasks)), 4.5), squeeze=False
    )
    series = rep.group[1:]
    width = 0.8 / max(1, len(rep.models))
    for ax, task in zip(axes[0], tasks, strict=True):
        sub = rep.stats[rep.stats["task"] == task]
        groups = sorted({tuple(r) for r in sub[series].itertuples(index=False)}, key=str)
        groups = groups or [()]
        for i, model in enumerate(rep.models):
            xs, ys, es = [], [], []
            for j, key in enumerate(groups):
                m = sub[sub["model"] == model]
                for b, v in zip(series, key, strict=True):
                    m = m[m[b].isna()] if v is None or v != v else m[m[b] == v]
                if not m.empty:
                    xs.append(j + (i - (len(rep.models) - 1) / 2) * width)
                    ys.append(float(m["mean"].iloc[0]))
                    es.append(float(m["std"].iloc[0]))
            ax.bar(xs, ys, width, yerr=es, capsize=3, label=model)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(
            [", ".join(f"{b}={v}" for b, v in zip(series, g, strict=True)) for g in groups],
            fontsize=7,
        )
        ys = sub["mean"][np.isfinite(sub["mean"]) & (sub["mean"] > 0)]
        _finish(ax, rep, task, ys)
    return _save(fig, rep, path, plt)


def _save(fig, rep: Report, path: str | None, plt):
    _caption(fig, rep)
    if path is None:
        return fig
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return None


def _numeric(col: pd.Series) -> bool:
    vals = col.dropna()
    return len(vals) > 0 and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        for v in vals
    )


def plain_log_ticks(axis) -> None:
    """A log axis labelled 10, 20, 0.01 rather than 10¹: matplotlib's default draws its
    labels with mathtext, whose fonts (STIX) some installations lack, and it then logs a
    "findfont" line per glyph to the user's terminal."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(_g))
    # minor labels only where the axis spans at most two decades (more would crowd)
    axis.set_minor_formatter(FuncFormatter(lambda v, _pos=None: _g_minor(v, axis)))


def _g(v: float, _pos=None) -> str:
    return f"{v:g}"


def _g_minor(v: float, axis=None) -> str:
    """Minor ticks at 2, 3, 5 of each decade only, and only on an axis that spans at most two
    decades (the others would crowd)."""
    if v <= 0:
        return ""
    if axis is not None:
        lo, hi = sorted(axis.get_view_interval())
        if lo <= 0 or hi / lo > 100:
            return ""
    lead = v / 10 ** math.floor(math.log10(v) + 1e-9)
    return f"{v:g}" if round(lead, 6) in (2.0, 3.0, 5.0) else ""
