"""The answer to "how much context does this task need?", derived from a k-sweep's runs.

Pure pandas, NumPy and SciPy over one row per run; no store, no torch. A *cell* is one model at
one context k (or a recurrent reference, k None) over its seeds. The cells of one sweep run the
same seeds, and a seed fixes the data and the draws, so cells are compared seed by seed. The
answer is one procedure whose error rates hold as a whole at ALPHA (memory/evidence.py has the
tests on a cell, memory/stats.py the bounds and p-values they use; scripts/simulate_answer.py
measures the rates by simulating it):

- a cell has *learned* when it beats the trivial baseline (learned_p: over seeds, beyond chance
  on an accuracy's test set, beyond a shared test split's noise), Holm's step-down over every
  cell;
- the *tolerance* δ is ε times the gap between the trivial baseline and the best cell
  (`relative_to="gap"`, the default) or ε times the best cell's own value ("best"); the best is
  the cell with the best mean among those that learned;
- a feedforward cell is *within* the tolerance when it is shown within that of the best cell
  (shown_within; the best itself against the runner-up), tested in sequence from each family's
  best context down; it is *outside* when its excess over the best is above δ at
  the lower bound, Bonferroni over the comparator the data chose; a cell that is neither is
  undecided;
- k* is the smallest k with a cell within; its interval runs from one past the contexts shown
  outside in a fixed sequence from the smallest up, to k*;
- the verdict: `nothing-learned` when no cell learned (a k* is only ever a cell that learned);
  `matches` with a k*; `needs-recurrence` when a recurrent reference is the best and every
  context tried is outside its tolerance (`family-gap` when the largest context was the whole
  input: then the gap is one of model family or training, not of memory); `undecided` when
  the seeds cannot tell; `under-trained` in place of any of the three statements when a cell
  it rests on was still improving at its last evaluation (`resting_on`): the k* measured on
  these budgets is kept, as what longer training may move.

docs/science.md ("How much context: k*") says the same for users, with the rates the
simulation measured and the calibration on trained tasks (docs/memory.md).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from seqbench.memory import EPSILON, check_tolerance, gap_share
from seqbench.memory.evidence import (
    Seeds,
    cell_runs,
    contrast,
    learned_p,
    sequence,
    shown_within,
    tolerance,
)
from seqbench.memory.result import Answer, Cell
from seqbench.memory.stats import ALPHA, holm, lower_bound
from seqbench.memory.words import caveats, sentence

ACCURACIES = ("acc",)  # metrics that are a share of right answers: chance is binomial


def judge_cells(
    seeds: list[Seeds],
    *,
    sign: float,
    accuracy: bool,
    base_loss: float,
    epsilon: float,
    relative_to: str,
    alpha: float = ALPHA,
    max_k: int | None = None,
) -> tuple[list[Cell], int, float]:
    """Each cell judged over its seeds, the answer's error rates held as a whole at `alpha`
    (docs/science.md, "How much context: k*"):

    - learned: Holm's step-down over every cell, so that a cell is wrongly called learned at
      most `alpha` of the time, however many cells there are;
    - within: each family's contexts in sequence from its best cell down (`sequence`; and,
      for the table, from it up), the first that fails ending it (a cell past it is not
      tested); a test is shown_within's, against the best cell, at `alpha` over the number
      of families times the context's share of its grid gap's tests (gap_share: the search
      descends from the gap's top while contexts pass, then bisects, trying a context more
      after each one that fails, and each is another chance for a context beyond the
      tolerance to pass; `max_k` sets the grid, None: no search);
    - outside: the cell's excess over the best cell (the lowest mean among the cells that
      learned) above the tolerance at the lower bound, at `alpha` over the cells it could have
      been compared with (the best is chosen by the data: Bonferroni over the choice).

    Returns (cells, the best's index, the tolerance δ in loss terms)."""
    got = holm([learned_p(c, accuracy, sign) for c in seeds], alpha)
    means = [c.mean for c in seeds]
    pool = [i for i, ok in enumerate(got) if ok] or list(range(len(seeds)))
    b = min(pool, key=lambda i: means[i])  # the best cell: among those that learned
    delta = tolerance(epsilon, relative_to, base_loss, means[b])
    ff = [i for i, c in enumerate(seeds) if c.k is not None]
    families = sorted({seeds[i].model for i in ff})
    within: set[int] = set()
    for family in families:  # two sequences each, from the family's best context down and up
        for order in sequence(seeds, family):
            for i in order:
                level = within_level(seeds[i].k, max_k, len(families), alpha)
                if not (got[i] and shown_within(i, b, seeds, epsilon, relative_to, level)):
                    break
                within.add(i)
    alpha_out = alpha / max(len(seeds) - 1, 1)
    cells = []
    for i, c in enumerate(seeds):
        outside = c.k is not None and i != b and i not in within
        if outside:
            d = contrast(c, seeds[b], epsilon, relative_to, cap="above")
            outside = lower_bound(d, alpha_out) > 0
        behind = i != b and lower_bound(contrast(c, seeds[b], 0.0, relative_to), alpha) > 0
        cells.append(
            Cell(
                model=c.model,
                k=c.k,
                mean=sign * means[i],
                std=_std(c.loss),
                n=len(c.loss),
                learned=bool(got[i]),
                matches=i in within,
                outside=bool(outside),
                excess=sign * (means[i] - means[b]),
                improving=c.improving,
                behind=bool(behind),
            )
        )
    return cells, b, delta


def within_level(k: int, max_k: int | None, families: int, alpha: float = ALPHA) -> float:
    """The level context k's within test runs at: `alpha` over the families, times k's share
    of its grid gap's tests (gap_share; `max_k` None: no search, the whole share)."""
    return alpha / families * (gap_share(k, max_k) if max_k else 1)


def k_interval(cells: list[Cell]) -> tuple[int | None, int | None, int | None]:
    """k*, and its interval's ends. k*: the smallest context shown within. The low end: one
    past the contexts shown outside in a fixed sequence from the smallest up (every cell of a
    context outside, the first context that is not ending it): each context below the low end
    was tried and shown too short, or lies between two that were."""
    within = sorted(shown_within_ks(cells))
    if not within:
        return None, None, None
    k_star = within[0]
    return k_star, shown_short(cells, k_star) + 1, k_star


def shown_within_ks(cells: list[Cell]) -> set[int]:
    """The contexts with a cell shown within the tolerance (of any family)."""
    return {c.k for c in cells if c.k is not None and c.matches}


def shown_short(cells: list[Cell], below: int | None = None) -> int:
    """The largest context of the fixed sequence from the smallest up in which every context
    tried (below `below`) has every cell shown outside; 0 where the smallest is not."""
    ks = sorted({c.k for c in cells if c.k is not None and (below is None or c.k < below)})
    out = 0
    for k in ks:
        if not all(c.outside for c in cells if c.k == k):
            break
        out = k
    return out


def resting_on(cells: list[Cell], best: Cell, verdict: str, k_low: int | None,
               k_star: int | None) -> list[Cell]:  # fmt: skip
    """The cells a stated verdict rests on, which must have converged for it to stand:

    - `matches`: the best cell, every recurrent reference (a reference still improving may
      become the best and move k*), and every feedforward cell from the interval's low end to
      k* (one still improving may come within and move k* down);
    - `needs-recurrence` and `family-gap`: the cells at the largest context tried (one still
      improving may come within the best's tolerance; the best's own improving only widens
      the gap).

    None for `nothing-learned` and `undecided`: they state no k*."""
    if verdict == "matches":
        return [c for c in cells if c is best or c.k is None or k_low <= c.k <= k_star]
    if verdict in ("needs-recurrence", "family-gap"):
        top = max(c.k for c in cells if c.k is not None)
        return [c for c in cells if c.k == top]
    return []


def verdict_of(cells: list[Cell], best: Cell, k_star: int | None, whole_input: bool) -> str:
    ff = [c for c in cells if c.k is not None]
    if not any(c.learned for c in cells):
        return "nothing-learned"
    if k_star is not None:
        return "matches"
    if best.k is None and ff and shown_short(cells) == max(c.k for c in ff):
        return "family-gap" if whole_input else "needs-recurrence"
    return "undecided"


def derive(
    runs: pd.DataFrame,
    *,
    task: str,
    higher_is_better: bool,
    max_k: int,
    metric: str = "test_metric",
    epsilon: float = EPSILON,
    relative_to: str = "gap",
    whole_input: bool = False,
    units: str = "",
    label: str = "",
    train_size: int | None = None,
    train_steps: int | None = None,
    steps_auto: bool = False,
    alpha: float = ALPHA,
) -> Answer:
    """The answer from `runs`: one row per run with columns run_id, model, k (None for a
    recurrent reference), seed, value (the metric) and baseline (the run's trivial baseline);
    optionally test_count (the scored test predictions: chance's binomial bound for an
    accuracy), test_const and test_gain_se (a shared test split's best constant and the noise
    of a gain over it), improving (the run was still improving at its last evaluation) and
    persistence (a forecast's last-value predictor: a warning when no model beats it).
    `train_steps`: the most steps a cell trained, for the cap an under-trained answer names
    (`steps_auto`: the runs trained until converged, and it is their cap, max_steps).
    Non-finite values (a diverged run) count as the baseline: a run that blew up learned
    nothing. `alpha`: the answer's level (ALPHA; the race judges at a stricter one,
    memory/race.py)."""
    check_tolerance(epsilon, relative_to)
    if runs.empty:
        raise ValueError("no runs to derive an answer from")
    sign = -1.0 if higher_is_better else 1.0  # loss = sign * value: lower is better
    base_loss = _baseline_loss(runs, sign)
    cells, b, delta = judge_cells(
        cell_runs(runs, sign), sign=sign, accuracy=metric in ACCURACIES, base_loss=base_loss,
        epsilon=epsilon, relative_to=relative_to, alpha=alpha, max_k=max_k,
    )  # fmt: skip
    k_star, lo, hi = k_interval(cells)
    verdict = verdict_of(cells, cells[b], k_star, whole_input)
    if verdict == "nothing-learned":
        k_star = lo = hi = None
    slow = [c.label for c in resting_on(cells, cells[b], verdict, lo, k_star) if c.improving]
    if slow:
        verdict = "under-trained"
    answer = Answer(
        task=task,
        verdict=verdict,
        k_star=k_star,
        k_low=lo,
        k_high=hi,
        epsilon=epsilon,
        max_k=max_k,
        metric=metric,
        higher_is_better=higher_is_better,
        baseline=sign * base_loss,
        best=cells[b].mean,
        best_cell=cells[b].label,
        cells=cells,
        run_ids=sorted(int(r) for r in runs["run_id"]),
        seeds=tuple(sorted({int(x) for x in runs["seed"]})),
        relative_to=relative_to,
        tolerance=delta,
        whole_input=whole_input,
        units=units,
        label=label,
        train_size=train_size,
        under_trained=slow,
        train_steps=train_steps,
        steps_auto=steps_auto,
    )
    persistence = _persistence(runs)
    answer = replace(answer, warnings=caveats(answer, persistence), persistence=persistence)
    return replace(answer, sentence=sentence(answer))


def _baseline_loss(runs: pd.DataFrame, sign: float) -> float:
    """The trivial baseline as a loss: each seed's (a seed fixes the data), then their mean,
    so that a seed with more runs (cells the race settled have fewer) does not weigh more."""
    seeds, where = np.unique(runs["seed"].to_numpy(), return_inverse=True)
    base = sign * runs["baseline"].to_numpy(float)
    ok = ~np.isnan(base)
    total = np.bincount(where[ok], base[ok], len(seeds))
    count = np.bincount(where[ok], minlength=len(seeds))
    return float(np.mean(total[count > 0] / count[count > 0])) if ok.any() else math.nan


def _persistence(runs: pd.DataFrame) -> float | None:
    if "persistence" in runs and np.isfinite(runs["persistence"].astype(float)).any():
        return float(np.nanmean(runs["persistence"].astype(float)))
    return None


def _std(v: np.ndarray) -> float:
    return float(v.std(ddof=1)) if len(v) > 1 else math.nan
