"""The k-sweep behind an answer: its grid of contexts, its points, and the next k to search."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from seqbench.config import RunConfig
from seqbench.errors import UnknownNameError, UsageError
from seqbench.memory import (
    EPSILON,
    LR_FACTORS,
    LR_SEARCH,
    RELATIVE_TO,
    check_tolerance,
    k_grid,
    search_gap,
    whole_descent,
)  # fmt: skip
from seqbench.parsing import AUTO, coerce, split_assignment, split_list
from seqbench.sweep.spec import BUDGET as PARAMS  # where the search for one budget starts
from seqbench.sweep.spec import check_budget, expand, smallest_budget

FAMILIES = ("tcn", "window")  # the feedforward families a k-sweep runs by default
REFERENCES = ("lstm", "gru")  # the recurrent references (full backpropagation through time)
SEEDS = (0, 1, 2)
MIN_SEEDS = 3  # an interval over seeds needs at least three


@dataclass(frozen=True)
class MemoryPlan:
    name: str
    task: str
    sets: dict[str, Any]  # the task and training fields given (--set, --path), one value each
    families: tuple[str, ...]
    references: tuple[str, ...]
    seeds: tuple[int, ...]
    params: int
    epsilon: float
    max_k: int  # the largest context tried: T (the steps a sequence has) unless capped
    steps: int  # T: the steps a sequence has (max_k == steps: the whole input was tried)
    relative_to: str  # what epsilon is a share of: "gap" or "best" (memory/answer.py)
    ks: tuple[int, ...]  # the contexts tried so far, ascending
    points: list[RunConfig] = field(default_factory=list)
    # a profile's tolerances, loosest first (epsilon is the first); () for one tolerance
    epsilons: tuple[float, ...] = ()
    # the learning rates each searched model trains at (--lr-search): every seed at each,
    # the run with the best validation metric the cell's (reading.plan_runs); {} for none
    lrs: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def tolerances(self) -> tuple[float, ...]:
        """Every ε the plan answers for: the profile's, or its one epsilon."""
        return self.epsilons or (self.epsilon,)

    def spec(self) -> dict:
        """What is stored with the sweep: its grids, and what made them."""
        return {
            "memory": {
                "task": self.task,
                "families": list(self.families),
                "references": list(self.references),
                "params": self.params,
                "epsilon": self.epsilon,
                **({"epsilons": list(self.epsilons)} if self.epsilons else {}),
                "relative_to": self.relative_to,
                "max_k": self.max_k,
                **({"lr_search": {m: list(v) for m, v in self.lrs.items()}} if self.lrs else {}),
            },
            "grids": self.grids(),
        }

    def grids(self) -> list[dict]:
        """The sweep's grids: the families over k, the references over the whole sequence;
        a model whose learning rate is searched in a grid of its own, over its rates."""
        common = {"params": [self.params], **{k: [v] for k, v in self.sets.items()}}
        out = []
        for models, ks in ((self.families, list(self.ks)), (self.references, None)):
            plain = [m for m in models if m not in self.lrs]
            groups = [(plain, common)] if plain else []
            groups += [([m], common | {"lr": list(self.lrs[m])}) for m in models if m in self.lrs]
            for group, sets in groups:
                grid = {"models": group, "tasks": [self.task]} | ({"k": ks} if ks else {})
                out.append(grid | {"seeds": list(self.seeds), "set": sets})
        return out


def cell_key(plan: MemoryPlan, c: RunConfig) -> tuple[str, int | None]:
    """The cell a point of the plan belongs to: its model and k as the run stores it (None
    for a recurrent reference), as the answer's cells know it."""
    from seqbench.configure import stored_k

    return c.model, None if c.model in plan.references else stored_k(c)


def next_k(tried: list[int], k_star: int | None, max_k: int) -> int | None:
    """The next context to try: one below k* while k* is in its grid gap's descent (the
    d contexts below the grid's u, memory.search_gap), then the bisection point between the
    largest k tried below k* (it fell short) and k*; None when they are adjacent (the boundary
    is exact) or there is no k*."""
    if k_star is None:
        return None
    below = [k for k in tried if k < k_star]
    if not below or k_star - max(below) <= 1:
        return None
    gap = search_gap(k_star - 1, max_k)
    if gap is not None and gap[1] - gap[2] < k_star:  # still descending from u: one below
        return k_star - 1
    return (max(below) + k_star) // 2


def next_ks(tried: list[int], k_star: int | None, within: set[int], max_k: int) -> set[int]:
    """The contexts the next search round trains for one answer: `next_k`'s, and below each
    context shown within (`within`) the next one down where it lies in a grid gap its descent
    covers whole (memory.whole_descent: [2, 4) in the grid of powers of two), whatever k* is.
    Tried there even when l is shown within, such a gap's contexts and l are one fixed
    sequence, each tested at the whole level (memory.gap_share); tried only when l fell
    short, a wrong pass of l and one of the descent would each be a way to be wrong."""
    out = {k for k in (next_k(tried, k_star, max_k),) if k is not None}
    return out | {k - 1 for k in within if k - 1 not in tried and whole_descent(k - 1, max_k)}


def parse_sets(items: list[str] | None) -> dict[str, Any]:
    """--set field=value, one value each (a memory command is one experiment, not a grid)."""
    from seqbench.configure import FIELDS  # loads the registries: their options are fields

    out: dict[str, Any] = {}
    for item in items or []:
        key, val = split_assignment(item, "`set`", "key=value")
        if key in ("model", "task", "k", "seed", "params", "tags") or key not in FIELDS:
            if key in FIELDS:
                flag = {"seed": "`seeds`", "params": "`params`", "k": "`max_k`"}.get(key)
                raise UsageError(
                    f"`{key}=` is not for memory"
                    + (f"; give {flag}" if flag else ": it is what the command varies")
                )

            raise UnknownNameError("field", key, sorted(FIELDS))
        out[key] = coerce(key, val)
    return out


def make_plan(
    task: str,
    *,
    sets: list[str] | None = None,
    path: str | None = None,
    families: list[str] | None = None,
    references: list[str] | None = None,
    seeds: list[int] | None = None,
    params: int | None = None,
    epsilon: float | list[float] | None = None,
    relative_to: str | None = None,
    max_k: int | None = None,
    name: str | None = None,
    lr_search: str | None = None,
) -> MemoryPlan:
    """The k-sweep that answers "how much context does `task` need?", its first round: the
    feedforward `families` (default tcn, window) over a geometric grid of k up to T at one
    parameter budget (`params`; default: the smallest from 10,000 up that every model meets at
    every k within 5%), beside the recurrent `references` (default lstm, gru), over `seeds`
    (default 0, 1, 2). Every point is resolved and validated and the budget checked for every
    family at every k; nothing is written. `sets`: "field=value" texts; `epsilon`: one
    tolerance, or several (a list, or "0.2,0.1,0.05": a profile, one answer per ε from the same
    cells). `lr_search`: whose learning rate is searched (LR_SEARCH; default the references').

    Example: ``make_plan("teacher", sets=["seq_len=16"], families=["tcn"], name="t16")``"""
    from seqbench.configure import fed_steps
    from seqbench.store.names import check_label

    if name is not None:
        check_label("memory", name)
    given = _given(sets, path)
    fams = tuple(dict.fromkeys(families if families is not None else FAMILIES))
    refs = tuple(dict.fromkeys(references if references is not None else REFERENCES))
    seeds_t = tuple(dict.fromkeys(seeds if seeds is not None else SEEDS))
    _check_parts(fams, refs, seeds_t, params)
    relative_to = RELATIVE_TO[0] if relative_to is None else relative_to
    profile = tolerances(epsilon, relative_to)
    epsilon = profile[0]
    profile = profile if len(profile) > 1 else ()
    probe = _probe(refs[0] if refs else fams[0], task, given, params, seeds_t[0])
    steps = fed_steps(probe)
    top = _largest_k(task, max_k, steps)
    task_name = probe.task  # `file` resolves to the file's kind
    plan = MemoryPlan(
        name or "",
        task_name,
        given,
        fams,
        refs,
        seeds_t,
        params or PARAMS,
        float(epsilon),
        top,
        steps,
        relative_to,
        tuple(k_grid(top)),
        epsilons=profile,
    )
    plan = with_points(_searched(plan, lr_search, probe, params))
    if params is None:  # the smallest budget from PARAMS up that every model meets at every k
        plan = with_points(replace(plan, params=smallest_budget(plan.points)))
    else:
        check_budget(plan.points, plan.params)
    eps_ident = list(profile) if profile else epsilon  # one ε: the name it always had
    ident = (task_name, given, probe, fams, refs, plan.params, seeds_t, eps_ident, top, relative_to)
    return replace(plan, name=name or default_name(*ident, lr_search=plan.lrs))


def _given(sets: list[str] | None, path: str | None) -> dict[str, Any]:
    """The fields every cell is given: `sets`, trained until converged unless they say how
    long (steps, epochs or a cap), and the data file."""
    given = parse_sets(sets)
    if not {"steps", "epochs", "max_steps"} & set(given):
        given["steps"] = AUTO  # every cell trained until it has converged, by default
    if path is not None:
        given["path"] = path
    return given


def _probe(model: str, task: str, given: dict, params: int | None, seed: int) -> RunConfig:
    """The first model's config on the task: what the task resolves to (a file's kind, its T),
    checked to fit at the default width (a lower bound of what each cell needs), so that a
    sequence too long is refused naming seq_len now, not after a budget search at every k."""
    from seqbench.configure import check_fits, make_config, readable

    values = readable(model, task, {"params": params or PARAMS, "seed": seed, **given})
    probe = make_config(model, task, values)
    check_fits(replace(probe, params=None))
    return probe


def _searched(plan: MemoryPlan, lr_search: str | None, probe: RunConfig, params: int | None):
    """The plan with the learning rates of the models whose rate is searched (LR_SEARCH)."""
    lr_search = LR_SEARCH[0] if lr_search is None else lr_search
    if lr_search not in LR_SEARCH:
        raise UsageError(f"`lr_search` must be one of {', '.join(LR_SEARCH)}, got {lr_search!r}")
    refs, fams = plan.references, plan.families
    searched = {"references": refs, "all": (*fams, *refs), "none": ()}[lr_search]
    return replace(plan, lrs={m: _rates(m, probe, plan.sets, params) for m in searched})


def _rates(model: str, probe: RunConfig, given: dict, params: int | None) -> tuple[float, ...]:
    """The learning rates a searched model trains at: its pair's (or the given) rate times
    each of LR_FACTORS, to three significant digits."""
    from seqbench.configure import make_config, readable

    lr = make_config(
        model, probe.task, readable(model, probe.task, {"params": params or PARAMS, **given})
    ).lr
    return tuple(float(f"{lr * f:.3g}") for f in LR_FACTORS)


# tolerances one profile may ask: each is an answer with a search of its own (10,000 ran
# past 60 s before a word was said)
MAX_TOLERANCES = 32


def _check_parts(
    fams: tuple[str, ...], refs: tuple[str, ...], seeds: tuple[int, ...], params: int | None
) -> None:
    """The families are feedforward, the references recurrent, the seeds enough for an
    interval, the budget a positive number of parameters."""
    from seqbench.models import MODELS

    if not fams:
        raise UsageError("`families` names no feedforward family: nothing would vary k")
    for m in fams:
        if MODELS.get(m).recurrent:
            raise UsageError(
                f"`families` takes feedforward models; {m} is recurrent (`references`)"
            )
    for m in refs:
        if not MODELS.get(m).recurrent:
            raise UsageError(
                f"`references` takes recurrent models; {m} is feedforward (`families`)"
            )
    if len(seeds) < MIN_SEEDS:
        raise UsageError(
            f"memory needs at least {MIN_SEEDS} seeds for an interval over seeds, got {len(seeds)}"
        )
    if params is not None and not (isinstance(params, int) and params > 0):
        raise UsageError(f"`params` must be a positive number of parameters, got {params}")


def _largest_k(task: str, max_k: int | None, steps: int) -> int:
    """The largest context of the grid: --max-k, or every step a sequence has."""
    if max_k is None:
        top = steps
    elif max_k > steps:
        raise UsageError(f"`max_k` {max_k} is beyond the {steps} steps a sequence of {task} has")
    elif max_k < 2:
        raise UsageError(f"`max_k` must be at least 2, got {max_k}")
    else:
        top = max_k
    if top < 2:
        raise UsageError(f"{task}'s sequences have {steps} step(s): too short for a k-sweep")
    return top


def tolerances(epsilon: float | list[float] | str | None, relative_to: str) -> tuple[float, ...]:
    """The tolerances asked for (a number, a list, or --epsilon's text: "0.2,0.1,0.05"),
    loosest first, each in (0, 1) (the default's one where none is given); UsageError for an
    empty list, a word that is no number, or one out of range."""
    given = [EPSILON] if epsilon is None else epsilon
    if isinstance(given, str):
        given = [_number(item) for item in split_list(given)]
    given = [given] if isinstance(given, int | float) else list(given)
    if not given:
        raise UsageError("`epsilon` names no tolerance: give one, or several (0.2,0.1,0.05)")
    if len(given) > MAX_TOLERANCES:
        raise UsageError(
            f"`epsilon` names {len(given):,} tolerances; a profile takes at most "
            f"{MAX_TOLERANCES} (each is one answer, its own k* and its own search)"
        )
    for eps in given:
        try:
            check_tolerance(eps, relative_to)
        except ValueError as e:
            raise UsageError(str(e)) from None
    return tuple(sorted({float(e) for e in given}, reverse=True))


def with_points(plan: MemoryPlan, ks: list[int] | None = None) -> MemoryPlan:
    """The plan with contexts `ks` (default: its own) and its points expanded and validated."""
    plan = replace(plan, ks=tuple(sorted(set(ks or plan.ks))))
    return replace(plan, points=expand(plan.grids()))


def _number(item: str) -> float:
    try:
        return float(item)
    except ValueError:
        raise UsageError(
            f"`epsilon` must be a number or a comma-separated list (0.2,0.1,0.05), got {item!r}"
        ) from None


def default_name(task, given, probe, fams, refs, params, seeds, epsilon, top, relative_to,
                 lr_search=None) -> str:  # fmt: skip
    """memory-TASK-HASH8: the same question asks under the same name (and so resumes); a
    tolerance relative to the gap (the default) keeps the names answers had before there was a
    choice."""
    ident = {
        "task": task,
        "data": probe.data_hash or "",
        "sets": {k: v for k, v in sorted(given.items()) if k != "path"},
        "families": list(fams),
        "references": list(refs),
        "params": params,
        "seeds": list(seeds),
        "max_k": top,
        "epsilon": epsilon,
    }
    if relative_to != RELATIVE_TO[0]:
        ident["relative_to"] = relative_to
    if lr_search:  # a search: another question than the pair's rate alone
        ident["lr_search"] = {m: list(v) for m, v in sorted(lr_search.items())}
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()
    if given.get("path"):  # own data: named by its file, as reports name it
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(given["path"])).name)[:60] or "data"
        return f"memory-{stem}-{digest[:8]}"
    return f"memory-{task}-{digest[:8]}"
