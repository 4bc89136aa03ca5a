"""One cell's evidence over its seeds, and the tests an answer is made of (memory/answer.py
assembles them; memory/stats.py has the one-sided bounds and p-values).

A cell is one model at one context k (or a recurrent reference, k None): its runs in loss terms,
one per seed (`Seeds`, grouped by `cell_runs`). On it: whether it has learned (`learned_p`),
its excess over another cell beyond a tolerance (`contrast`, `tolerance`), whether it is shown
within the best cell's tolerance (`shown_within`), and the order in which a family's contexts
are tested (`sequence`). Pure NumPy and pandas; no store, no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqbench.memory.stats import p_above, p_normal, upper_bound


@dataclass
class Seeds:
    """One cell's runs in loss terms (lower is better), one entry per seed, seeds ascending."""

    model: str
    k: int | None
    seeds: np.ndarray  # the seeds it ran
    loss: np.ndarray  # per seed; a diverged run counts as its baseline
    base: np.ndarray  # the trivial baseline's loss, per seed
    count: float  # the smallest test set of its runs (nan where unknown)
    improving: bool
    # a shared test split's best constant predictor (loss terms) and the sampling noise of a
    # gain over it (the standard error over test sequences), per seed; None where not stored
    const: np.ndarray | None = None
    const_se: np.ndarray | None = None

    @property
    def mean(self) -> float:
        return float(self.loss.mean())


def cell_runs(runs: pd.DataFrame, sign: float) -> list[Seeds]:
    """Group `runs` into cells, in the order k ascending then references, by model (one run
    per seed: the last)."""
    col = {c: runs[c].to_numpy() for c in runs.columns}
    groups: dict[tuple[str, int], dict[int, int]] = {}
    for i, (model, k, seed) in enumerate(zip(col["model"], col["k"], col["seed"], strict=True)):
        kk = -1 if unset(k) else int(k)
        groups.setdefault((str(model), kk), {})[int(seed)] = i
    out = []
    for (model, kk), by_seed in groups.items():
        seeds = np.array(sorted(by_seed), dtype=int)
        rows = [by_seed[s] for s in seeds]
        base = sign * col["baseline"][rows].astype(float)
        if np.isnan(base).any() and not np.isnan(base).all():
            base = np.where(np.isnan(base), np.nanmean(base), base)
        value = sign * col["value"][rows].astype(float)
        loss = np.where(np.isfinite(value), value, base)  # a blow-up learned nothing
        count = (
            float(col["test_count"][rows].astype(float).min()) if "test_count" in col else math.nan
        )
        # at least half: the race stops a cell at two seeds, where one of two improving could
        # have been two of three
        improving = (
            "improving" in col and np.mean([_true(v) for v in col["improving"][rows]]) >= 0.5
        )
        const = se = None
        if "test_const" in col and "test_gain_se" in col:
            c, s = (col[k][rows].astype(float) for k in ("test_const", "test_gain_se"))
            if np.isfinite(c).any() and np.isfinite(s).any():  # a diverged run stores none
                const = sign * np.where(np.isfinite(c), c, np.nanmean(c))  # one split, one c
                se = np.where(np.isfinite(s), s, np.nanmean(s))
        cell = Seeds(model, None if kk == -1 else kk, seeds, loss, base, count, bool(improving),
                      const, se)  # fmt: skip
        out.append(cell)
    out.sort(key=lambda c: (c.k is None, c.k or 0, c.model))
    return out


def _true(v) -> bool:
    return bool(v) if v is not None and v == v else False


def learned_p(cell: Seeds, accuracy: bool, sign: float) -> float:
    """The p-value of "this cell beats the trivial baseline": the largest of the tests it must
    pass (each one-sided):

    - over seeds, its gain on the baseline run by run (Student's t on the paired gains, each
      seed's in units of the mean baseline);
    - for an accuracy, its mean gain on what chance scores on a test set of the run's size
      (binomial: sd √(p(1 − p)/n) at chance p);
    - where the seeds share one test split (own data: a regression, or classes), its gain on
      the best constant predictor of that split (the targets' mean, the most frequent
      class), over seeds and beyond the split's own sampling noise (the standard error of
      the gain over test sequences, which every seed shares).
    """
    w = per_seed_scale(cell.base)
    gain = (cell.base - cell.loss) * w  # > 0: better than the baseline
    p = p_above(gain)
    if accuracy and math.isfinite(cell.count) and cell.count > 0:
        chance = float(np.clip(sign * cell.base.mean(), 1e-12, 1 - 1e-12))
        p = max(p, p_normal(float(gain.mean()) / math.sqrt(chance * (1 - chance) / cell.count)))
    if cell.const is not None:
        over = (cell.const - cell.loss) * w
        se = math.sqrt(float(np.mean((cell.const_se * w) ** 2)))
        shared = p_normal(float(over.mean()) / se) if se > 0 else float(over.mean() <= 0)
        p = max(p, p_above(over), shared)
    return p


def per_seed_scale(base: np.ndarray) -> np.ndarray:
    """B̄ / B_s per seed: a seed's differences in units of the mean trivial baseline. Where
    each seed draws another task (the teacher's seeds draw other teachers) its baseline, and
    every error with it, has its own scale; the tests are about the share of the baseline a
    context leaves, not about which teacher was louder. 1 where the baselines are not all
    positive (an accuracy's: chance is one number)."""
    b = np.asarray(base, float)
    if not (b > 0).all():
        return np.ones_like(b)
    return float(b.mean()) / b


def contrast(a: Seeds, b: Seeds, epsilon: float, relative_to: str, cap: str = "") -> np.ndarray:
    """Per seed both cells ran, a's excess over b beyond b's tolerance, in units of the mean
    baseline: a − b − ε(B − b) relative to the gap (B: the seed's trivial baseline), a − b −
    ε|b| relative to the best. Its mean is ≤ 0 exactly when a is within the tolerance taken
    from b. The tolerance moves with b seed by seed, so its own noise is in the test.

    `cap` "below": a seed on which a beats b counts as a tie (−ε(B − a), or −ε|a|), so that a
    comparator far behind on one seed (a diverged run) cannot widen the bound of a test that a
    is within; the capped contrast is never below the plain one, so its mean shown below zero
    shows the plain one's. "above": a seed on which a is behind b by more than twice the
    tolerance counts as exactly that, for the test that a is outside (never above the plain
    one)."""
    _, ia, ib = np.intersect1d(a.seeds, b.seeds, assume_unique=True, return_indices=True)
    la, lb, base = a.loss[ia], b.loss[ib], a.base[ia]
    room = (base - lb) if relative_to == "gap" else np.abs(lb)
    d = la - lb - epsilon * room
    if cap == "below":
        d = np.maximum(d, -epsilon * ((base - la) if relative_to == "gap" else np.abs(la)))
    elif cap == "above":
        d = np.minimum(d, epsilon * room)
    return d * per_seed_scale(a.base)[ia]


def tolerance(epsilon: float, relative_to: str, base_loss: float, best_loss: float) -> float:
    """δ in loss terms: a share of the gap, or of the best's own magnitude."""
    if relative_to == "gap":
        return epsilon * (base_loss - best_loss)
    return epsilon * abs(best_loss)


def shown_within(i: int, b: int, cells: list[Seeds], epsilon: float, relative_to: str,
                 alpha: float) -> bool:  # fmt: skip
    """Cell i shown within the tolerance of the best cell b: the upper bound of their contrast
    below zero at `alpha`. b, the cell with the best mean, is the hardest cell to be within
    the tolerance of (its mean is the lowest; a true best that looks worse than b is easier),
    so the data's choice of b makes the test stricter, not looser. b itself is tested against
    the runner-up, the cell it must have beaten (`comparator`): no cell is within by being
    chosen."""
    c = comparator(i, b, cells)
    if c is None:
        return True
    return upper_bound(contrast(cells[i], cells[c], epsilon, relative_to, cap="below"), alpha) < 0


def within_p(i: int, b: int, cells: list[Seeds], epsilon: float, relative_to: str) -> float:
    """The p-value of shown_within's test: the smallest level at which it shows cell i within
    the tolerance of the best cell b (shown_within at `alpha` is this below `alpha`)."""
    c = comparator(i, b, cells)
    if c is None:
        return 0.0
    return p_above(-contrast(cells[i], cells[c], epsilon, relative_to, cap="below"))


def comparator(i: int, b: int, cells: list[Seeds]) -> int | None:
    """The cell whose tolerance cell i is tested within: the best b, or for b itself the
    runner-up (the lowest mean of the rest); None where b is the only cell."""
    if i != b:
        return b
    rest = [j for j in range(len(cells)) if j != i]
    return min(rest, key=lambda j: cells[j].mean) if rest else None


def sequence(seeds: list[Seeds], family: str) -> tuple[list[int], list[int]]:
    """The orders in which a family's contexts are tested within the tolerance: from its best
    cell (the lowest mean) down to its shortest context, the sequence k* rests on; and from
    the context after the best up to its longest, which fills in the table above the best and
    bears on nothing else. A longer context that does worse (a trained model can overfit, or
    train slower) says nothing of a shorter one, so neither sequence crosses the best."""
    own = [i for i, c in enumerate(seeds) if c.model == family and c.k is not None]
    if not own:
        return [], []
    top = seeds[min(own, key=lambda i: seeds[i].mean)].k
    down = sorted((i for i in own if seeds[i].k <= top), key=lambda i: -seeds[i].k)
    up = sorted((i for i in own if seeds[i].k > top), key=lambda i: seeds[i].k)
    return down, up


def unset(k) -> bool:
    """A reference's k as stored: None, or NaN in a frame."""
    return k is None or (isinstance(k, float) and math.isnan(k))
