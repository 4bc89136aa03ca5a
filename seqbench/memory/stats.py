"""The tests an answer is made of, on per-seed numbers: one-sided Student-t bounds and p-values,
and Holm's step-down over a family of them. NumPy and scipy.special only (scipy.stats costs a
memory command half a second to import: benchmarks/RESULTS.md)."""

from __future__ import annotations

import functools
import math

import numpy as np

ALPHA = 0.05  # the level of the answer as a whole: docs/science.md, "How much context: k*"


@functools.lru_cache(maxsize=4096)
def t_quantile(df: int, q: float) -> float:
    """Student's t quantile (scipy.stats.t.ppf calls the same stdtrit)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def upper_bound(x: np.ndarray, alpha: float) -> float:
    """The one-sided upper (1 − alpha) confidence bound of the mean of `x` (Student's t,
    n − 1 degrees of freedom): +inf under two values, the mean itself with no spread at all."""
    n = len(x)
    if n < 2:
        return math.inf
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    return mean + t_quantile(n - 1, 1 - alpha) * sd / math.sqrt(n) if sd > 0 else mean


def lower_bound(x: np.ndarray, alpha: float) -> float:
    """The one-sided lower (1 − alpha) confidence bound of the mean of `x`."""
    return -upper_bound(-x, alpha)


def p_above(x: np.ndarray, bound: float = 0.0) -> float:
    """The one-sided p-value of "the mean of `x` is above `bound`" (Student's t): 1 under two
    values; with no spread, 0 when every value is above and 1 otherwise."""
    n = len(x)
    if n < 2:
        return 1.0
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0:
        return 0.0 if mean > bound else 1.0
    from scipy.special import stdtr

    return float(stdtr(n - 1, -(mean - bound) / (sd / math.sqrt(n))))


def p_normal(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    from scipy.special import ndtr

    return float(ndtr(-z))


def holm(p: list[float], alpha: float) -> list[bool]:
    """Holm's step-down (Holm 1979): the hypotheses rejected at family-wise level `alpha`.
    The smallest p-value is tested at alpha/m, the next at alpha/(m − 1), …, and the first that
    fails stops the rest. Valid under any dependence between the tests."""
    m = len(p)
    out = [False] * m
    for rank, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        if not p[i] <= alpha / (m - rank):
            break
        out[i] = True
    return out


def narrowing(n: int, alpha: float = ALPHA) -> float:
    """How many times tighter a one-sided t bound gets from n seeds to 2n, at the same spread:
    (t(n − 1)/√n) / (t(2n − 1)/√(2n)). 2.05 from 3 seeds to 6."""
    if n < 2:
        return math.inf
    now = t_quantile(n - 1, 1 - alpha) / math.sqrt(n)
    return now / (t_quantile(2 * n - 1, 1 - alpha) / math.sqrt(2 * n))
