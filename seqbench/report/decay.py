"""How fast a truncated model's gap to the full model closes as its context k grows.

Miller & Hardt: for a λ-contractive recurrent model, the k-truncated model's output differs
from the full model's by O(λ^k), so a squared-error gap shrinks like λ^(2k). Given a report
grouped by k, this fits gap(k) = metric(k) − reference ≈ C·ρ^k for each model (and each value
of the other --by fields, e.g. the teacher's λ) by least squares on log gap.

The gap is paired by seed: the reference is the full model (the runs without a k) of the same
seed, which matters when the seed also draws the data (each seed of the teacher task is
another teacher). Without a full model, the reference is the model's own best value over k.
Only points where the gap stands clear of the noise are fitted: every seed's gap is positive
and the mean gap is above a quarter of the reference (the full model's own error).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seqbench.errors import UsageError
from seqbench.report.frames import metric_direction
from seqbench.report.tables import Report

COLUMNS = ["reference", "points", "k_used", "rate", "sqrt_rate", "half_life_k"]


def _paired_gaps(runs: pd.DataFrame, full: pd.DataFrame, x: str, sign: float) -> pd.DataFrame:
    """Per value of x: mean and smallest over seeds of sign·(value − reference)."""
    if len(full):
        ref = full.groupby("seed", dropna=False)["value"].mean()
    else:
        ref = runs.groupby("seed", dropna=False)["value"].agg(lambda v: sign * (sign * v).min())
    runs = runs[runs["seed"].isin(ref.index)]
    gap = sign * (runs["value"].to_numpy(float) - ref.loc[runs["seed"]].to_numpy(float))
    g = runs.assign(gap=gap).groupby(x)["gap"]
    return pd.DataFrame({"mean": g.mean(), "min": g.min(), "n": g.count()}).reset_index()


def fit_decay(
    rep: Report, x: str = "k", notes: list[str] | None = None
) -> tuple[list[str], list[list]]:
    """(columns, rows): one row per task × other --by values × model with an x axis. For a
    row whose rate is nan, `notes` (if given) gets one line saying which points the fit
    needed and which it had."""
    if x not in rep.by:
        raise UsageError(f"--fit-decay needs --by {x} (the context axis)")
    if rep.frame is None:
        raise UsageError("--fit-decay needs the report's runs")
    others = [b for b in rep.group[1:] if b != x]
    cols = ["task", *others, "model", *COLUMNS]
    rows: list[list] = []
    for key, g in rep.frame.groupby(["task", *others], dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        sign = 1.0 if metric_direction(rep.metric, key[0]) == "lower" else -1.0
        full = g[g[x].isna()]
        for model in rep.models:
            runs = g[(g["model"] == model) & g[x].notna()]
            if runs[x].nunique() < 2:
                continue
            gaps = _paired_gaps(runs, full, x, sign).sort_values(x)
            ref = float(full["value"].mean()) if len(full) else math.nan
            floor = 0.25 * abs(ref) if ref == ref else 0.0
            use = (gaps["mean"] > floor) & (gaps["min"] > 0)
            ks = gaps[x].to_numpy(float)[use.to_numpy()]
            rate = half = math.nan
            if len(ks) < 2 and notes is not None:
                where = " ".join(f"{b}={v}" for b, v in zip(["task", *others], key, strict=True))
                all_k = ",".join(str(int(k)) for k in gaps[x])
                clear = ",".join(str(int(k)) for k in ks) or "none"
                notes.append(
                    f"{where} {model}: no decay rate: the fit needs at least 2 values of {x} "
                    f"whose gap to the {'full model' if len(full) else 'best value'} stands "
                    f"clear of noise (every seed's gap > 0, mean gap > {floor:.3g}); of "
                    f"{x} = {all_k} it had {clear}"
                )
            if len(ks) >= 2:
                slope = float(np.polyfit(ks, np.log(gaps["mean"][use].to_numpy(float)), 1)[0])
                rate = math.exp(slope)
                half = math.log(0.5) / slope if slope < 0 else math.inf
            rows.append(
                [
                    *(None if v != v else v for v in key),
                    model,
                    ref,
                    len(ks),
                    ",".join(str(int(k)) for k in ks),
                    rate,
                    math.sqrt(rate) if rate == rate else math.nan,
                    half,
                ]
            )
    return cols, rows
