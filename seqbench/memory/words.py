"""The answer in words: its sentence, the warnings that say what it cannot vouch for, and its
cell table, as the CLI, the stored answer and the dashboard show them (memory/answer.py derives
the answer; this module only reads it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seqbench.memory.stats import narrowing

if TYPE_CHECKING:
    from seqbench.memory.result import Answer
    from seqbench.store.store import Store

FEW_SEQUENCES = 500  # own data with fewer training sequences than this: "too little data"?


@dataclass(frozen=True)
class Tolerance:
    epsilon: float
    relative_to: str  # "gap" or "best"

    def text(self) -> str:
        if self.relative_to == "gap":
            return f"within {self.epsilon:.0%} of the gap to the trivial baseline"
        return f"within {self.epsilon:.0%} of the best's own value"


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
                f"({_longer(a, c.improving)})"
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
                f"it is no ceiling yet; train longer ({_longer(a)})"
            )
    slow = [c.label for c in ff if c.improving]
    if slow:
        out.append(f"under-trained; train longer ({_longer(a)}): {', '.join(slow)}")
    more = _more_seeds(a)
    if a.k_star is not None and a.k_low is not None and a.k_low < a.k_star:
        # those below a context shown outside do not widen the interval (it starts past it)
        undecided = [c.k for c in ff if c.status == "undecided" and a.k_low <= c.k < a.k_star]
        if undecided:
            lo, hi = min(undecided), a.k_star - 1
            ks = f"k = {lo}" if lo == hi else f"k = {lo} … {hi}"
            out.append(f"the seeds cannot tell whether {ks} is within the tolerance: {more}")
    out += _longer_does_worse(a, sign)
    if a.k_star is not None and a.k_star == a.max_k and not a.whole_input:
        out.append(
            f"k* is the largest context tried ({a.max_k}): a larger one may do better still "
            "(`max_k`)"
        )
    if a.verdict == "undecided":
        out.append(f"more seeds may tell: {more}")
    if persistence is not None and sign * persistence <= sign * a.best:
        out.append(
            f"no model beats persistence (the last value: {persistence:.4g} against the "
            f"best {a.best:.4g}): k* is measured from the mean forecast "
            f"{a.baseline:.4g}, and repeating the last value already does as well"
        )
    return out


def _more_seeds(a: Answer) -> str:
    """What twice the seeds would buy: each test's bound that much tighter at the same spread
    (memory/stats.narrowing). The seeds it names are exactly that many, the seeds already run
    among them (not trained again: `twice_the_seeds`)."""
    n = max((c.n for c in a.cells), default=0)
    if n < 2:
        return f"more seeds (`seeds` {twice_the_seeds(a.seeds, max(n, 3))}) narrow the interval"
    return (
        f"{2 * n} seeds (`seeds` {twice_the_seeds(a.seeds, n)}) make each test's bound about "
        f"{narrowing(n):.1f}× tighter than {n} at the same spread"
    )


def twice_the_seeds(ran: tuple[int, ...], n: int) -> str:
    """2n seeds as `--seeds` takes them: those that `ran` and the smallest unused ones after
    them; a range where they run on (0:5:+1 after 0, 1, 2; a range's stop is inclusive), else
    a list."""
    out, k = set(ran), 0
    while len(out) < 2 * n:
        out.add(k)
        k += 1
    seeds = sorted(out)
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}:{seeds[-1]}:+1"
    return ",".join(map(str, seeds))


def _longer_does_worse(a: Answer, sign: float) -> list[str]:
    """A family whose best cell is not its longest context, with a longer one shown outside
    the tolerance: more context did worse (overfitting, or training that did not reach it);
    the answer's tests start at the best and do not rest on it."""
    out = []
    for family in sorted({c.model for c in a.cells if c.k is not None}):
        own = [c for c in a.cells if c.model == family and c.k is not None]
        top = min(own, key=lambda c: sign * c.mean)
        worse = [c for c in own if c.k > top.k and c.outside]
        if worse:
            out.append(
                f"{worse[-1].label} does worse than {top.label} beyond the tolerance: more "
                "context did worse here (overfitting, or a longer context that trains slower)"
            )
    return out


def sentence(a: Answer) -> str:
    """The answer in one sentence."""
    where = f"on {a.label or a.task}"
    tol = Tolerance(a.epsilon, a.relative_to).text()
    if a.verdict == "nothing-learned":
        lead = (
            f"Nothing learned at this budget {where}: no model beats the trivial "
            f"baseline ({a.baseline:.4g}) beyond the seeds' noise"
        )
        if a.train_size is not None and a.train_size < FEW_SEQUENCES:
            return (
                f"{lead}, and with {a.train_size} training sequences too little data may be "
                "why: more data, or a smaller `params`, before more steps."
            )
        # a cell the cap stopped still improving wants a higher cap; else, under auto, the runs
        # stopped on what looked converged: a plateau before learning, which a floor carries past
        improving = any(c.improving for c in a.cells)
        return f"{lead}; train longer ({_longer(a, improving)}) or give a larger `params`."
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
    if a.verdict == "under-trained":
        return _under_trained(a, where)
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


def _longer(a: Answer, improving: bool = True) -> str:
    """How to train longer: more steps; where the runs trained until converged, a higher cap
    for a run the cap stopped still improving, and a higher floor for one that stopped
    without having learned (a plateau before learning looks converged to the rule)."""
    if not a.steps_auto:
        return "`steps=...`"
    if improving:
        return "`max_steps=...`"
    return "`steps=...`, a higher floor: a run on a plateau before it learns looks converged"


def _under_trained(a: Answer, where: str) -> str:
    """A statement the budgets cannot carry: what they measured, the cells it rests on that
    were still improving, and a cap to try."""
    if a.k_star is not None:
        measured = f"these budgets put k* at {a.k_star} (interval {a.k_low}–{a.k_high})"
    else:
        measured = f"on these budgets {a.best_cell} beats every context up to k = {a.max_k}"
    were = "was" if len(a.under_trained) == 1 else "were"
    if a.steps_auto:  # every run trained until converged or its cap: a higher cap
        how = f"`max_steps={2 * a.train_steps}`, twice this cap"
    else:
        cap = f"steps={2 * a.train_steps}, twice these" if a.train_steps else "steps=..., more"
        how = (f"`steps=auto` trains each run until it converges; or `set` {cap}, with "
               "`patience=3`")  # fmt: skip
    return (
        f"Undecided (under-trained) {where}: {measured}, but {', '.join(a.under_trained)} "
        f"{were} still improving at the last evaluation, and longer training may move the "
        f"answer; train longer ({how}) and ask again."
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


def stored_answers(store: Store, name: str | None = None, task: str | None = None) -> list[dict]:
    """The stored answers (newest first), each with `stale` (a run it rests on was deleted or
    archived since), `run_ids` (the runs it rests on that are still stored), `interval`
    (k*'s interval as text: "2–4", ">16" past the largest k; "" without a k*) and
    `tolerance` (as text: "5% of gap", "10% of best") and `label` (the task as people know
    it: own data named by its file, as reports name it); NotFoundError for a `name` no
    answer has."""
    from seqbench.errors import NotFoundError

    rows = store.answer_rows(name=name, task=task)
    if name is not None and not rows:
        raise NotFoundError(f"no memory answer named {name!r} in this store")
    for r in rows:
        r["run_ids"] = store.answer_run_ids(r["id"])
        hi = r["k_high"] if r["k_high"] is not None else f">{r['max_k']}"
        r["interval"] = f"{r['k_low']}–{hi}" if r["k_star"] is not None else ""
        # answers stored before the choice were relative to the gap
        r["tolerance"] = f"{r['epsilon']:.0%} of {r['details'].get('relative_to', 'gap')}"
        r["label"] = r["details"].get("label") or r["task"]  # own data: named by its file
    return rows
