"""The answer to "how much context does this task need?", derived from a k-sweep's runs.

Pure pandas, NumPy and SciPy over one row per run; no store, no torch. A *cell* is one model at
one context k (or a recurrent reference, k None) over its seeds. Every statement is a test
over the seeds, each one-sided at level ALPHA, on per-seed differences (the cells of one sweep
run the same seeds, so a seed's data and draws are shared and pairing removes them):

- a cell has *learned* when its improvement over the trivial baseline, run by run, is above
  zero by a one-sided t-test, and, for an accuracy, its mean is above chance by more than a
  binomial draw of the run's test-set size would give (z at ALPHA);
- the *tolerance* δ is ε times the gap between the trivial baseline and the best cell
  (`relative_to="gap"`, the default) or ε times the best cell's own value ("best");
- a feedforward cell is *within* the tolerance when it learned and the upper confidence bound
  of its excess over the best is at most δ (non-inferiority), and *outside* when the lower
  bound is above δ; a cell that is neither is undecided at these seeds;
- k* is the smallest k with a cell within; its interval runs from one past the largest k
  below k* that is outside (every k up to that one too, more context never hurting the best
  predictor) to k*;
- the verdict: `nothing-learned` when no cell learned (a k* is only ever a cell that learned);
  `matches` with a k*;
  `needs-recurrence` when a recurrent reference is the best and every context tried is
  outside its tolerance (`family-gap` when the largest context was the whole input: then the
  gap is one of model family or training, not of memory); `undecided` when the seeds cannot
  tell.

docs/science.md ("How much context: k*") says the same for users, with the calibration that
chose the defaults (docs/memory.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seqbench.memory import EPSILON, check_tolerance

VERDICTS = ("matches", "nothing-learned", "needs-recurrence", "family-gap", "undecided")
ALPHA = 0.05  # each one-sided test's level (two of them bound k*'s interval: 90% together)
ACCURACIES = ("acc",)  # metrics that are a share of right answers: chance is binomial
# the last share of a run's evaluations that must not improve on the earlier ones by more than
# IMPROVING of the run's whole improvement, for the run to count as trained out
TAIL, IMPROVING = 0.25, 0.02
FEW_SEQUENCES = 500  # own data with fewer training sequences than this: "too little data"?


@dataclass(frozen=True)
class Cell:
    model: str
    k: int | None  # None: a recurrent reference (full backpropagation through time)
    mean: float
    std: float
    n: int
    learned: bool
    matches: bool  # within the tolerance of the best, shown over seeds
    outside: bool = False  # beyond the tolerance of the best, shown over seeds
    excess: float = math.nan  # its mean's excess over the best's, in the metric's own terms
    improving: bool = False  # at least half its seeds were still improving at their last evaluation

    @property
    def label(self) -> str:
        return _label(self.model, self.k)

    @property
    def status(self) -> str:
        """within, outside or undecided (feedforward cells); "" for a reference."""
        if self.k is None:
            return ""
        return "within" if self.matches else ("outside" if self.outside else "undecided")


@dataclass(frozen=True)
class Tolerance:
    epsilon: float
    relative_to: str  # "gap" or "best"
    value: float  # δ in the metric's own units

    def text(self) -> str:
        if self.relative_to == "gap":
            return f"within {self.epsilon:.0%} of the gap to the trivial baseline"
        return f"within {self.epsilon:.0%} of the best's own value"


@dataclass(frozen=True)
class Answer:
    task: str
    verdict: str
    k_star: int | None
    k_low: int | None
    k_high: int | None
    epsilon: float
    max_k: int
    metric: str
    higher_is_better: bool
    baseline: float
    best: float
    best_cell: str
    cells: list[Cell]
    run_ids: list[int]
    warnings: list[str] = field(default_factory=list)
    persistence: float | None = None  # a forecast's last-value predictor, where stored
    relative_to: str = "gap"
    tolerance: float = math.nan  # δ in the metric's own units
    whole_input: bool = False  # max_k is every step a sequence has
    units: str = ""  # what the metric is measured in (e.g. "standardised targets")
    label: str = ""  # the task as people know it: own data named by its file (data_label)
    train_size: int | None = None  # own data: the training sequences (few: say so)

    @property
    def sentence(self) -> str:
        return sentence(self)

    @property
    def star_cell(self) -> Cell | None:
        """The cell that k* rests on: the best within the tolerance at k*."""
        if self.k_star is None:
            return None
        at = [c for c in self.cells if c.k == self.k_star and c.matches]
        return min(at, key=lambda c: -c.mean if self.higher_is_better else c.mean)

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "label": self.label or self.task,
            "verdict": self.verdict,
            "k_star": self.k_star,
            "k_low": self.k_low,
            "k_high": self.k_high,
            "epsilon": self.epsilon,
            "relative_to": self.relative_to,
            "tolerance": _finite(self.tolerance),
            "max_k": self.max_k,
            "whole_input": self.whole_input,
            "metric": self.metric,
            "units": self.units,
            "train_size": self.train_size,
            "higher_is_better": self.higher_is_better,
            "baseline": _finite(self.baseline),
            "persistence": None if self.persistence is None else _finite(self.persistence),
            "best": _finite(self.best),
            "best_cell": self.best_cell,
            "sentence": self.sentence,
            "warnings": list(self.warnings),
            "cells": [
                {
                    "model": c.model,
                    "k": c.k,
                    "mean": _finite(c.mean),
                    "std": _finite(c.std),
                    "seeds": c.n,
                    "learned": c.learned,
                    "matches": c.matches,
                    "outside": c.outside,
                    "excess": _finite(c.excess),
                    "improving": c.improving,
                }
                for c in self.cells
            ],
            "run_ids": list(self.run_ids),
        }


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _label(model: str, k: int | None) -> str:
    return model if k is None else f"{model} at k={k}"


# -- the steps of an answer -------------------------------------------------------------------
@dataclass
class _Seeds:
    """One cell's runs in loss terms (lower is better), indexed by seed."""

    model: str
    k: int | None
    loss: pd.Series  # per seed; a diverged run counts as its baseline
    base: pd.Series  # the trivial baseline's loss, per seed
    count: float  # the smallest test set of its runs (nan where unknown)
    improving: bool


def cell_runs(runs: pd.DataFrame, sign: float) -> list[_Seeds]:
    """Group `runs` into cells, in the order k ascending then references, by model."""
    df = runs.assign(k=[None if _unset(k) else int(k) for k in runs["k"]])
    df["kk"] = df["k"].fillna(-1).astype(int)
    out = []
    for (model, kk), g in df.groupby(["model", "kk"], sort=True):
        g = g.drop_duplicates("seed", keep="last").set_index("seed")
        base = sign * g["baseline"].astype(float)
        base = base.fillna(float(base.mean()))
        value = sign * g["value"].astype(float)
        loss = value.where(np.isfinite(value), base)  # a blow-up learned nothing
        count = (
            float(g["test_count"].astype(float).min()) if "test_count" in g.columns else math.nan
        )
        improving = (
            # at least half: the race stops a cell at two seeds, where one of two improving
            # could have been two of three
            bool(g["improving"].fillna(False).astype(bool).mean() >= 0.5)
            if ("improving" in g.columns)
            else False
        )
        out.append(_Seeds(model, None if kk == -1 else int(kk), loss, base, count, improving))
    out.sort(key=lambda c: (c.k is None, c.k or 0, c.model))
    return out


def learned(cell: _Seeds, accuracy: bool, sign: float, alpha: float = ALPHA) -> bool:
    """Beats the trivial baseline beyond the seeds' noise (a one-sided paired t-test at
    `alpha`) and, for an accuracy, beyond what chance scores on a test set of the run's
    size."""
    # > 0: better than the baseline (each seed in units of the mean baseline)
    gain = ((cell.base - cell.loss) * per_seed_scale(cell.base)).to_numpy(float)
    if not _above(gain, 0.0, alpha):
        return False
    if accuracy and math.isfinite(cell.count) and cell.count > 0:
        p = float(np.clip(sign * cell.base.mean(), 1e-12, 1 - 1e-12))  # chance
        from scipy.special import ndtri  # norm.ppf

        margin = ndtri(1 - alpha) * math.sqrt(p * (1 - p) / cell.count)
        return bool(gain.mean() > margin)
    return True


def _above(x: np.ndarray, bound: float, alpha: float = ALPHA) -> bool:
    """A one-sided t-test at `alpha` that the mean of `x` is above `bound` (at least 2 values;
    with no spread at all, the mean itself decides)."""
    n = len(x)
    if n < 2:
        return False
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0:
        return bool(mean > bound)
    return bool(mean - _t(n, alpha) * sd / math.sqrt(n) > bound)


def _below(x: np.ndarray, bound: float, alpha: float = ALPHA) -> bool:
    return _above(-x, -bound, alpha)


def _t(n: int, alpha: float) -> float:
    """The one-sided Student-t quantile (scipy.stats.t.ppf's own stdtrit: see t_quantile)."""
    from scipy.special import stdtrit

    return float(stdtrit(n - 1, 1 - alpha))


def paired_excess(cell: _Seeds, best: _Seeds) -> np.ndarray:
    """cell − best per seed both ran (loss terms), each seed's in units of the mean baseline
    (per_seed_scale)."""
    both = pd.concat([cell.loss.rename("a"), best.loss.rename("b")], axis=1, join="inner")
    scale = per_seed_scale(cell.base).reindex(both.index)
    return ((both["a"] - both["b"]) * scale).to_numpy(float)


def per_seed_scale(base: pd.Series) -> pd.Series:
    """B̄ / B_s per seed: a seed's differences in units of the mean trivial baseline. Where
    each seed draws another task (the teacher's seeds draw other teachers, a file's seeds
    other splits) its baseline, and every error with it, has its own scale; the tests are
    about the share of the baseline a context leaves, not about which teacher was louder.
    1 where the baselines are not all positive (an accuracy's: chance is one number)."""
    b = base.astype(float)
    if not (b > 0).all():
        return pd.Series(1.0, index=base.index)
    return float(b.mean()) / b


def tolerance(epsilon: float, relative_to: str, base_loss: float, best_loss: float) -> float:
    """δ in loss terms: a share of the gap, or of the best's own magnitude."""
    if relative_to == "gap":
        return epsilon * (base_loss - best_loss)
    return epsilon * abs(best_loss)


def k_interval(cells: list[Cell]) -> tuple[int | None, int | None, int | None]:
    """k*, and its interval's ends: one past the largest k below k* that is outside, and k*."""
    within = sorted({c.k for c in cells if c.k is not None and c.matches})
    if not within:
        return None, None, None
    k_star = within[0]
    ks = {c.k for c in cells if c.k is not None and c.k < k_star}
    out = [k for k in ks if all(c.outside for c in cells if c.k == k)]
    return k_star, (max(out) + 1 if out else 1), k_star


def verdict_of(cells: list[Cell], best: Cell, k_star: int | None, whole_input: bool) -> str:
    ff = [c for c in cells if c.k is not None]
    if not any(c.learned for c in cells):
        return "nothing-learned"
    if k_star is not None:
        return "matches"
    if best.k is None and all(c.outside for c in ff):
        return "family-gap" if whole_input else "needs-recurrence"
    return "undecided"


def still_improving(curve: list[float], higher_is_better: bool) -> bool:
    """Whether a run's validation curve was still improving at its last evaluation: the best
    of its last TAIL of evaluations (two at least) beats the best before them by more than
    IMPROVING of the run's whole improvement. Too short a curve (under four) is no evidence."""
    v = np.asarray([x for x in curve if math.isfinite(x)], float)
    if len(v) < 4:
        return False
    v = -v if higher_is_better else v
    tail = max(2, round(TAIL * len(v)))
    head, end = v[:-tail], v[-tail:]
    whole = v[0] - v.min()
    return bool(whole > 0 and head.min() - end.min() > IMPROVING * whole)


def judge_cells(
    seeds: list[_Seeds],
    *,
    sign: float,
    accuracy: bool,
    base_loss: float,
    epsilon: float,
    relative_to: str,
    alpha: float = ALPHA,
    planned: int = 0,
) -> tuple[list[Cell], int, float]:
    """Each cell judged over its seeds, each test at `alpha`: learned, within or outside the
    tolerance of the best (the best: the lowest mean loss among the cells that learned).
    `planned`: the feedforward cells the question planned (the race may leave some untrained:
    the Bonferroni count is then still theirs). Returns (cells, the best's index, the tolerance
    δ in loss terms)."""
    got = [learned(c, accuracy, sign, alpha) for c in seeds]
    means = [float(c.loss.mean()) for c in seeds]
    pool = [i for i, ok in enumerate(got) if ok] or list(range(len(seeds)))
    b = min(pool, key=lambda i: means[i])  # the best cell: among those that learned
    delta = tolerance(epsilon, relative_to, base_loss, means[b])
    # the interval's low end is the largest k shown outside: a union of one test per cell,
    # each against a best that is itself the winner of them all (biased low), so each test
    # runs at ALPHA over their number (Bonferroni)
    compared = sum(1 for i, c in enumerate(seeds) if c.k is not None and i != b)
    compared = max(compared, planned - (seeds[b].k is not None))
    alpha_out = alpha / max(compared, 1)
    cells = []
    for i, c in enumerate(seeds):
        excess = paired_excess(c, seeds[b]) if i != b else np.zeros(1)
        ff = c.k is not None
        cells.append(
            Cell(
                model=c.model,
                k=c.k,
                mean=sign * means[i],
                std=_std(c.loss.to_numpy(float)),
                n=len(c.loss),
                learned=bool(got[i]),
                matches=bool(ff and got[i] and (i == b or _below(excess, delta, alpha))),
                outside=bool(ff and i != b and _above(excess, delta, alpha_out)),
                excess=sign * (means[i] - means[b]),
                improving=c.improving,
            )
        )
    return cells, b, delta


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
    alpha: float = ALPHA,
    planned: int = 0,
) -> Answer:
    """The answer from `runs`: one row per run with columns run_id, model, k (None for a
    recurrent reference), seed, value (the metric) and baseline (the run's trivial baseline);
    optionally test_count (the scored test predictions: chance's binomial bound for an
    accuracy), improving (the run was still improving at its last evaluation) and persistence
    (a forecast's last-value predictor: a warning when no model beats it). Non-finite values
    (a diverged run) count as the baseline: a run that blew up learned nothing. `alpha`: each
    test's level (ALPHA; the race judges at a stricter one, memory/race.py); `planned`: the
    feedforward cells planned, for the Bonferroni count where some were not trained."""
    check_tolerance(epsilon, relative_to)
    if runs.empty:
        raise ValueError("no runs to derive an answer from")
    sign = -1.0 if higher_is_better else 1.0  # loss = sign * value: lower is better
    # the trivial baseline: each seed's (a seed fixes the data), then their mean, so that a
    # seed with more runs (cells the race settled have fewer) does not weigh more
    per_seed = (sign * runs["baseline"].astype(float)).groupby(runs["seed"]).mean()
    base_loss = float(np.nanmean(per_seed.to_numpy(float)))
    cells, b, delta = judge_cells(
        cell_runs(runs, sign), sign=sign, accuracy=metric in ACCURACIES, base_loss=base_loss,
        epsilon=epsilon, relative_to=relative_to, alpha=alpha, planned=planned,
    )  # fmt: skip
    k_star, lo, hi = k_interval(cells)
    verdict = verdict_of(cells, cells[b], k_star, whole_input)
    if verdict == "nothing-learned":
        k_star = lo = hi = None
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
        relative_to=relative_to,
        tolerance=delta,
        whole_input=whole_input,
        units=units,
        label=label,
        train_size=train_size,
    )
    persistence = _persistence(runs)
    warnings = caveats(answer, persistence)
    return Answer(**{**answer.__dict__, "warnings": warnings, "persistence": persistence})


def _persistence(runs: pd.DataFrame) -> float | None:
    if "persistence" in runs and np.isfinite(runs["persistence"].astype(float)).any():
        return float(np.nanmean(runs["persistence"].astype(float)))
    return None


def caveats(a: Answer, persistence: float | None) -> list[str]:
    """What the answer cannot vouch for: references that are no ceiling, cells still
    improving, an interval the seeds leave wide, k* at the edge of what was tried, and a
    forecast no model makes better than repeating the last value."""
    sign = -1.0 if a.higher_is_better else 1.0
    ff = [c for c in a.cells if c.k is not None]
    top_ff = min(ff, key=lambda c: sign * c.mean) if ff else None
    out = []
    for c in a.cells:
        if c.k is not None:
            continue
        if not c.learned:
            out.append(
                f"the recurrent reference {c.model} did not learn (it is not beyond the trivial "
                f"baseline {a.baseline:.4g} over seeds): it is no ceiling here; train longer "
                "(--set steps=...)"
            )
            continue
        if top_ff is not None and sign * top_ff.mean < sign * c.mean:
            out.append(
                f"the recurrent reference {c.model} ({c.mean:.4g}) is no ceiling: "
                f"{top_ff.label} ({top_ff.mean:.4g}) is ahead of it"
            )
        if c.improving:
            out.append(
                f"the recurrent reference {c.model} was still improving at its last evaluation: "
                "it is no ceiling yet; train longer (--set steps=...)"
            )
    slow = [c.label for c in ff if c.improving]
    if slow:
        out.append(f"under-trained; train longer (--set steps=...): {', '.join(slow)}")
    if a.k_star is not None and a.k_low is not None and a.k_low < a.k_star:
        # those below a context shown outside do not widen the interval (it starts past it)
        undecided = [c.k for c in ff if c.status == "undecided" and a.k_low <= c.k < a.k_star]
        if undecided:
            lo, hi = min(undecided), a.k_star - 1
            ks = f"k = {lo}" if lo == hi else f"k = {lo} … {hi}"
            out.append(
                f"the seeds cannot tell whether {ks} is within the tolerance: more seeds "
                "(--seeds 0:6:+1) narrow the interval"
            )
    if a.k_star is not None and a.k_star == a.max_k and not a.whole_input:
        out.append(
            f"k* is the largest context tried ({a.max_k}): a larger one may do better still "
            "(--max-k)"
        )
    if a.verdict == "undecided":
        out.append("more seeds (--seeds 0:6:+1) may tell")
    if persistence is not None and sign * persistence <= sign * a.best:
        out.append(
            f"no model beats persistence (the last value: {persistence:.4g} against the "
            f"best {a.best:.4g}): k* is measured from the mean forecast "
            f"{a.baseline:.4g}, and repeating the last value already does as well"
        )
    return out


def _unset(k) -> bool:
    return k is None or (isinstance(k, float) and math.isnan(k))


def _std(v: np.ndarray) -> float:
    return float(v.std(ddof=1)) if len(v) > 1 else math.nan


# -- the answer in words and as a table ----------------------------------------------------------
def sentence(a: Answer) -> str:
    """The answer in one sentence."""
    where = f"on {a.label or a.task}"
    tol = Tolerance(a.epsilon, a.relative_to, a.tolerance).text()
    if a.verdict == "nothing-learned":
        lead = (
            f"Nothing learned at this budget {where}: no model beats the trivial "
            f"baseline ({a.baseline:.4g}) beyond the seeds' noise"
        )
        if a.train_size is not None and a.train_size < FEW_SEQUENCES:
            return (
                f"{lead}, and with {a.train_size} training sequences too little data may be "
                "why: more data, or a smaller --params, before more steps."
            )
        return f"{lead}; train longer (--set steps=...) or give a larger --params."
    if a.verdict == "matches":
        c = a.star_cell
        lead = f"A context of k* = {a.k_star} is enough {where} (interval {a.k_low}–{a.k_high} "
        if c.label == a.best_cell:
            return (
                f"{lead}over seeds): {c.label} is the best ({a.metric} {c.mean:.4g}), and every "
                f"shorter context tried falls short of it or cannot be told apart at these "
                f"seeds; tolerance: {tol} ({_references(a)})."
            )
        rel = f", {c.excess / abs(a.best):+.0%}" if a.best else ""
        return (
            f"{lead}over seeds): {c.label} reaches {a.metric} {c.mean:.4g} against the best "
            f"{a.best:.4g} ({a.best_cell}{rel}), shown {tol} ({_references(a)})."
        )
    if a.verdict in ("needs-recurrence", "family-gap"):
        lead = (
            f"Needs recurrence {where}: {a.best_cell} ({a.best:.4g}) beats every finite context "
            f"up to k = {a.max_k} beyond the seeds' noise and the tolerance ({tol})."
        )
        if a.verdict == "family-gap":
            lead = (
                f"A gap of model family or training {where}, not of memory: {a.best_cell} "
                f"({a.best:.4g}) beats every feedforward model up to k = {a.max_k}, the whole "
                f"input, beyond the seeds' noise and the tolerance ({tol})."
            )
        return lead
    return (
        f"Cannot tell {where} at these seeds: no context up to k = {a.max_k} is shown within "
        f"the tolerance of the best ({a.best_cell}, {a.best:.4g}), nor shown outside it "
        f"(tolerance: {tol}; {_references(a)})."
    )


def _references(a: Answer) -> str:
    """The trivial baseline, and a forecast's persistence where it was stored."""
    text = f"trivial baseline {a.baseline:.4g}"
    if a.persistence is not None and math.isfinite(a.persistence):
        text += f", persistence {a.persistence:.4g}"
    if a.units:
        text += f"; in {a.units}"
    return text


CELL_COLUMNS = ["model", "k", "mean", "std", "seeds", "learned", "tolerance", "improving"]


def cell_table(answer: dict) -> tuple[list[str], list[list]]:
    """An answer's cell table (Answer.to_dict() or a stored answer's details): its columns and
    one row a cell, as `seqbench memory` and the dashboard show it."""
    return CELL_COLUMNS, cell_rows(answer)


def cell_rows(answer: dict) -> list[list]:
    """The cell table of an answer (Answer.to_dict() or a stored answer's details), one row a
    cell, as the CLI and the dashboard show it."""
    rows = []
    for c in answer.get("cells", []):
        if c["k"] is None:
            status = ""
        elif c["matches"]:
            status = "within"
        else:
            status = "outside" if c.get("outside") else "undecided"
        rows.append(
            [
                c["model"],
                "full" if c["k"] is None else c["k"],
                _num(c["mean"]),
                _num(c["std"]),
                c["seeds"],
                "yes" if c["learned"] else "no",
                status,
                "yes" if c.get("improving") else "",
            ]
        )
    return rows


def _num(v) -> str:
    return "" if v is None else f"{v:.4g}"
