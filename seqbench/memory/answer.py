"""The answer to "how much context does this task need?", derived from a k-sweep's runs.

Pure pandas and NumPy over one row per run; no store, no torch. The definitions (docs/memory.md
says the same for users):

- the *gap* is the distance from the trivial baseline to the best mean any cell reached (a cell
  is one model at one context k, or a recurrent reference, averaged over its seeds);
- a context k *matches* when a feedforward family's mean at k is within ε·gap of that best;
- k*(ε) is the smallest k that matches; its interval is the 2.5–97.5 percentile range of k*
  over bootstrap resamples of each cell's seeds;
- the verdict is `nothing-learned` when no cell beats the baseline by LEARNED of it,
  `matches` when some k matches, `needs-recurrence` when a recurrent reference is the best and
  ahead of every feedforward cell beyond the seeds' noise (Welch's t-test), else `needs-more`
  (the largest k tried falls short).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

VERDICTS = ("matches", "needs-more", "nothing-learned", "needs-recurrence")
EPSILON = 0.05  # within 5% of the gap between the trivial baseline and the best
LEARNED = 0.05  # a cell learned when it beats the trivial baseline by 5% of it (as reports do)
RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Cell:
    model: str
    k: int | None  # None: a recurrent reference (full backpropagation through time)
    mean: float
    std: float
    n: int
    learned: bool
    matches: bool


@dataclass(frozen=True)
class Answer:
    task: str
    verdict: str
    k_star: int | None
    k_low: int | None
    k_high: int | None  # None with k_star set: the interval reaches past the largest k tried
    epsilon: float
    max_k: int
    metric: str
    higher_is_better: bool
    baseline: float
    best: float
    best_cell: str
    cells: list[Cell]
    run_ids: list[int]
    warnings: list[str] = field(default_factory=list)
    persistence: float | None = None  # a forecast's last-value predictor, where stored

    @property
    def sentence(self) -> str:
        return sentence(self)

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "verdict": self.verdict,
            "k_star": self.k_star,
            "k_low": self.k_low,
            "k_high": self.k_high,
            "epsilon": self.epsilon,
            "max_k": self.max_k,
            "metric": self.metric,
            "higher_is_better": self.higher_is_better,
            "baseline": _finite(self.baseline),
            "persistence": None if self.persistence is None else _finite(self.persistence),
            "best": _finite(self.best),
            "best_cell": self.best_cell,
            "sentence": self.sentence,
            "warnings": list(self.warnings),
            "cells": [
                {
                    "model": c.model,
                    "k": c.k,
                    "mean": _finite(c.mean),
                    "std": _finite(c.std),
                    "seeds": c.n,
                    "learned": c.learned,
                    "matches": c.matches,
                }
                for c in self.cells
            ],
            "run_ids": list(self.run_ids),
        }


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _label(model: str, k: int | None) -> str:
    return model if k is None else f"{model} at k={k}"


def derive(
    runs: pd.DataFrame,
    *,
    task: str,
    higher_is_better: bool,
    max_k: int,
    metric: str = "test_metric",
    epsilon: float = EPSILON,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Answer:
    """The answer from `runs`: one row per run with columns run_id, model, k (None for a
    recurrent reference), seed, value (the metric) and baseline (the run's trivial baseline),
    and optionally persistence (a forecast's last-value predictor: a warning when no model
    beats it).
    Non-finite values (a diverged run) count as the baseline: a run that blew up learned
    nothing."""
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must lie in (0, 1), got {epsilon}")
    if runs.empty:
        raise ValueError("no runs to derive an answer from")
    sign = -1.0 if higher_is_better else 1.0  # loss = sign * value: lower is better
    baseline = float(np.nanmean(runs["baseline"].astype(float)))
    df = runs.assign(
        k=[None if _unset(k) else int(k) for k in runs["k"]],
        loss=[sign * (float(v) if math.isfinite(float(v)) else baseline) for v in runs["value"]],
    )
    b_loss = sign * baseline
    groups = {
        (m, k): g["loss"].to_numpy(float)
        for (m, k), g in df.groupby(["model", df["k"].fillna(-1).astype(int)], sort=True)
    }
    groups = {(m, None if k == -1 else k): v for (m, k), v in groups.items()}
    keys = sorted(groups, key=lambda mk: (mk[1] is None, mk[1] or 0, mk[0]))
    means = {key: float(v.mean()) for key, v in groups.items()}
    best_key = min(keys, key=lambda key: means[key])
    best_loss = means[best_key]
    tol = LEARNED * max(abs(baseline), 1e-12)
    gap = b_loss - best_loss
    k_star = _k_star(means, best_loss, gap, epsilon)
    cells = []
    for key in keys:
        v, mean = groups[key], means[key]
        std = float(v.std(ddof=1)) if len(v) > 1 else math.nan
        cells.append(
            Cell(
                model=key[0],
                k=key[1],
                mean=sign * mean,
                std=std,
                n=len(v),
                learned=b_loss - mean > tol,
                matches=key[1] is not None and gap > tol and mean <= best_loss + epsilon * gap,
            )
        )
    warnings = [
        f"the recurrent reference {c.model} did not learn (it sits at the trivial baseline "
        f"{baseline:.4g}): it is no ceiling here; train longer (--set steps=...)"
        for c in cells
        if c.k is None and not c.learned
    ]
    feedforward = [key for key in keys if key[1] is not None]
    if gap <= tol:
        verdict, k_star, lo, hi = "nothing-learned", None, None, None
    elif k_star is not None:
        verdict = "matches"
        lo, hi = _interval(groups, b_loss, epsilon, resamples, seed, k_star)
    else:
        lo, hi = None, None
        verdict = "needs-more"
        if best_key[1] is None and feedforward:
            top = (means[best_key], _std(groups[best_key]), len(groups[best_key]))
            ahead = all(
                _ahead(top, (means[key], _std(groups[key]), len(groups[key])))
                for key in feedforward
            )
            if ahead:
                verdict = "needs-recurrence"
    if not feedforward:
        warnings.append("no feedforward run: nothing says which context would do")
    persistence = None
    if "persistence" in runs and np.isfinite(runs["persistence"].astype(float)).any():
        persistence = float(np.nanmean(runs["persistence"].astype(float)))
        if sign * persistence <= best_loss:
            warnings.append(
                f"no model beats persistence (the last value: {persistence:.4g} against the "
                f"best {sign * best_loss:.4g}): k* is measured from the mean forecast "
                f"{baseline:.4g}, and repeating the last value already does as well"
            )
    return Answer(
        task=task,
        verdict=verdict,
        k_star=k_star,
        k_low=lo,
        k_high=hi,
        epsilon=epsilon,
        max_k=max_k,
        metric=metric,
        higher_is_better=higher_is_better,
        baseline=baseline,
        best=sign * best_loss,
        best_cell=_label(*best_key),
        cells=cells,
        run_ids=sorted(int(r) for r in runs["run_id"]),
        warnings=warnings,
        persistence=persistence,
    )


def _unset(k) -> bool:
    return k is None or (isinstance(k, float) and math.isnan(k))


def _std(v: np.ndarray) -> float:
    return float(v.std(ddof=1)) if len(v) > 1 else math.nan


def _ahead(best: tuple, other: tuple) -> bool:
    from seqbench.report.stats import clearly_ahead

    return best[0] < other[0] and clearly_ahead(best, other)


def _k_star(means: dict, best_loss: float, gap: float, epsilon: float) -> int | None:
    ks = [
        k for (_m, k), mean in means.items() if k is not None and mean <= best_loss + epsilon * gap
    ]
    return min(ks) if ks else None


def _interval(
    groups: dict, b_loss: float, epsilon: float, resamples: int, seed: int, k_star: int
) -> tuple[int | None, int | None]:
    """The percentile interval of k* over bootstrap resamples of each cell's seeds (a
    resample in which no k matches counts as beyond the largest k: the upper end is then None).
    The interval always holds the point estimate."""
    rng = np.random.default_rng(seed)
    keys = list(groups)
    table = np.stack(
        [
            groups[key][rng.integers(0, len(groups[key]), (resamples, len(groups[key])))].mean(1)
            for key in keys
        ]
    )  # cells × resamples
    best = table.min(0)
    thresh = best + epsilon * (b_loss - best)
    ff = np.array([key[1] is not None for key in keys])
    ks = np.array([key[1] if key[1] is not None else 0 for key in keys], dtype=float)
    match = ff[:, None] & (table <= thresh[None, :])
    stars = np.where(match, ks[:, None], np.inf).min(0)
    tail = (1 - LEVEL) / 2
    lo = float(np.quantile(stars, tail, method="lower"))
    hi = float(np.quantile(stars, 1 - tail, method="higher"))
    lo = min(lo, k_star)
    return int(lo), (max(int(hi), k_star) if math.isfinite(hi) else None)


def sentence(a: Answer) -> str:
    """The answer in one sentence."""
    where = f"on {a.task}"
    if a.verdict == "nothing-learned":
        return (
            f"Nothing learned at this budget {where}: every model sits at the trivial baseline "
            f"({a.baseline:.4g}); train longer (--set steps=...) or give a larger --params."
        )
    if a.verdict == "matches":
        hi = f"{a.k_high}" if a.k_high is not None else f"more than {a.max_k}"
        return (
            f"A context of k* = {a.k_star} is enough {where} (95% interval {a.k_low}–{hi} over "
            f"seeds): it comes within {a.epsilon:.0%} of the best ({a.best_cell}, "
            f"{a.best:.4g}; {_references(a)})."
        )
    if a.verdict == "needs-recurrence":
        return (
            f"Needs recurrence {where}: {a.best_cell} ({a.best:.4g}) beats every finite context "
            f"up to k = {a.max_k} beyond the seeds' noise."
        )
    return (
        f"Needs more than k = {a.max_k} {where}: no context tried comes within {a.epsilon:.0%} "
        f"of the best ({a.best_cell}, {a.best:.4g}; {_references(a)})."
    )


def _references(a: Answer) -> str:
    """The trivial baseline, and a forecast's persistence where it was stored."""
    text = f"trivial baseline {a.baseline:.4g}"
    if a.persistence is not None and math.isfinite(a.persistence):
        text += f", persistence {a.persistence:.4g}"
    return text
