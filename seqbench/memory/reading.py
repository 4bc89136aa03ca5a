"""A memory plan's runs as its answer reads them (memory/runner.py runs the plan and saves the
answer): one row per point with a result (`plan_runs`; of a learning-rate search, each seed's
run with the best validation), the facts every answer of the plan is derived with
(`answer_facts`: the task, its metric, direction and units, the training size) and the
answers at each tolerance from one read (`answers_from`, with what the rate search chose)."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from seqbench.errors import SeqbenchError
from seqbench.memory.answer import derive
from seqbench.memory.plan import MemoryPlan, cell_key
from seqbench.memory.result import Answer
from seqbench.memory.stats import ALPHA
from seqbench.training.convergence import still_improving


def plan_runs(store, plan: MemoryPlan) -> pd.DataFrame:
    """One row per point of the plan with a result: run_id, model, k, seed, value, baseline,
    test_count (the predictions its test scored), test_const and test_gain_se (own data's
    shared test split: its best constant and the noise of a gain over it), improving (its
    validation curve was still improving at the last evaluation, and early stopping did not
    end it), and persistence where the task stores it."""
    from seqbench.report.frames import curves_frame, metric_direction, results_frame
    from seqbench.store.results import RunFilter

    ran = RunFilter(sweep=plan.name, statuses=("completed", "diverged"))
    metric = results_frame(store, "test_metric", ran)
    if metric.empty:
        return pd.DataFrame(columns=["run_id", "model", "k", "seed", "value", "baseline"])
    # this plan's points only: a concurrent command on the same store may have added its
    # search's points to the sweep, still running; this command waits for them when its own
    # search reaches them, and meanwhile answers from what it planned
    mine = {(*cell_key(plan, c), c.seed) for c in plan.points}
    keys = [
        (m, None if m in plan.references else int(k), int(s))
        for m, k, s in zip(metric["model"], metric["k"], metric["seed"], strict=True)
    ]
    metric = metric[[key in mine for key in keys]].reset_index(drop=True)
    higher = metric_direction("test_metric", plan.task) == "higher"
    if plan.lrs:  # each searched cell's seed: the run whose validation was best
        metric = _best_rate(store, plan, metric, higher)
    ids = metric["run_id"].astype(int)
    extra = {}
    keys = ("baseline", "test_count", "test_const", "test_gain_se", "persistence",
            "stopped_early", "converged")  # fmt: skip
    for key in keys:
        got = results_frame(store, key, ran)
        if key == "baseline" or not got.empty:
            v = dict(zip(got["run_id"], got["value"], strict=True))
            extra[key] = [v.get(r, math.nan) for r in ids]
    stopped = extra.pop("stopped_early", [math.nan] * len(ids))
    converged = extra.pop("converged", [math.nan] * len(ids))
    curves = curves_frame(store, list(ids), ["valid_metric"])
    by_run = {r: g.sort_values("step")["value"].tolist() for r, g in curves.groupby("run_id")}
    # a run that early stopping ended (no better validation in `patience` evaluations) has
    # converged by that rule, whatever its curve's tail looks like; one that --steps auto
    # ended has converged by this one (its curve says so too)
    improving = [
        s != 1.0 and c != 1.0 and still_improving(by_run.get(r, []), higher)
        for r, s, c in zip(ids, stopped, converged, strict=True)
    ]
    return pd.DataFrame(
        {
            "run_id": ids,
            "model": metric["model"],
            "k": [
                None if m in plan.references else int(k)
                for m, k in zip(metric["model"], metric["k"], strict=True)
            ],
            "seed": metric["seed"].astype(int),
            "value": metric["value"].astype(float),
            **extra,
            "improving": improving,
            "lr": [float(c["lr"]) for c in metric["config"]],
        }
    )


def _best_rate(store, plan: MemoryPlan, metric: pd.DataFrame, higher: bool) -> pd.DataFrame:
    """`metric` with one run per (model, k, seed) of the searched models: of the rates it
    trained at, the run with the best validation metric (best_valid_metric; a run without one,
    diverged, comes last). The test metric plays no part in the choice."""
    from seqbench.report.frames import results_frame
    from seqbench.store.results import RunFilter

    ran = RunFilter(sweep=plan.name, statuses=("completed", "diverged"))
    got = results_frame(store, "best_valid_metric", ran)
    valid = dict(zip(got["run_id"], got["value"], strict=True))
    worst = -math.inf if higher else math.inf

    def rank(row) -> float:
        v = valid.get(row.run_id, math.nan)
        v = v if math.isfinite(v) else worst
        return -v if higher else v

    metric = metric.assign(_rank=[rank(r) for r in metric.itertuples()])
    metric = metric.assign(_k=metric["k"].fillna(-1))
    best = metric.sort_values(["_rank", "run_id"]).drop_duplicates(["model", "_k", "seed"])
    return best.sort_index().drop(columns=["_rank", "_k"]).reset_index(drop=True)


def answer_facts(plan: MemoryPlan) -> dict:
    """What every answer of the plan is derived with, whatever its runs: the task, the
    metric and its direction, the largest k, the units, the label, the training size."""
    from seqbench.report.frames import data_label, metric_direction
    from seqbench.tasks import TASKS

    return {
        "task": plan.task,
        "higher_is_better": metric_direction("test_metric", plan.task) == "higher",
        "max_k": plan.max_k,
        "relative_to": plan.relative_to,
        "whole_input": plan.max_k >= plan.steps,
        "metric": TASKS.get(plan.task).metric if plan.task in TASKS else "test_metric",
        "units": metric_units(plan),
        "label": data_label(plan.task, plan.points[0].to_dict()),
        "train_size": train_size(plan),
        "train_steps": max((p.max_steps or p.steps for p in plan.points), default=None),
        "steps_auto": any(p.max_steps for p in plan.points),
    }


def answers_from(
    runs: pd.DataFrame, plan: MemoryPlan, facts: dict, alpha: float = ALPHA
) -> list[Answer]:
    """The answer at each of the plan's tolerances (plan.tolerances) from one read of its runs
    (`runs`, plan_runs): the cells are the same, the tolerance decides what they show; each
    test at `alpha`."""
    if runs.empty:
        raise SeqbenchError(f"no completed run of {plan.name!r} to answer from")
    answers = [derive(runs, epsilon=eps, alpha=alpha, **facts) for eps in plan.tolerances]
    chosen = lr_chosen(runs, plan)
    return [replace(a, lr_chosen=chosen) for a in answers] if chosen else answers


def lr_chosen(runs: pd.DataFrame, plan: MemoryPlan) -> str:
    """What the learning-rate search chose, model by model: each rate and the seeds (over
    every context) it won, e.g. "gru 0.003 ×3", and where every seed chose an end of the
    rates tried, that the best may lie past it; "" without a search."""
    parts = []
    for model, rates in plan.lrs.items() if "lr" in runs else ():
        won = runs.loc[runs["model"] == model, "lr"].value_counts()
        if not won.empty:
            shown = ", ".join(f"{lr:g} ×{n}" for lr, n in sorted(won.items()))
            part = f"{model} {shown} (of {', '.join(f'{r:g}' for r in rates)})"
            ends = ((max(rates), "largest", "larger"), (min(rates), "smallest", "smaller"))
            for end, most, more in ends:
                if len(won) == 1 and math.isclose(won.index[0], end, rel_tol=1e-6):
                    part += f", the {most} tried at every seed: a {more} rate may do better"
            parts.append(part)
    if not parts:
        return ""
    return "learning rate chosen on validation, per seed: " + "; ".join(parts)


def train_size(plan: MemoryPlan) -> int | None:
    """Own data's training sequences (windows of a table); None for a built-in task, whose
    data is drawn fresh or fixed by its paper."""
    from seqbench.tasks import is_file_task, make_task

    cfg = plan.points[0]
    if not is_file_task(cfg.task):
        return None
    return int(make_task(cfg.task, cfg.task_args()).n_train)


def metric_units(plan: MemoryPlan) -> str:
    """What a regression's metric is measured in on own data: standardised units (the
    training split's mean and sd: every table, and array files unless scale=raw) or the
    data's own; "" where the metric has no units to state (built-in tasks: their own
    definition; accuracies, bits)."""
    cfg = plan.points[0]
    if cfg.task != "file-regression":
        return ""
    if cfg.scale == "raw":
        return "the data's own units"
    return "standardised units"
