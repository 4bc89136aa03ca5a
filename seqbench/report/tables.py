"""Comparison tables and leaderboards (pandas), and their plots (matplotlib, headless)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqbench.errors import SeqbenchError, UsageError
from seqbench.report.frames import (
    add_config_columns,
    metric_direction,
    parse_by,
    results_frame,
    row_baselines,
    unset_to_none,
)
from seqbench.store.results import summary_keys


@dataclass
class Report:
    """A long frame (one row per group × model: mean, std, n) plus how to lay it out."""

    stats: pd.DataFrame  # columns: task, *by (without model), model, mean, std, n
    metric: str
    by: list[str]  # the --by fields, in order; may include "model"
    models: list[str]  # the compared models, in order (all models for a leaderboard)
    compare: bool
    baselines: dict
    frame: pd.DataFrame | None = None  # one row per run (value, seed, the --by fields)

    @property
    def group(self) -> list[str]:
        """The row key: the task and every --by field except the model."""
        return ["task"] + [b for b in self.by if b != "model"]


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
    by: str | list[str] | None = None,
    sweep: str | None = None,
    where: str | None = None,
) -> Report | None:
    """None when the store holds no completed training runs matching the filters at all.
    `by` is a run column (k, seq_len, model) or any config field (stable, teacher_lam, ...),
    or a comma-separated list of them."""
    bys = parse_by(by)
    if compare is not None and len(compare) < 1:
        raise UsageError("--compare needs at least one model")
    df = results_frame(db, metric, tasks=tasks, models=compare, sweep=sweep, where=where)
    if df.empty:
        known = summary_keys(db)
        if known and metric not in known:
            from seqbench.errors import UnknownNameError

            raise UnknownNameError("--metric (a summary key)", metric, known)
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
    df = add_config_columns(df, bys)
    for b in bys:  # unhashable config values (lists) group by their text
        if df[b].map(lambda v: isinstance(v, (list, dict))).any():
            df[b] = df[b].map(str)
    group = ["task"] + [b for b in bys if b != "model"]
    stats = _agg(df, [*group, "model"])
    models = compare or sorted(set(df["model"]))
    base = row_baselines(db, sorted(set(df["task"])), group, sweep=sweep, where=where)
    return Report(stats, metric, bys, models, bool(compare) and "model" not in bys, base, df)


INT_AXES = ("k", "seq_len")  # integer run columns that pandas turns into floats beside a blank


def _row_key(group: list[str], key) -> tuple:
    """A group key as printed: unset parts None, k and seq_len as integers (not 1.0)."""
    key = unset_to_none(key if isinstance(key, tuple) else (key,))
    return tuple(
        int(v) if name in INT_AXES and isinstance(v, float) and v.is_integer() else v
        for name, v in zip(group, key, strict=True)
    )


def _baseline_for(rep: Report, key: tuple) -> float | None:
    """The row's own baseline, else the task's mean one (None when the task has none)."""
    key = unset_to_none(key)
    found = rep.baselines.get(key, rep.baselines.get(key[:1]))
    return None if found is None else float(found)


def _plot_baseline(rep: Report, task: str) -> float | None:
    """One line per panel, only when the task's rows share one baseline (within 1%)."""
    vals = [v for k, v in rep.baselines.items() if k[0] == task and len(k) > 1]
    if vals and max(vals) - min(vals) > 0.01 * abs(max(vals)):
        return None
    return _baseline_for(rep, (task,))


def _without_k(group: list[str], key: tuple) -> tuple:
    return tuple(v for name, v in zip(group, key, strict=True) if name != "k")


def _full_model_cells(rep: Report, wide: pd.DataFrame) -> dict[tuple, tuple]:
    """(model, row key without k) -> (mean, std, n) of a compared model that has no run with a
    k at all (a full recurrent model): with --by k it is the reference in every k row, so the
    difference and ratio columns compare each truncated model with it (Miller & Hardt)."""
    group = rep.group
    if "k" not in group:
        return {}
    out = {}
    for m in rep.models:
        if ("n", m) not in wide.columns:
            continue
        present = wide[("n", m)].notna()
        ks = [_row_key(group, idx)[group.index("k")] for idx in wide.index[present]]
        if not ks or any(k is not None for k in ks):
            continue  # truncated runs of its own: its rows speak for themselves
        for idx in wide.index[present]:
            key = _row_key(group, idx)
            cell = (
                float(wide.loc[idx, ("mean", m)]),
                float(wide.loc[idx, ("std", m)]),
                int(wide.loc[idx, ("n", m)]),
            )
            out[(m, _without_k(group, key))] = cell
    return out


def comparison_rows(rep: Report) -> tuple[list[str], list[list], list[int | None]]:
    """(columns, rows, index of the best model column per row) for a --compare report."""
    group = rep.group
    wide = rep.stats.pivot_table(
        index=group, columns="model", values=["mean", "std", "n"], dropna=False, aggfunc="first"
    )
    cols = [*group, *rep.models]
    two = len(rep.models) >= 2
    if two:
        a, b = rep.models[:2]
        cols += [f"{a} - {b}", f"{a} / {b}"]
    cols.append("baseline")
    full = _full_model_cells(rep, wide)
    rows, best = [], []
    for idx, _ in wide.iterrows():
        key = _row_key(group, idx)  # unset (k of a full model): blank
        task = key[0]
        direction = metric_direction(rep.metric, task)
        means = {
            m: wide.loc[idx, ("mean", m)] if ("mean", m) in wide.columns else np.nan
            for m in rep.models
        }
        cells = []
        for m in rep.models:
            mu = means[m]
            if pd.isna(mu) and ("n", m) in wide.columns and pd.isna(wide.loc[idx, ("n", m)]):
                ref = full.get((m, _without_k(group, key))) if "k" in group else None
                if ref is not None and key[group.index("k")] is not None:
                    cells.append(ref)  # the full model as every k row's reference
                    means[m] = ref[0]
                else:
                    cells.append(None)
                continue
            sd, n = wide.loc[idx, ("std", m)], int(wide.loc[idx, ("n", m)])
            cells.append((float(mu), float(sd), n))
        if all(c is None for c in cells):
            continue  # a combination of --by values that no run has (pivot's full product)
        finite = [(i, c[0]) for i, c in enumerate(cells) if c and math.isfinite(c[0])]
        pick = None
        if finite:
            fn = max if direction == "higher" else min
            pick = fn(finite, key=lambda t: t[1])[0]
        row = [*key, *cells]
        if two:
            ma, mb = means[rep.models[0]], means[rep.models[1]]
            both = not (pd.isna(ma) or pd.isna(mb))
            row += [float(ma - mb) if both else None, float(ma / mb) if both and mb != 0 else None]
        row.append(_baseline_for(rep, key))
        rows.append(row)
        best.append(None if pick is None else len(key) + pick)
    return cols, rows, best


def leaderboard_rows(rep: Report) -> tuple[list[str], list[list], list[int | None]]:
    group = rep.group
    cols = [*group, "rank", "model", "mean", "std", "n", "baseline"]
    rows, best = [], []
    for key, g in rep.stats.groupby(group, dropna=False, sort=True):
        key = _row_key(group, key)
        higher = metric_direction(rep.metric, key[0]) == "higher"
        # non-finite means (nan, a blown-up inf) rank last and are never the best
        order = g.assign(_bad=~np.isfinite(g["mean"].astype(float))).sort_values(
            ["_bad", "mean"], ascending=[True, not higher]
        )
        for rank, (_, r) in enumerate(order.iterrows(), start=1):
            rows.append(
                [
                    *key,
                    rank,
                    r["model"],
                    float(r["mean"]),
                    float(r["std"]),
                    int(r["n"]),
                    _baseline_for(rep, key),
                ]
            )
            best.append(len(group) + 2 if rank == 1 and not r["_bad"] else None)
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
        return f"{mu:.4g} (n=1)" if n == 1 else f"{mu:.4g} ± {sd:.2g} (n={n})"
    return v


def plot_report(rep: Report, path: str) -> None:
    """Metric against the first numeric --by field (k, seq_len, teacher_lam, ...) with ±std
    error bars (grouped bars when there is none), one panel per task and one line per model
    (and per value of any other --by field). A run without a value on the x axis (k unset:
    the full recurrent model) is drawn as a dotted horizontal line. Log axes where the values
    span more than a factor of 20."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = next((b for b in rep.by if b != "model" and _numeric(rep.stats[b])), None)
    if x is None:
        _bar_plot(rep, path, plt)
        return
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
        if len(ys) and ys.max() / ys.min() > 20:
            ax.set_yscale("log")
        base = _plot_baseline(rep, task)
        if base is not None:
            ax.axhline(base, color="grey", ls="--", lw=1, label="trivial baseline")
        ax.set(title=task, xlabel=x, ylabel=rep.metric)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _bar_plot(rep: Report, path: str, plt) -> None:
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
        if len(ys) and ys.max() / ys.min() > 20:
            ax.set_yscale("log")
        base = _plot_baseline(rep, task)
        if base is not None:
            ax.axhline(base, color="grey", ls="--", lw=1, label="trivial baseline")
        ax.set(title=task, ylabel=rep.metric)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _numeric(col: pd.Series) -> bool:
    vals = col.dropna()
    return len(vals) > 0 and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        for v in vals
    )
