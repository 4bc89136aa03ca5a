"""How fast a truncated model's gap to the full model closes as its context k grows.

Miller & Hardt: for a λ-contractive recurrent model, the k-truncated model's output differs
from the full model's by O(λ^k), so a squared-error gap shrinks like λ^(2k). Given a report
grouped by k, this fits gap(k) = metric(k) − reference ≈ C·ρ^k for each model (and each value
of the other --by fields, e.g. the teacher's λ) by least squares on log gap, using only the
points where the gap stands clear of the noise (above a quarter of the reference and twice
the seed-to-seed spread). The reference is the full model's mean in the same group (the rows
without a k), or, without one, the best mean over k.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seqbench.errors import UsageError
from seqbench.report.frames import metric_direction
from seqbench.report.tables import Report

COLUMNS = ["reference", "points", "k_used", "rate", "sqrt_rate", "half_life_k"]


def fit_decay(rep: Report, x: str = "k") -> tuple[list[str], list[list]]:
    """(columns, rows): one row per task × other --by values × model with a k axis."""
    if x not in rep.by:
        raise UsageError(f"--fit-decay needs --by {x} (the context axis)")
    others = [b for b in rep.group[1:] if b != x]
    cols = ["task", *others, "model", *COLUMNS]
    rows: list[list] = []
    for key, g in rep.stats.groupby(["task", *others], dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        sign = 1.0 if metric_direction(rep.metric, key[0]) == "lower" else -1.0
        full = g[g[x].isna()]["mean"]
        for model in rep.models:
            m = g[(g["model"] == model) & g[x].notna()].sort_values(x)
            if len(m) < 2:
                continue
            ref = float(full.mean()) if len(full) else float(sign * (sign * m["mean"]).min())
            gap = sign * (m["mean"].to_numpy(float) - ref)
            noise = np.maximum(0.25 * abs(ref), 2 * m["std"].fillna(0).to_numpy(float))
            use = np.isfinite(gap) & (gap > noise)
            ks = m[x].to_numpy(float)[use]
            rate = half = math.nan
            if use.sum() >= 2:
                slope = float(np.polyfit(ks, np.log(gap[use]), 1)[0])
                rate = math.exp(slope)
                half = math.log(0.5) / slope if slope < 0 else math.inf
            rows.append([*key, model, ref, int(use.sum()), ",".join(str(int(k)) for k in ks),
                         rate, math.sqrt(rate) if rate == rate else math.nan, half])  # fmt: skip
    return cols, rows


def decay_frame(rep: Report, x: str = "k") -> pd.DataFrame:
    cols, rows = fit_decay(rep, x)
    return pd.DataFrame(rows, columns=cols)
