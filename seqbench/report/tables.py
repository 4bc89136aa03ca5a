"""Comparison tables and leaderboards (pandas), and their plots (matplotlib, headless)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqbench.errors import SeqbenchError, UsageError
from seqbench.report.frames import GROUP_AXES, baselines_by_task, metric_direction, results_frame


@dataclass
class Report:
    """A long frame (one row per group × model: mean, std, n) plus how to lay it out."""

    stats: pd.DataFrame  # columns: task, [by], model, mean, std, n
    metric: str
    by: str | None
    models: list[str]  # the compared models, in order (all models for a leaderboard)
    compare: bool
    baselines: dict


def _agg(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    def stats(v: pd.Series) -> pd.Series:
        vals = v.to_numpy(dtype=float)
        # a nan result is a result: it makes the mean nan instead of vanishing from it
        return pd.Series(
            {
                "mean": float(np.mean(vals)),
                "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                "n": len(vals),
            }
        )

    out = df.groupby(keys, dropna=False)["value"].apply(stats).unstack().reset_index()
    out["n"] = out["n"].astype(int)
    return out


def build_report(
    db: str | None,
    *,
    compare: list[str] | None = None,
    tasks: list[str] | None = None,
    metric: str = "test_metric",
    by: str | None = None,
    sweep: str | None = None,
    where: str | None = None,
) -> Report | None:
    """None when the store holds no completed training runs matching the filters at all."""
    if by is not None and by not in GROUP_AXES:
        raise UsageError(f"--by must be one of {', '.join(GROUP_AXES)}, got {by!r}")
    if compare is not None and len(compare) < 1:
        raise UsageError("--compare needs at least one model")
    df = results_frame(db, metric, tasks=tasks, models=compare, sweep=sweep, where=where)
    if df.empty:
        if compare:
            raise SeqbenchError(
                f"no completed runs with metric {metric!r} for "
                f"{', '.join(compare)}{' on ' + ', '.join(tasks) if tasks else ''}"
            )
        return None
    if compare:
        missing = [m for m in compare if m not in set(df["model"])]
        if missing:
            raise SeqbenchError(
                f"no completed runs for model {', '.join(repr(m) for m in missing)}"
                f"{' on ' + ', '.join(tasks) if tasks else ''} with metric {metric!r}"
            )
    keys = ["task"] + ([by] if by and by != "model" else []) + ["model"]
    stats = _agg(df, keys)
    models = compare or sorted(set(df["model"]))
    base = baselines_by_task(db, sorted(set(df["task"])))
    return Report(stats, metric, by, models, bool(compare) and by != "model", base)


def _baseline_for(rep: Report, task: str) -> float | None:
    vals = [v for (t, _), v in rep.baselines.items() if t == task]
    return float(np.mean(vals)) if vals else None


def comparison_rows(rep: Report) -> tuple[list[str], list[list], list[int | None]]:
    """(columns, rows, index of the best model column per row) for a --compare report."""
    group = ["task"] + ([rep.by] if rep.by and rep.by != "model" else [])
    wide = rep.stats.pivot_table(index=group, columns="model", values=["mean", "std", "n"],
                                 dropna=False, aggfunc="first")  # fmt: skip
    cols = [*group, *rep.models]
    two = len(rep.models) >= 2
    if two:
        a, b = rep.models[:2]
        cols += [f"{a} - {b}", f"{a} / {b}"]
    cols.append("baseline")
    rows, best = [], []
    for idx, _ in wide.iterrows():
        key = idx if isinstance(idx, tuple) else (idx,)
        task = key[0]
        direction = metric_direction(rep.metric, task)
        means = {m: wide.loc[idx, ("mean", m)] if ("mean", m) in wide.columns else np.nan
                 for m in rep.models}  # fmt: skip
        cells = []
        for m in rep.models:
            mu = means[m]
            if pd.isna(mu) and ("n", m) in wide.columns and pd.isna(wide.loc[idx, ("n", m)]):
                cells.append(None)
                continue
            sd, n = wide.loc[idx, ("std", m)], int(wide.loc[idx, ("n", m)])
            cells.append((float(mu), float(sd), n))
        finite = [(i, c[0]) for i, c in enumerate(cells) if c and math.isfinite(c[0])]
        pick = None
        if finite:
            fn = max if direction == "higher" else min
            pick = fn(finite, key=lambda t: t[1])[0]
        row = [*key, *cells]
        if two:
            ma, mb = means[rep.models[0]], means[rep.models[1]]
            row += [ma - mb if not (pd.isna(ma) or pd.isna(mb)) else None,
                    ma / mb if not (pd.isna(ma) or pd.isna(mb)) and mb != 0 else None]  # fmt: skip
        row.append(_baseline_for(rep, task))
        rows.append(row)
        best.append(None if pick is None else len(key) + pick)
    return cols, rows, best


def leaderboard_rows(rep: Report) -> tuple[list[str], list[list], list[int | None]]:
    group = ["task"] + ([rep.by] if rep.by and rep.by != "model" else [])
    cols = [*group, "rank", "model", "mean", "std", "n", "baseline"]
    rows, best = [], []
    for key, g in rep.stats.groupby(group, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        higher = metric_direction(rep.metric, key[0]) == "higher"
        order = g.assign(_nan=g["mean"].isna()).sort_values(
            ["_nan", "mean"], ascending=[True, not higher]
        )
        for rank, (_, r) in enumerate(order.iterrows(), start=1):
            rows.append([*key, rank, r["model"], float(r["mean"]), float(r["std"]), int(r["n"]),
                         _baseline_for(rep, key[0])])  # fmt: skip
            best.append(len(group) + 2 if rank == 1 else None)
    return cols, rows, best


def flat_rows(cols, rows, cell_cols) -> tuple[list[str], list[list]]:
    """Machine-readable layout: each (mean, std, n) cell of `cell_cols` becomes three columns."""
    cells = {i for i, c in enumerate(cols) if c in cell_cols}
    out_cols: list[str] = []
    for i, c in enumerate(cols):
        out_cols += [f"{c}_mean", f"{c}_std", f"{c}_n"] if i in cells else [c]
    out_rows = []
    for r in rows:
        new: list = []
        for i, v in enumerate(r):
            new += (list(v) if v else [None, None, None]) if i in cells else [v]
        out_rows.append(new)
    return out_cols, out_rows


def format_cell(v) -> str | None:
    if isinstance(v, tuple):
        mu, sd, n = v
        return f"{mu:.4g} ± {sd:.2g} (n={n})"
    return v


def plot_report(rep: Report, path: str) -> None:
    """Metric against --by (k or seq_len) per model with ±std error bars, one panel per task;
    log axes where the values span more than a factor of 20."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if rep.by not in ("k", "seq_len"):
        raise UsageError("--plot needs --by k or --by seq_len (the x axis)")
    tasks = sorted(set(rep.stats["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.5), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        sub = rep.stats[(rep.stats["task"] == task) & rep.stats[rep.by].notna()]
        for model in rep.models:
            m = sub[sub["model"] == model].sort_values(rep.by)
            if m.empty:
                continue
            ax.errorbar(m[rep.by], m["mean"], yerr=m["std"], marker="o", capsize=3, label=model)
        xs = sub[rep.by].astype(float)
        ys = sub["mean"][np.isfinite(sub["mean"]) & (sub["mean"] > 0)]
        if len(xs) and xs.min() > 0 and xs.max() / xs.min() > 20:
            ax.set_xscale("log", base=2)
        if len(ys) and ys.max() / ys.min() > 20:
            ax.set_yscale("log")
        base = _baseline_for(rep, task)
        if base is not None:
            ax.axhline(base, color="grey", ls="--", lw=1, label="trivial baseline")
        ax.set(title=task, xlabel=rep.by, ylabel=rep.metric)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
