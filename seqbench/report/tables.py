"""Comparison tables and leaderboards (pandas); their plots are in plots.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqbench.errors import SeqbenchError, UsageError
from seqbench.report.frames import (
    add_config_columns,
    label_variants,
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
    # models whose runs in one cell differed beyond the seed: {model: [fields, variant labels]}
    variants: dict[str, list] | None = None

    @property
    def notes(self) -> list[str]:
        """One line per model split into variants, naming the fields that told them apart."""

        def shown(labels: list[str]) -> str:
            if len(labels) <= 6:
                return ", ".join(labels)
            return f"{', '.join(labels[:5])} and {len(labels) - 5} more"

        return [
            f"{m}: runs differ in {', '.join(fs)} beyond the seed, so each config is reported "
            f"apart ({shown(labels)}); --by {fs[0]} groups by it, --where picks one"
            for m, (fs, labels) in (self.variants or {}).items()
        ]

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
    df, variants = label_variants(df, group)  # never a mean over different configs
    stats = _agg(df, [*group, "model"])
    models = compare or sorted(set(df["family"]))
    models = [v for m in models for v in (variants[m][1] if m in variants else [m])]
    base = row_baselines(db, sorted(set(df["task"])), group, sweep=sweep, where=where)
    compared = bool(compare) and "model" not in bys
    return Report(stats, metric, bys, models, compared, base, df, variants)


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


def _seed_values(rep: Report, model: str, key: tuple, full: bool = False) -> pd.Series:
    """One value per seed of `model` in the row `key` (with `full`: its runs without a k, the
    full model that stands as the reference in every k row)."""
    df = rep.frame[rep.frame["model"] == model]
    for name, v in zip(rep.group, key, strict=True):
        if name == "k" and full:
            df = df[df["k"].isna()]
        elif v is None or (isinstance(v, float) and v != v):
            df = df[df[name].isna()]
        else:
            df = df[df[name] == v]
    return df.groupby("seed")["value"].mean()


def _paired(rep: Report, key: tuple, a: str, b: str):
    from seqbench.report.stats import paired

    va, vb = _seed_values(rep, a, key), _seed_values(rep, b, key)
    if "k" in rep.group:  # a full model's runs stand in every k row
        va = va if len(va) else _seed_values(rep, a, key, full=True)
        vb = vb if len(vb) else _seed_values(rep, b, key, full=True)
    return paired(va, vb)


def comparison_rows(
    rep: Report, ci: bool = False
) -> tuple[list[str], list[list], list[int | None]]:
    """(columns, rows, index of the best model column per row) for a --compare report. With
    `ci`, the difference column is the paired comparison across the seeds both models ran (a
    report.stats.Paired: mean difference, its 95% interval, p), or None without a common
    seed."""
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
            diff = float(ma - mb) if both else None
            if ci and both:
                diff = _paired(rep, key, *rep.models[:2])
            row += [diff, float(ma / mb) if both and mb != 0 else None]
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


def flat_rows(cols, rows, cell_cols, ci: bool = False) -> tuple[list[str], list[list]]:
    """Machine-readable layout: each (mean, std, n) cell of `cell_cols` becomes three columns
    (five with `ci`: the 95% interval's ends too); a paired difference becomes five."""
    from seqbench.report.stats import Paired, interval

    cells = {i for i, c in enumerate(cols) if c in cell_cols}
    paired = {i for i, c in enumerate(cols) if any(isinstance(r[i], Paired) for r in rows)}
    cell_parts = ["mean", "std", "n", *(["ci_lo", "ci_hi"] if ci else [])]
    out_cols: list[str] = []
    for i, c in enumerate(cols):
        if i in cells:
            out_cols += [f"{c}_{p}" for p in cell_parts]
        elif i in paired:
            out_cols += [f"{c}_paired", f"{c}_ci_lo", f"{c}_ci_hi", f"{c}_pairs", f"{c}_p"]
        else:
            out_cols.append(c)
    out_rows = []
    for r in rows:
        new: list = []
        for i, v in enumerate(r):
            if i in cells:
                vals = list(v) if v else [None, None, None]
                if ci:
                    vals += list(interval(*v)) if v else [None, None]
                new += vals
            elif i in paired:
                p = v if isinstance(v, Paired) else None
                new += [p.diff, p.lo, p.hi, p.pairs, p.p] if p else [v, None, None, None, None]
            else:
                new.append(v)
        out_rows.append(new)
    return out_cols, out_rows


def format_cell(v, ci: bool = False) -> str | None:
    """A cell for people: "mean ± std (n)", or with `ci` "mean [lo, hi] (n)" (95%, t)."""
    from seqbench.report.stats import Paired, interval

    if isinstance(v, Paired):
        return v.text()
    if isinstance(v, tuple):
        mu, sd, n = v
        if n == 1:
            return f"{mu:.4g} (n=1)"
        if ci:
            lo, hi = interval(mu, sd, n)
            return f"{mu:.4g} [{lo:.3g}, {hi:.3g}] (n={n})"
        return f"{mu:.4g} ± {sd:.2g} (n={n})"
    return v
