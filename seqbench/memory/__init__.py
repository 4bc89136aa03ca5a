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
        raise ValueError(f"`epsilon` must lie in (0, 1), got {epsilon}")
    if relative_to not in RELATIVE_TO:
        raise ValueError(f"`relative_to` must be gap or best, got {relative_to!r}")


def k_grid(max_k: int) -> list[int]:
    """The contexts a k-sweep starts from: 1, 2, 4, … below max_k, and max_k itself."""
    out, k = [], 1
    while k < max_k:
        out.append(k)
        k *= 2
    return [*out, max_k]


def search_gap(k: int, max_k: int) -> tuple[int, int, int, int] | None:
    """The grid gap [l, u) that k lies in (l ≤ k < u), the search for a boundary inside it and
    its shares of the level: (l, u, d, r) where the search first descends from u through the
    d contexts u − 1, …, u − d (one at a time, while each is shown within: a fixed sequence),
    then bisects what is left, (l, u − d), in at most r rounds. None where k is the largest
    context or its gap holds no context to search (u − l = 1)."""
    grid = k_grid(max_k)
    lower = [g for g in grid if g <= k]
    upper = [g for g in grid if g > k]
    if not lower or not upper or upper[0] - lower[-1] <= 1:
        return None
    low, up = lower[-1], upper[0]
    d = _descent(up - low)
    return low, up, d, _halvings(up - d - low)  # the bisection's gap (l, u − d)


def _descent(width: int) -> int:
    """How many contexts below u the search of a gap of `width` descends through first: as
    many as a bisection of the whole gap would try (⌈log₂ width⌉), the gap's own at most."""
    return min(_halvings(width), width - 1)


def _halvings(width: int) -> int:
    return math.ceil(math.log2(width)) if width > 1 else 0


def search_rounds(width: int) -> int:
    """The most rounds the search of a gap of `width` takes to narrow it to one step (its
    descent, then its bisection): at most twice a bisection's."""
    d = _descent(width)
    return d + _halvings(width - d)


def gap_share(k: int, max_k: int) -> float:
    """The share of the level a within test of context k runs at, so that the search for the
    boundary in k's grid gap [l, u) is wrong at most the level of the time. Half goes to the
    grid's l, half to the search: each context of the descent from u at that half (a fixed
    sequence: one is tried only when the context above it was shown within, so only the first
    context beyond the tolerance can pass wrongly and the half is spent once), each context
    the bisection after it may add at an equal part of the half (after a failure another
    context is tried: Bonferroni over its ⌈log₂⌉ rounds). 1 where no search follows (u − l
    = 1, or k the largest context), and 1 in a gap its descent covers whole (no bisection
    after it: [2, 4) in the grid of powers of two): there each context is tried whenever the
    one above it is shown within, whatever l showed (`whole_descent`), so u − 1, …, l + 1, l
    are one fixed sequence, and only its first context beyond the tolerance can pass wrongly."""
    gap = search_gap(k, max_k)
    if gap is None:
        return 1.0
    low, up, d, r = gap
    if r == 0:
        return 1.0
    if k == low or k >= up - d:
        return 0.5
    return 0.5 / r


def whole_descent(k: int, max_k: int) -> bool:
    """Context k lies inside a grid gap (l < k < u) that its descent covers whole, so that k
    is tried whenever k + 1 is shown within (plan.next_ks), not only when l falls short."""
    gap = search_gap(k, max_k)
    return gap is not None and gap[3] == 0 and gap[0] < k
