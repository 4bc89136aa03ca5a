"""The profile k*(ε): one answer per tolerance from one set of cells, how k* grows as ε
tightens, and, for a task whose optimal truncated error is known in closed form, the k* that
closed form gives beside each.

The growth law. Exponential memory (error λ^{2k}) makes k*(ε) grow like log(1/ε); power-law
memory (error ~ k^{1−2α}) like ε^{−1/(2α−1)}. Each answer's interval says where the true
boundary lies: k* is the smallest integer context within the tolerance, so the continuous
threshold lies in (k_low − 1, k_high]. A law *passes* when one of its curves goes through every
interval (decided exactly: each pair of tolerances bounds the slope): k = a + b·ln(1/ε)
(logarithmic), or k + c = A·ε^{−d} for an offset c in [−1, 1] (a power; a law of the tail
fixes k only up to a step, the kernels (s+1)^{−α} and s^{−α} having the same memory). The
rate's uncertainty is the range of slopes (b, or d) of the curves that pass, not a fit's
t-interval: the k* are integers read off intervals, not measurements with normal errors. The
data name a law only when it passes and the other does not; where both pass, or neither, the
profile says in one line that it cannot tell (and which law the stated k* lie closer to, by
the root-mean-square misfit of ln k of a least-squares fit, without concluding).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

MIN_POINTS = 3  # tolerances with a k* needed to fit a law
LAWS = ("logarithmic", "power")
OFFSETS = tuple(i / 10 for i in range(-10, 11))  # the power law's offsets c tried, in steps


@dataclass(frozen=True)
class Law:
    name: str  # "logarithmic" or "power"
    passes: bool  # one curve of it goes through every answer's interval
    rate: float  # the least-squares slope: b (k per unit of ln(1/ε)) or d (the exponent)
    low: float  # the slopes of the curves through every interval (nan where none passes)
    high: float
    rms: float  # root-mean-square error of ln k of the least-squares fit

    def text(self) -> str:
        what = "k* ≈ a + b·ln(1/ε), b" if self.name == "logarithmic" else "k* ∝ ε^−d, d"
        return (
            f"{what} = {self.rate:.3g} (the curves through every interval: "
            f"{self.low:.3g}–{self.high:.3g})"
        )


def slope_interval(
    xs: list[float], lows: list[float], highs: list[float]
) -> tuple[float, float] | None:
    """The slopes b ≥ 0 for which some line y = a + b·x passes through every [low_i, high_i]
    at x_i (infinite ends allowed); None when no line does. For two points i, j with
    x_i < x_j, a line through both intervals has (low_j − high_i)/(x_j − x_i) ≤ b ≤
    (high_j − low_i)/(x_j − x_i), and these pairwise bounds are all there is (Helly's theorem
    in one dimension: the intervals a − b·x… must meet pairwise)."""
    lo, hi = 0.0, math.inf
    for i, j in itertools.combinations(range(len(xs)), 2):
        if xs[i] == xs[j]:
            if max(lows[i], lows[j]) > min(highs[i], highs[j]):
                return None
            continue
        if xs[i] > xs[j]:
            i, j = j, i
        dx = xs[j] - xs[i]
        lo = max(lo, (lows[j] - highs[i]) / dx)
        hi = min(hi, (highs[j] - lows[i]) / dx)
    if lo > hi:
        return None
    return lo, hi


def passing_slopes(name: str, xs: list[float], lows: list[float], highs: list[float]):
    """The (lowest, highest) slope of law `name`'s curves through every interval (lows, highs:
    the boundary's bounds in k), over the power law's offsets; None where none passes."""
    if name == "logarithmic":
        return slope_interval(xs, lows, highs)
    found = []
    for c in OFFSETS:
        lo = [math.log(v + c) if v + c > 0 else -math.inf for v in lows]
        hi = [math.log(v + c) if v + c > 0 else -math.inf for v in highs]
        if any(h == -math.inf for h in hi):
            continue
        got = slope_interval(xs, lo, hi)
        if got is not None:
            found.append(got)
    if not found:
        return None
    return min(f[0] for f in found), max(f[1] for f in found)


def fit(name: str, xs: list[float], ks: list[float]) -> tuple[float, float]:
    """(slope, rms error of ln k) of law `name` by least squares."""
    x = np.asarray(xs)
    y = np.asarray(ks, dtype=float) if name == "logarithmic" else np.log(ks)
    slope, icept = np.polyfit(x, y, 1)
    fitted = icept + slope * x
    pred_k = np.maximum(fitted, 0.5) if name == "logarithmic" else np.exp(fitted)
    rms = float(np.sqrt(np.mean((np.log(pred_k) - np.log(ks)) ** 2)))
    return float(slope), rms


def fit_laws(points: list[dict], max_k: int | None = None) -> dict:
    """The growth law of a profile. `points`: one per ε, each with epsilon, k_star, k_low,
    k_high (an answer's dict); `max_k`: the largest context tried (where a k* reaches past a
    third of it, a memory cut off there grows the same way, and the sentence says so).
    Returns {"laws": [Law as a dict], "law": the one the data pick or None, "sentence": one
    line}."""
    # a k* measured on cells still improving (an under-trained answer) is no point of a law
    usable = [
        p for p in points if p.get("k_star") is not None and p.get("verdict") != "under-trained"
    ]
    if len({p["epsilon"] for p in usable}) < MIN_POINTS:
        return {
            "laws": [],
            "law": None,
            "sentence": (
                f"cannot tell how k* grows: {len(usable)} of {len(points)} tolerance(s) have "
                f"a k* that stands (not under-trained), and a law needs {MIN_POINTS}"
            ),
        }
    xs = [math.log(1 / p["epsilon"]) for p in usable]
    ks = [float(p["k_star"]) for p in usable]
    lows = [max((p["k_low"] or p["k_star"]) - 1, 0) for p in usable]
    highs = [math.inf if p["k_high"] is None else float(p["k_high"]) for p in usable]
    laws = []
    for name in LAWS:
        through = passing_slopes(name, xs, lows, highs)
        lo, hi = through if through is not None else (math.nan, math.nan)
        rate, rms = fit(name, xs, ks)
        laws.append(Law(name, through is not None, rate, lo, hi, rms))
    passing = [law for law in laws if law.passes]
    closer, other = sorted(laws, key=lambda law: law.rms)
    leaning = (
        f"; the stated k* lie closer to a {closer.name} law "
        f"(ln k misfit {closer.rms:.2g} against {other.rms:.2g})"
        if closer.rms < other.rms / 2
        else ""
    )
    chosen = passing[0] if len(passing) == 1 else None
    if chosen is not None:
        grows = (
            "logarithmically in 1/ε (exponential memory)"
            if chosen.name == "logarithmic"
            else "as a power of 1/ε (power-law memory)"
        )
        sentence = f"k* grows {grows}: {chosen.text()}; the other law passes through none"
        top = max(ks)
        if max_k and top > max_k / 3:
            sentence += (
                f" (k* reaches {top:g} of the {max_k} contexts tried: a memory cut off near "
                "there grows the same way over these tolerances)"
            )
    elif len(passing) == 2:
        sentence = (
            "cannot tell how k* grows: a logarithmic and a power law both pass through every "
            "interval (a wider range of ε, a longer T or more seeds would tell)" + leaning
        )
    else:
        sentence = (
            "cannot tell how k* grows: neither a logarithmic nor a power law passes through "
            "every interval" + leaning
        )
    return {
        "laws": [
            {
                "name": law.name,
                "passes": law.passes,
                "rate": _finite(law.rate),
                "low": _finite(law.low),
                "high": _finite(law.high),
                "rms": _finite(law.rms),
            }
            for law in laws
        ],
        "law": None if chosen is None else chosen.name,
        "sentence": sentence,
    }


def _finite(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def closed_form_k_stars(plan, epsilons: list[float]) -> list[int] | None:
    """k*(ε) from the task's optimal truncated error e*(k) where it has one in closed form (the
    linear teacher, a memory function: `optimal_truncated_error`), averaged over the plan's
    seeds as the answer averages its cells, relative to the gap to the best the plan's cells
    can do: e*(T) with a recurrent reference (it sees the whole input), else e*(max_k) (at
    --max-k 32 on T = 64 a power law's tail beyond 32 is left to every cell, and the tolerance
    is a share of the smaller gap); None for every other task, and for a tolerance relative to
    the best (the closed form is relative to the gap)."""
    from seqbench.tasks import make_task
    from seqbench.tasks.synthetic import closed_form_k_star

    if plan.relative_to != "gap":
        return None
    per_seed = []
    for seed in plan.seeds:
        cfg = next(c for c in plan.points if c.seed == seed)
        task = make_task(cfg.task, cfg.task_args())
        if not hasattr(task, "optimal_truncated_error"):
            return None
        try:
            per_seed.append(task.optimal_truncated_error())
        except ValueError:  # a teacher that is not linear: no closed form
            return None
    errors = [math.fsum(col) / len(per_seed) for col in zip(*per_seed, strict=True)]
    best_k = None if plan.references else plan.max_k
    return [closed_form_k_star(errors, eps, best_k) for eps in epsilons]


def profile_facts(plan, answers) -> dict:
    """What a profile states beside its answers (stored with each, printed and drawn): one
    point per tolerance (its verdict, k*, interval and, where the task has one, the closed
    form's k*) and the growth law fitted through them."""
    eps = [a.epsilon for a in answers]
    closed = closed_form_k_stars(plan, eps)
    points = [
        {
            "epsilon": a.epsilon,
            "verdict": a.verdict,
            "k_star": a.k_star,
            "k_low": a.k_low,
            "k_high": a.k_high,
            "closed_form": None if closed is None else closed[i],
        }
        for i, a in enumerate(answers)
    ]
    return {"name": plan.name, "points": points, "growth": fit_laws(points, plan.max_k)}


def profile_rows(profile: dict) -> tuple[list[str], list[list]]:
    """The k*(ε) table of a profile (the CLI's and the dashboard's): one row per tolerance,
    the closed form's k* beside each where the task has one."""
    closed = any(p.get("closed_form") is not None for p in profile["points"])
    cols = ["epsilon", "verdict", "k*", "interval", *(["closed form"] if closed else [])]
    rows = []
    for p in profile["points"]:
        interval = "" if p["k_star"] is None else f"{p['k_low']}–{p['k_high']}"
        row = [f"{p['epsilon']:g}", p["verdict"], p["k_star"], interval]
        rows.append(row + ([p.get("closed_form")] if closed else []))
    return cols, rows
