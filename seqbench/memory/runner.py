"""Run a memory plan: the k-sweep as a seqbench sweep (resumable; points done before, in any
sweep, are reused), bisection on integer k until the boundary is exact, and the answer
stored with the runs it rests on."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from seqbench.errors import SeqbenchError
from seqbench.memory.answer import Answer, derive
from seqbench.memory.plan import ROUNDS, MemoryPlan, next_k, with_points

if TYPE_CHECKING:
    from seqbench.store.store import Store


@dataclass
class MemoryOutcome:
    answer: Answer
    plan: MemoryPlan  # with every k tried (the bisection's included)
    answer_id: int
    ran: int  # runs trained by this command
    rounds: int  # bisection rounds


def run_memory(
    store: Store,
    plan: MemoryPlan,
    make_executor: Callable[[], object],
    *,
    on_round: Callable[[str, int, int], None] = lambda what, total, todo: None,
    on_result: Callable[[str], None] = lambda status: None,
    stale_after: float = 60.0,
    retry_failed: bool = False,
) -> MemoryOutcome:
    """Train what the plan needs (skipping what the store has), bisect, derive and store the
    answer. Raises SeqbenchError when points are left without a result (the same command
    resumes them)."""
    from seqbench.sweep import runner

    ran, rounds = 0, 0
    answer = None
    while True:
        what = "grid" if rounds == 0 else f"bisection {rounds}"
        sweep_id = runner.plan_sweep(store, plan.name, plan.spec(), plan.points, False, True)
        out = runner.run_sweep(
            store,
            sweep_id,
            make_executor,
            stale_after=stale_after,
            retry_failed=retry_failed,
            on_start=lambda total, todo, what=what: on_round(what, total, todo),
            on_result=on_result,
        )
        ran += out.ran
        if out.unfinished:
            raise SeqbenchError(
                f"{out.unfinished} of {out.total} run(s) of {plan.name!r} have no result "
                "(failed or crashed): see `seqbench runs --status failed`; the same command "
                "resumes (--retry-failed runs failed ones again)"
            )
        answer = derive_answer(store, plan)
        k = next_k(list(plan.ks), answer.k_star) if answer.verdict == "matches" else None
        if k is None or rounds >= ROUNDS:
            break
        rounds += 1
        plan = with_points(plan, [*plan.ks, k])
    answer_id = store.save_answer(plan.name, answer_columns(answer, plan), answer.run_ids)
    return MemoryOutcome(answer, plan, answer_id, ran, rounds)


def plan_runs(store, plan: MemoryPlan) -> pd.DataFrame:
    """One row per point of the plan with a result: run_id, model, k, seed, value, baseline
    (and persistence, where the task stores it)."""
    from seqbench.report.frames import results_frame

    statuses = ("completed", "diverged")
    metric = results_frame(store, "test_metric", sweep=plan.name, statuses=statuses)
    base = results_frame(store, "baseline", sweep=plan.name, statuses=statuses)
    last = results_frame(store, "persistence", sweep=plan.name, statuses=statuses)
    if metric.empty:
        return pd.DataFrame(columns=["run_id", "model", "k", "seed", "value", "baseline"])
    b = dict(zip(base["run_id"], base["value"], strict=True))
    extra = {}
    if not last.empty:
        p = dict(zip(last["run_id"], last["value"], strict=True))
        extra["persistence"] = [p.get(r, math.nan) for r in metric["run_id"]]
    return pd.DataFrame(
        {
            "run_id": metric["run_id"].astype(int),
            "model": metric["model"],
            "k": [
                None if m in plan.references else int(k)
                for m, k in zip(metric["model"], metric["k"], strict=True)
            ],
            "seed": metric["seed"].astype(int),
            "value": metric["value"].astype(float),
            "baseline": [b.get(r, math.nan) for r in metric["run_id"]],
            **extra,
        }
    )


def derive_answer(store, plan: MemoryPlan) -> Answer:
    from seqbench.report.frames import metric_direction

    runs = plan_runs(store, plan)
    if runs.empty:
        raise SeqbenchError(f"no completed run of {plan.name!r} to answer from")
    from seqbench.tasks import TASKS

    higher = metric_direction("test_metric", plan.task) == "higher"
    metric = TASKS.get(plan.task).metric if plan.task in TASKS else "test_metric"
    return derive(
        runs,
        task=plan.task,
        higher_is_better=higher,
        max_k=plan.max_k,
        epsilon=plan.epsilon,
        metric=metric,
    )


def plan_facts(plan: MemoryPlan) -> dict:
    """What the answer was asked with: the budget, the families, references and seeds."""
    return {
        "params": plan.params,
        "families": list(plan.families),
        "references": list(plan.references),
        "seeds": list(plan.seeds),
    }


def answer_columns(a: Answer, plan: MemoryPlan) -> dict:
    d = {**a.to_dict(), **plan_facts(plan)}
    return {
        "task": a.task,
        "verdict": a.verdict,
        "k_star": a.k_star,
        "k_low": a.k_low,
        "k_high": a.k_high,
        "max_k": a.max_k,
        "epsilon": a.epsilon,
        "metric": a.metric,
        "sentence": a.sentence,
        "details": {k: v for k, v in d.items() if k != "run_ids"},
    }


def plan_with_tried(plan: MemoryPlan, store) -> MemoryPlan:
    """The plan extended by the contexts an earlier invocation's bisection added (its sweep's
    stored spec), so that a rerun reads every run it rests on."""
    from seqbench.errors import NotFoundError

    try:
        (sweep,) = store.list_sweeps(plan.name)
    except NotFoundError:
        return plan
    spec = sweep.spec or {}
    mem = spec.get("memory")
    if not isinstance(mem, dict):
        raise SeqbenchError(f"sweep {plan.name!r} is not a memory sweep; give another --name")
    ks = [k for g in spec.get("grids", []) for k in (g.get("k") or [])]
    extra = [k for k in ks if isinstance(k, int) and 1 <= k <= plan.max_k]
    return with_points(plan, [*plan.ks, *extra]) if set(extra) - set(plan.ks) else plan
