"""A report as the rows a user reads: the comparison table (`--compare`: each pair of models
with its difference and paired interval, like with like: runs that differ in their task or more
than their variants are never compared), the leaderboard, the flat rows of every other view,
and a cell's text."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from seqbench.report.frames import canonical, metric_direction
from seqbench.report.stats import Paired, clearly_ahead, interval, paired
from seqbench.report.tables import Cell, Outcome, Report, baseline_for, row_key


def _other_columns(rep: Report) -> list[str]:
    return list(rep.others or {})


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
        ks = [row_key(group, idx)[group.index("k")] for idx in wide.index[present]]
        if not ks or any(k is not None for k in ks):
            continue  # truncated runs of its own: its rows speak for themselves
        for idx in wide.index[present]:
            key = row_key(group, idx)
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
    df = _in_row(rep, rep.frame[rep.frame["model"] == model], key, full)
    return df.groupby("seed")["value"].mean()


def _paired(rep: Report, key: tuple, a: str, b: str):

    va, vb = _seed_values(rep, a, key), _seed_values(rep, b, key)
    if "k" in rep.group:  # a full model's runs stand in every k row
        va = va if len(va) else _seed_values(rep, a, key, full=True)
        vb = vb if len(vb) else _seed_values(rep, b, key, full=True)
    return paired(va, vb)


# Config fields two families can share (the task's and the training budget's); a model field
# (hidden, layers, lr, ...) differs between families by design and is never matched on.
def _comparable() -> set[str]:
    from seqbench.configure import task_fields

    return set(task_fields()) | {"steps", "epochs", "batch_size"}


def compared_pairs(rep: Report) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(the (A, B) column pairs the difference and ratio compare, the fields a pair must agree
    on in a row, a note per variant left without a partner). A and B are the first two
    compared families. Where either is split into variants, each variant of A is compared with
    each of B that ran with the same values of the task and budget fields they vary in
    (seq_len, steps, ...); model fields (width, lr) may differ, as they do between families.
    Never a variant of A with another variant of A."""
    families = list(dict.fromkeys(_family_of(rep, m) for m in rep.models))
    if len(families) < 2:
        return [], [], []
    fa, fb = families[:2]
    la = [m for m in rep.models if _family_of(rep, m) == fa]
    lb = [m for m in rep.models if _family_of(rep, m) == fb]
    varying = {f for fam in (fa, fb) for f in (rep.variants or {}).get(fam, [[]])[0]}
    # a task field the two families ran at different values (one's markers in each half,
    # the other's uniform) makes them different tasks even where neither is split
    across = _task_fields_between(rep, la + lb) - varying
    match = sorted((varying & _comparable()) | across)
    pairs = [(a, b) for a in la for b in lb if _values(rep, a, match) & _values(rep, b, match)]
    paired = {m for pair in pairs for m in pair}
    notes = [
        f"{m}: no {other} runs with the same {', '.join(match)} to compare it with"
        + (f" ({_shown_values(rep, la + lb, sorted(across))})" if across else "")
        for labels, other in ((la, fb), (lb, fa))
        for m in labels
        if m not in paired and (len(la) * len(lb) > 1 or across)
    ]
    return pairs, match, notes


def _task_fields_between(rep: Report, labels: list[str]) -> set[str]:
    """The task fields (the seed, a file's place and the --by fields aside) whose values
    differ among the runs of `labels` in one report row."""
    from seqbench.configure import task_fields

    names = [n for n in task_fields() if n not in ("seed", "path", *rep.group)]
    df = rep.frame[rep.frame["model"].isin(labels)]
    out: set[str] = set()
    for _, row in df.groupby(rep.group, dropna=False):  # within a row: tasks differ by design
        out |= {n for n in names if len({canonical(c.get(n)) for c in row["config"]}) > 1}
    return out


def _shown_values(rep: Report, labels: list[str], names: list[str]) -> str:
    """'marker: indrnn halves, lstm uniform' for the fields `names` across `labels`."""

    def values(m: str, n: str) -> str:
        return "/".join(str(json.loads(v[0])) for v in sorted(_values(rep, m, [n])))

    return "; ".join(f"{n}: {', '.join(f'{m} {values(m, n)}' for m in labels)}" for n in names)


def _family_of(rep: Report, label: str) -> str:
    for fam, (_, labels) in (rep.variants or {}).items():
        if label in labels:
            return fam
    return label


def _values(rep: Report, label: str, names: list[str], key: tuple | None = None) -> set:
    """The values of `names` that `label`'s runs have (in the row `key`, if given; a full
    model's runs stand in every k row)."""
    df = rep.frame[rep.frame["model"] == label]
    if key is not None:
        row = _in_row(rep, df, key)
        df = row if len(row) or "k" not in rep.group else _in_row(rep, df, key, full=True)
    return {tuple(canonical(c.get(n)) for n in names) for c in df["config"]}


def _in_row(rep: Report, df: pd.DataFrame, key: tuple, full: bool = False) -> pd.DataFrame:
    for name, v in zip(rep.group, key, strict=True):
        if name == "k" and full:
            df = df[df["k"].isna()]
        elif v is None or (isinstance(v, float) and v != v):
            df = df[df[name].isna()]
        else:
            df = df[df[name] == v]
    return df


def comparison_rows(
    rep: Report, ci: bool = False, notes: list[str] | None = None
) -> tuple[list[str], list[list], list[int | None]]:
    """(columns, rows, index of the best model column per row) for a --compare report. Each
    model cell is a Cell (mean, std, n, and the seeds lost to a divergence or failure). The
    difference and ratio columns compare the pairs of compared_pairs (their notes are added
    to `notes`). With `ci`, a difference is the paired comparison across the seeds both
    models ran (a report.stats.Paired: mean difference, its 95% interval, p), or None without
    a common seed."""
    group = rep.group
    wide = rep.stats.pivot_table(
        index=group, columns="model", values=["mean", "std", "n"], dropna=False, aggfunc="first"
    )
    pairs, match, pair_notes = compared_pairs(rep)
    if notes is not None:
        notes.extend(pair_notes)
    cols = [*group, *rep.models]
    for a, b in pairs:
        cols += [f"{a} - {b}", f"{a} / {b}"]
    cols += ["baseline", *_other_columns(rep)]
    full = _full_model_cells(rep, wide)
    keys = list(wide.index)
    for key, _m in rep.outcomes or {}:  # rows whose every seed was lost
        idx = key if len(group) > 1 else key[0]
        if idx not in keys and not any(row_key(group, k) == key for k in keys):
            keys.append(idx)
    rows, best = [], []
    for idx in keys:
        key = row_key(group, idx)  # unset (k of a full model): blank
        task = key[0]
        direction = metric_direction(rep.metric, task)
        present = idx in wide.index
        means = {
            m: wide.loc[idx, ("mean", m)] if present and ("mean", m) in wide.columns else np.nan
            for m in rep.models
        }
        cells = []
        for m in rep.models:
            mu = means[m]
            outcome = rep.outcome(key, m)
            if pd.isna(mu) and (
                not present or ("n", m) not in wide.columns or pd.isna(wide.loc[idx, ("n", m)])
            ):
                ref = full.get((m, _without_k(group, key))) if "k" in group else None
                if ref is not None and key[group.index("k")] is not None and outcome is None:
                    cells.append(Cell(*ref))  # the full model as every k row's reference
                    means[m] = ref[0]
                else:  # no completed seed: the lost ones, if any
                    cells.append(Cell(math.nan, math.nan, 0, outcome) if outcome else None)
                continue
            sd, n = wide.loc[idx, ("std", m)], int(wide.loc[idx, ("n", m)])
            cells.append(Cell(float(mu), float(sd), n, outcome))
        if all(c is None for c in cells):
            continue  # a combination of --by values that no run has (pivot's full product)
        finite = [(i, c[0]) for i, c in enumerate(cells) if c and math.isfinite(c[0])]
        pick = None
        if finite:  # bold the best only where it is ahead beyond the seeds' noise
            ranked = sorted(finite, key=lambda t: t[1], reverse=direction == "higher")
            blown = sum(1 for c in cells if c and not math.isfinite(c[0]))
            if (len(ranked) == 1 and blown) or (
                len(ranked) > 1 and clearly_ahead(cells[ranked[0][0]], cells[ranked[1][0]])
            ):
                pick = ranked[0][0]
        row = [*key, *cells]
        for a, b in pairs:
            ma, mb = means[a], means[b]
            both = not (pd.isna(ma) or pd.isna(mb))
            if both and match and not _values(rep, a, match, key) & _values(rep, b, match, key):
                both = False  # in this row they ran with different T (or budget)
            diff = float(ma - mb) if both else None
            if ci and both:
                diff = _paired(rep, key, a, b)
            row += [diff, float(ma / mb) if both and mb != 0 else None]
        row.append(baseline_for(rep, key))
        row += [baseline_for(rep, key, name) for name in _other_columns(rep)]
        rows.append(row)
        best.append(None if pick is None else len(key) + pick)
    return cols, rows, best


def leaderboard_rows(rep: Report) -> tuple[list[str], list[list], list[int | None]]:
    group = rep.group
    cols = [*group, "rank", "model", "mean", "std", "n", "lost", "baseline"]
    cols += _other_columns(rep)
    rows, best = [], []
    for key, g in rep.stats.groupby(group, dropna=False, sort=True):
        key = row_key(group, key)
        higher = metric_direction(rep.metric, key[0]) == "higher"
        # non-finite means (nan, a blown-up inf) rank last and are never the best
        order = g.assign(_bad=~np.isfinite(g["mean"].astype(float))).sort_values(
            ["_bad", "mean"], ascending=[True, not higher]
        )
        stats = [(float(r["mean"]), float(r["std"]), int(r["n"])) for _, r in order.iterrows()]
        finite = [c for c in stats if math.isfinite(c[0])]
        # ahead of the next finite mean beyond the seeds' noise, or the only finite one of several
        ahead = (len(finite) == 1 and len(stats) > 1) or (
            len(finite) > 1 and clearly_ahead(finite[0], finite[1])
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
                    _lost_text(rep.outcome(key, r["model"]), int(r["n"])),
                    baseline_for(rep, key),
                    *(baseline_for(rep, key, name) for name in _other_columns(rep)),
                ]
            )
            best.append(len(group) + 2 if rank == 1 and ahead and not r["_bad"] else None)
    return cols, rows, best


def _lost_text(outcome: Outcome | None, n: int) -> str | None:
    """The leaderboard's `lost` cell: '3 of 5: 3 diverged', blank when no seed was lost."""
    if outcome is None or not outcome.lost:
        return None
    return f"{outcome.lost} of {outcome.ran}: " + outcome.text(n).split(", ", 1)[1]


def flat_rows(cols, rows, cell_cols, ci: bool = False) -> tuple[list[str], list[list]]:
    """Machine-readable layout: each (mean, std, n) cell of `cell_cols` becomes its columns
    mean, std, n (the completed seeds), with `ci` the 95% interval's ends, then ran (the seeds
    that ran) and lost (diverged or failed); a paired difference becomes five."""

    cells = {i for i, c in enumerate(cols) if c in cell_cols}
    paired = {i for i, c in enumerate(cols) if any(isinstance(r[i], Paired) for r in rows)}
    cell_parts = ["mean", "std", "n", *(["ci_lo", "ci_hi"] if ci else []), "ran", "lost"]
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
                    vals += list(interval(*v)) if v and v[2] else [None, None]
                outcome = getattr(v, "outcome", None)
                if outcome is not None:
                    vals += [outcome.ran, outcome.lost]
                else:
                    vals += [v[2], 0] if v else [None, None]
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

    if isinstance(v, Paired):
        return v.text()
    if isinstance(v, tuple):
        mu, sd, n = v
        outcome = getattr(v, "outcome", None)
        count = f"n={outcome.text(n)}" if outcome is not None and outcome.lost else f"n={n}"
        if n == 0:
            return f"– ({count})"
        if n == 1:
            return f"{mu:.4g} ({count})"
        if ci:
            lo, hi = interval(mu, sd, n)
            return f"{mu:.4g} [{lo:.3g}, {hi:.3g}] ({count})"
        return f"{mu:.4g} ± {sd:.2g} ({count})"
    return v
