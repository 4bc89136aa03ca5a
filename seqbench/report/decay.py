"""How fast a truncated model's gap to the full model closes as its context k grows.

Miller & Hardt: for a λ-contractive recurrent model, the k-truncated model's output differs
from the full model's by O(λ^k), so a squared-error gap shrinks like λ^(2k). Given a report
grouped by k, this fits gap(k) = metric(k) − reference ≈ C·ρ^k for each model (and each value
of the other --by fields, e.g. the teacher's λ) by least squares on log gap.

The gap is paired by seed: the reference is the full model (the runs without a k) of the same
seed, which matters when the seed also draws the data (each seed of the teacher task is
another teacher). Without a full model, the reference is the model's own best value over k.
The points fitted are contiguous and monotone: from the smallest k whose gap stands clear of
the noise (every seed's gap positive, the mean gap above a quarter of the reference, the full
model's own error), each next k tried while its gap is clear too and smaller than the one
before; the first that is not ends the fit (a later uptick, or a k past the noise floor, is
never taken). The rate's interval is the 2.5–97.5% range of the fitted rate over bootstrap
resamples of the seeds (paired gaps resampled whole).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seqbench.errors import UsageError
from seqbench.report.frames import metric_direction
from seqbench.report.tables import Report

COLUMNS = [
    "reference",
    "points",
    "k_used",
    "rate",
    "rate_low",
    "rate_high",
    "sqrt_rate",
    "sqrt_low",
    "sqrt_high",
    "half_life_k",
]
RESAMPLES = 1000


def _paired_gaps(runs: pd.DataFrame, full: pd.DataFrame, x: str, sign: float) -> pd.DataFrame:
    """The gap sign·(value − reference) of each run, a table seed × value of x (the reference
    is the same seed's full model, else the model's own best value of that seed)."""
    if len(full):
        ref = full.groupby("seed", dropna=False)["value"].mean()
    else:
        ref = runs.groupby("seed", dropna=False)["value"].agg(lambda v: sign * (sign * v).min())
    runs = runs[runs["seed"].isin(ref.index)]
    gap = sign * (runs["value"].to_numpy(float) - ref.loc[runs["seed"]].to_numpy(float))
    return runs.assign(gap=gap).pivot_table(index="seed", columns=x, values="gap", aggfunc="mean")


def contiguous(table: pd.DataFrame, floor: float) -> tuple[list[float], str | None]:
    """The values of x to fit (see the module's docstring) and, when they end early, why."""
    used: list[float] = []
    for k in sorted(table.columns):
        col = table[k].dropna()
        clear = len(col) > 0 and float(col.min()) > 0 and float(col.mean()) > floor
        if not clear:
            if used:
                return used, f"stops at {k:g}: its gap is lost in the noise"
            continue
        if used and float(col.mean()) >= float(table[used[-1]].mean()):
            return used, f"stops at {k:g}: its gap is no smaller than at {used[-1]:g}"
        used.append(k)
    return used, None


def _slope(ks: np.ndarray, gaps: np.ndarray) -> float:
    return float(np.polyfit(ks, np.log(gaps), 1)[0])


def rate_interval(table: pd.DataFrame, ks: list[float], seed: int = 0) -> tuple[float, float]:
    """The 95% bootstrap interval of the fitted rate over resamples of the seeds (nan with one
    seed): a resample whose mean gap is not positive at every k is left out."""
    g = table[ks].to_numpy(float)
    if g.shape[0] < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    x = np.asarray(ks, float)
    rates = []
    for _ in range(RESAMPLES):
        draw = g[rng.integers(0, g.shape[0], g.shape[0])]
        n = np.sum(~np.isnan(draw), axis=0)
        if np.any(n == 0):  # a k none of the drawn seeds ran
            continue
        m = np.nansum(draw, axis=0) / n
        if np.all(m > 0):
            rates.append(math.exp(_slope(x, m)))
    if not rates:
        return math.nan, math.nan
    return float(np.quantile(rates, 0.025)), float(np.quantile(rates, 0.975))


def fit_decay(
    rep: Report, x: str = "k", notes: list[str] | None = None
) -> tuple[list[str], list[list]]:
    """(columns, rows): one row per task × other --by values × model with an x axis. For a
    row whose rate is nan, `notes` (if given) gets one line saying which points the fit
    needed and which it had."""
    if x not in rep.by:
        raise UsageError(f"`fit_decay` needs `by` {x} (the context axis)")
    if rep.frame is None:
        raise UsageError("`fit_decay` needs the report's runs")
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
            table = _paired_gaps(runs, full, x, sign)
            ref = float(full["value"].mean()) if len(full) else math.nan
            floor = 0.25 * abs(ref) if ref == ref else 0.0
            ks, why = contiguous(table, floor)
            rate = half = lo = hi = math.nan
            if len(ks) < 2 and notes is not None:
                where = " ".join(f"{b}={v}" for b, v in zip(["task", *others], key, strict=True))
                all_k = ",".join(f"{k:g}" for k in sorted(table.columns))
                clear = ",".join(f"{k:g}" for k in ks) or "none"
                notes.append(
                    f"{where} {model}: no decay rate: the fit needs at least 2 contiguous values "
                    f"of {x} whose gap to the {'full model' if len(full) else 'best value'} "
                    f"stands clear of noise (every seed's gap > 0, mean gap > {floor:.3g}) and "
                    f"shrinks; of {x} = {all_k} it had {clear}" + (f" ({why})" if why else "")
                )
            if len(ks) >= 2:
                slope = _slope(np.asarray(ks, float), table[ks].mean().to_numpy(float))
                rate = math.exp(slope)
                half = math.log(0.5) / slope if slope < 0 else math.inf
                lo, hi = rate_interval(table, ks)
            rows.append(
                [
                    *(None if v != v else v for v in key),
                    model,
                    ref,
                    len(ks),
                    ",".join(f"{k:g}" for k in ks),
                    rate,
                    lo,
                    hi,
                    *(math.sqrt(v) if v == v else math.nan for v in (rate, lo, hi)),
                    half,
                ]
            )
    return cols, rows
