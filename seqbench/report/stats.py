"""Uncertainty for `report --compare --ci`: Student-t confidence intervals of a cell's mean over
seeds, and a paired comparison of two models across the seeds both ran (a paired t-test on the
per-seed differences: with the same seed both models saw the same data and the same draws, so
pairing removes the seed-to-seed spread they share)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

LEVEL = 0.95


def t_quantile(n: int, level: float = LEVEL) -> float:
    """The two-sided Student-t quantile for n observations (n − 1 degrees of freedom).
    scipy.special's stdtrit is what scipy.stats.t.ppf computes, without the 0.6 s import of
    scipy.stats (tests/report/test_stats.py holds them equal)."""
    from scipy.special import stdtrit

    return float(stdtrit(n - 1, 0.5 + level / 2))


def interval(mean: float, std: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The t confidence interval of a mean of n values with sample std `std` (nan for n < 2)."""
    if n < 2 or not (math.isfinite(mean) and math.isfinite(std)):
        return math.nan, math.nan
    half = t_quantile(n, level) * std / math.sqrt(n)
    return mean - half, mean + half


@dataclass(frozen=True)
class Paired:
    """A − B over the seeds both models ran: the mean difference, its t interval and the
    paired t-test's two-sided p-value (nan below two pairs)."""

    diff: float
    lo: float
    hi: float
    pairs: int
    p: float

    def text(self) -> str:
        if self.pairs < 2:
            return f"{self.diff:.4g} (1 seed)"
        return f"{self.diff:.4g} [{self.lo:.3g}, {self.hi:.3g}] p={self.p:.2g} ({self.pairs} seeds)"


def paired(values_a: pd.Series, values_b: pd.Series, level: float = LEVEL) -> Paired | None:
    """`values_*`: one metric value per seed (indexed by seed). None without a common seed."""
    both = pd.concat([values_a.rename("a"), values_b.rename("b")], axis=1, join="inner")
    if both.empty:
        return None
    d = (both["a"] - both["b"]).astype(float)
    n, mean = len(d), float(d.mean())
    if n < 2:
        return Paired(mean, math.nan, math.nan, n, math.nan)
    sd = float(d.std(ddof=1))
    lo, hi = interval(mean, sd, n, level)
    if sd == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        from scipy.special import stdtr  # t.sf(x, df) = stdtr(df, −x)

        p = float(2 * stdtr(n - 1, -abs(mean / (sd / math.sqrt(n)))))
    return Paired(mean, lo, hi, n, p)


def clearly_ahead(best: tuple, other: tuple, alpha: float = 1 - LEVEL) -> bool:
    """Whether cell `best` (mean, std, n over seeds) differs from `other` beyond the seeds'
    noise: Welch's t-test at `alpha` (two-sided), both with at least 2 seeds. What a report's
    bold "best" cell needs, so that it never marks a difference of p = 0.3."""
    (m1, s1, n1), (m2, s2, n2) = best[:3], other[:3]
    if not (n1 >= 2 and n2 >= 2) or not all(map(math.isfinite, (m1, m2))):
        return False
    s1, s2 = (0.0 if not math.isfinite(s) else s for s in (s1, s2))
    if s1 == 0 and s2 == 0:
        return m1 != m2
    return bool(welch_p(m1, s1, n1, m2, s2, n2) < alpha)


def welch_p(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int) -> float:
    """The two-sided p-value of Welch's t-test from each sample's mean, std and size, as
    scipy.stats.ttest_ind_from_stats(equal_var=False) computes it (the Welch–Satterthwaite
    degrees of freedom), without importing scipy.stats (tests/report/test_stats.py)."""
    from scipy.special import stdtr

    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    df = (v1 + v2) ** 2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1))
    return float(2 * stdtr(df, -abs((m1 - m2) / math.sqrt(v1 + v2))))
