"""Racing the cells of a k-sweep: a cell gets its seeds a round at a time, and no more once the
evidence it has can no longer change the answer.

Every cell starts with RACE_SEEDS seeds (the fewest a test over seeds takes). After each round
the answer is derived from what has run, with the answer's own rules (answer.py: the paired
one-sided tests, the Bonferroni level for "outside") but each test at ALPHA divided by the
looks the race may take (one per seed count from RACE_SEEDS to all: a cell tested at every
look is still wrong at most ALPHA of the time, Bonferroni over the looks), and a feedforward
cell is *settled*, and gets no further seed, when in every tolerance's answer it is

- shown outside the tolerance of the best (its excess over the best, seed by seed, is above δ
  at the lower bound), or below a context that is: k*'s interval starts one past the largest k
  shown outside, so a smaller context's seeds cannot move it; or
- shown within the tolerance at a context above k*: the smallest context within is k*, and a
  larger one's seeds cannot make it smaller.

A context below the largest one shown outside below k* (in the answer itself, at ALPHA: the
statement k*'s interval makes) is not trained at all (`floor`); the runner takes the grid's
upper half first, so that such a context is known before the lower half is trained.

The best cell and the recurrent references (the ceiling every cell is measured against) are
never settled, nor is any cell of an answer that learned nothing yet: they get every seed. A
settled cell keeps the seeds it has, and the answer is derived from the runs the race asked for
alone, so that the same question always rests on the same runs. `--no-race` gives every cell
every seed.
"""

from __future__ import annotations

from seqbench.memory.answer import Answer

RACE_SEEDS = 2  # the seeds every cell starts with: a paired t-test needs two


def looks(seeds: int) -> int:
    """The times the race judges a cell given `seeds` seeds: at RACE_SEEDS of them, and at
    each seed more."""
    return max(seeds - RACE_SEEDS + 1, 1)


def settled(answers: list[Answer]) -> frozenset[tuple[str, int]]:
    """The (model, k) cells that no further seed can move, in every answer of `answers` (one
    per tolerance, derived from the same runs)."""
    out: set[tuple[str, int]] | None = None
    for a in answers:
        here = _settled_in(a)
        out = here if out is None else out & here
    return frozenset(out or ())


def floor(answers: list[Answer]) -> int:
    """The context below which every cell is settled, tried or not, in every answer of
    `answers`: one past the largest k shown outside below k* (1 where there is none)."""
    return min((_floor_in(a) for a in answers), default=1)


def _floor_in(a: Answer) -> int:
    if a.verdict == "nothing-learned":
        return 1
    ff = [c for c in a.cells if c.k is not None]
    # a context below k* every cell of which is outside: k*'s interval starts one past the
    # largest (answer.k_interval)
    below = {c.k for c in ff if c.outside and (a.k_star is None or c.k < a.k_star)}
    low = max((k for k in below if all(c.outside for c in ff if c.k == k)), default=0)
    return low + 1


def _settled_in(a: Answer) -> set[tuple[str, int]]:
    if a.verdict == "nothing-learned":
        return set()
    ff = [c for c in a.cells if c.k is not None]
    low = _floor_in(a) - 1
    out = set()
    for c in ff:
        if c.label == a.best_cell:
            continue
        if c.outside or c.k < low or (c.matches and a.k_star is not None and c.k > a.k_star):
            out.add((c.model, c.k))
    return out
