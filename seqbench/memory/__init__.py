"""`seqbench memory`: how much context a task needs, or that it needs recurrence.

`plan.py` lays out the k-sweep (a geometric grid of contexts for the feedforward families, at
one parameter budget, beside recurrent references, over seeds) and the bisection points;
`runner.py` runs it as a sweep (resumable, crash-safe, reusing done points from the store),
refines the boundary and stores the answer; `answer.py` derives the answer from the runs
(k*(ε) with its interval over seeds, or a verdict) with the tests of `stats.py`, `race.py`
decides which cells need more seeds, and `words.py` says the answer.
"""

from __future__ import annotations

import math

# The answer's settings, each once (the CLI's help, the api, plan.py and answer.py read them):
EPSILON = 0.05  # the default tolerance: 5% of the gap between the trivial baseline and the best
RELATIVE_TO = ("gap", "best")  # what ε is a share of; the first is the default
# whose learning rate is searched (--lr-search): the first is the default. Each searched model
# trains every seed at the pair's rate times each of LR_FACTORS, and the run with the best
# validation metric is the cell's (Zoology's way: best of a few, chosen on validation)
LR_SEARCH = ("references", "all", "none")
LR_FACTORS = (0.3, 1.0, 3.0)


def check_tolerance(epsilon: float, relative_to: str) -> None:
    """ε in (0, 1) and a known reference for it; ValueError otherwise (the CLI's one line)."""
    if not (isinstance(epsilon, float | int) and math.isfinite(epsilon) and 0 < epsilon < 1):
        raise ValueError(f"--epsilon must lie in (0, 1), got {epsilon}")
    if relative_to not in RELATIVE_TO:
        raise ValueError(f"--relative-to must be gap or best, got {relative_to!r}")


def k_grid(max_k: int) -> list[int]:
    """The contexts a k-sweep starts from: 1, 2, 4, … below max_k, and max_k itself."""
    out, k = [], 1
    while k < max_k:
        out.append(k)
        k *= 2
    return [*out, max_k]


def gap_share(k: int, max_k: int) -> float:
    """The share of the level a within test of context k runs at, so that a search for the
    boundary in k's grid gap [l, u) is wrong at most the level of the time: the grid's l,
    always tested, half; each of the ⌈log₂(u − l)⌉ contexts the bisection may add after a
    failure, an equal part of the other half. 1 where no bisection follows (u − l = 1, or k
    the largest context)."""
    grid = k_grid(max_k)
    lower = [g for g in grid if g <= k]
    upper = [g for g in grid if g > k]
    if not lower or not upper:
        return 1.0
    rounds = math.ceil(math.log2(upper[0] - lower[-1]))
    if rounds == 0:
        return 1.0
    return 0.5 if k == lower[-1] else 0.5 / rounds
