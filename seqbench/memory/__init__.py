"""`seqbench memory`: how much context a task needs, or that it needs recurrence.

`plan.py` lays out the k-sweep (a geometric grid of contexts for the feedforward families, at
one parameter budget, beside recurrent references, over seeds) and the bisection points;
`runner.py` runs it as a sweep (resumable, crash-safe, reusing done points from the store),
refines the boundary and stores the answer; `answer.py` derives the answer from the runs
(k*(ε) with a bootstrap interval, or a verdict).
"""

from __future__ import annotations

import math

# The answer's settings, each once (the CLI's help, the api, plan.py and answer.py read them):
EPSILON = 0.05  # the default tolerance: 5% of the gap between the trivial baseline and the best
RELATIVE_TO = ("gap", "best")  # what ε is a share of; the first is the default


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


def gap_tests(k: int, max_k: int) -> int:
    """How many contexts of the grid gap [l, u) holding k a search for the boundary may test
    there: l itself (the grid's) and the bisection's, ⌈log₂(u − l)⌉ rounds to make the ends
    adjacent. 1 at the largest context (its own gap)."""
    grid = k_grid(max_k)
    lower = [g for g in grid if g <= k]
    upper = [g for g in grid if g > k]
    if not lower or not upper:
        return 1
    return 1 + math.ceil(math.log2(upper[0] - lower[-1]))
