"""Racing the cells of a k-sweep: a cell gets its seeds a round at a time, and no more once the
evidence it has already decides its part in the answer.

Every cell of the grid (and each context the search adds) starts with RACE_SEEDS seeds, the
fewest a test over seeds takes. After each round the answer is derived from what has run with
the answer's own procedure (answer.py) at ALPHA divided by the looks the race may take (one
per seed count from RACE_SEEDS to all: Bonferroni over the looks, so that each decision the
race takes is wrong at most ALPHA of the time however often it looked), and a feedforward
cell is *settled*, and gets no further seed, when in every tolerance's answer at that level

- it is shown within the tolerance in its family's sequences from its best context (down: the
  sequence passed it, so it is k* or above; or up, above the best), or
- it is shown outside the tolerance,

and, if within, it is shown behind the best (a cell level with the best, which every cell is
measured against, could have been the best at three seeds), and it is not
at an end of the answer's sequences (`boundary`: k*, the context below it, and the ends of
the sequence from the shortest context up), where a third seed can move k* or the interval: a
pair of seeds can agree by luck, and a decision taken at two would then differ from the one
every seed gives.

The final answer is derived at ALPHA from the runs the race asked for
(scripts/simulate_answer.py measures how often it differs from every seed's answer). Nothing is
settled while the answer at that level has not shown any cell learned, and the best cell and
the recurrent references (the ceiling every cell is measured against) get every seed. No
context is left untrained: every context of the grid gets its first seeds, whatever a longer
one shows (a longer context can do worse than a shorter one, and the answer's interval rests
on contexts tried). `--no-race` gives every cell every seed.
"""

from __future__ import annotations

from seqbench.memory.result import Answer

RACE_SEEDS = 2  # the seeds every cell starts with: a paired t-test needs two


def looks(seeds: int) -> int:
    """The times the race judges a cell given `seeds` seeds: at RACE_SEEDS of them, and at
    each seed more."""
    return max(seeds - RACE_SEEDS + 1, 1)


def settled(answers: list[Answer]) -> frozenset[tuple[str, int]]:
    """The (model, k) cells whose status no further seed can change, in every answer of
    `answers` (one per tolerance, derived from the same runs at the race's level)."""
    out: set[tuple[str, int]] | None = None
    for a in answers:
        here = _settled_in(a)
        out = here if out is None else out & here
    return frozenset(out or ())


def _settled_in(a: Answer) -> set[tuple[str, int]]:
    if a.verdict == "nothing-learned":
        return set()
    keep = boundary(a)
    return {
        (c.model, c.k)
        for c in a.cells
        if c.k is not None and c.behind and (c.model, c.k) not in keep and (c.matches or c.outside)
    }


def boundary(a: Answer) -> set[tuple[str, int]]:
    """The cells where the answer's sequences end, which get every seed: in each family's
    sequence from its best context down, the last cell shown within and the first that is
    not; in the sequence from the shortest context up, the last context shown outside and the
    first that is not. A third seed moves a cell decided at two (a pair of seeds can agree by
    luck); away from these ends that moves nothing, at them it moves k* or the interval."""
    out: set[tuple[str, int]] = set()
    ff = [c for c in a.cells if c.k is not None]
    sign = -1.0 if a.higher_is_better else 1.0
    for family in {c.model for c in ff}:
        own = [c for c in ff if c.model == family]
        top = min(own, key=lambda c: sign * c.mean).k  # evidence.sequence: from the best down
        seq = sorted((c for c in own if c.k <= top), key=lambda c: -c.k)
        for i, c in enumerate(seq):
            if not c.matches:
                out.add((c.model, c.k))
                if i > 0:
                    out.add((seq[i - 1].model, seq[i - 1].k))
                break
        else:
            if seq:
                out.add((seq[-1].model, seq[-1].k))
    ks = sorted({c.k for c in ff})
    for i, k in enumerate(ks):
        if not all(c.outside for c in ff if c.k == k):
            out |= {(c.model, c.k) for c in ff if c.k in ks[max(i - 1, 0) : i + 1]}
            break
    return out
