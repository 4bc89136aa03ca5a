"""Run a memory plan: the k-sweep as a seqbench sweep (resumable; points done before, in any
sweep, are reused), a search on integer k (down from the gap's top, then bisecting) until
the boundary is exact, and the answer
stored with the runs it rests on."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pandas as pd

from seqbench.errors import NotFoundError, SeqbenchError
from seqbench.memory import k_grid, search_rounds
from seqbench.memory.answer import ALPHA, Answer, derive
from seqbench.memory.plan import MemoryPlan, cell_key, next_k, with_points
from seqbench.memory.race import RACE_SEEDS, looks
from seqbench.training.convergence import still_improving

if TYPE_CHECKING:
    from seqbench.config import RunConfig
    from seqbench.store.store import Store


@dataclass
class MemoryOutcome:
    answer: Answer  # the (first) tolerance's
    plan: MemoryPlan  # with every k tried (the search's included)
    answer_id: int
    ran: int  # runs trained by this command
    rounds: int  # search rounds (one context each: the descent, then the bisection)
    # a profile: every tolerance's answer and stored id, loosest first, and how k* grows
    answers: list[Answer] = field(default_factory=list)
    answer_ids: list[int] = field(default_factory=list)
    profile: dict | None = None
    spared: int = 0  # the plan's runs the race left out: cells settled before their last seed
    name: str = ""  # the stored answer's: the plan's, or with EVERY_SEED when not raced

    @property
    def names(self) -> list[str]:
        """The stored answers' names, as the ids."""
        if self.profile is None:
            return [self.name]
        return [profile_name(self.name, a.epsilon) for a in self.answers]


# what an answer derived without the race (every cell every seed) adds to its name: the same
# runs (the plan's sweep), another procedure, so another stored answer beside the raced one
EVERY_SEED = "-every-seed"


def answer_name(plan: MemoryPlan, race: bool) -> str:
    return plan.name if race else plan.name + EVERY_SEED


def run_memory(
    store: Store,
    plan: MemoryPlan,
    make_executor: Callable[[], object],
    *,
    on_round: Callable[[str, int, int], None] = lambda what, total, todo: None,
    on_result: Callable[[str], None] = lambda status: None,
    stale_after: float = 60.0,
    retry_failed: bool = False,
    race: bool = True,
) -> MemoryOutcome:
    """Train what the plan needs (skipping what the store has), search, derive and store the
    answer. `race`: each cell's seeds come a round at a time, and a cell the evidence has
    settled gets no more (memory/race.py); else every cell gets every seed at once. Raises
    SeqbenchError when points are left without a result (the same command resumes them)."""
    pool = _OnePool(make_executor)

    def train(now: MemoryPlan, points: list[RunConfig], stage: str) -> int:
        return _run_points(store, now, points, pool.factory, stage, on_round, on_result,
                           stale_after, retry_failed)  # fmt: skip

    try:
        return _save(store, *replay(store, plan, train, race), name=answer_name(plan, race))
    finally:
        pool.close()


@dataclass
class Stop:
    """Where a dry replay stopped: the search round (0: the grid), the plan as it stood
    then, the points that stage asks for that have no stored result (none: the replay went
    to the end) and the points asked for up to then."""

    rounds: int
    plan: MemoryPlan
    missing: list[RunConfig]
    asked: int

    @property
    def complete(self) -> bool:
        return not self.missing


def dry_replay(store, plan: MemoryPlan, race: bool = True) -> Stop:
    """What the same memory command would do on this store, training and writing nothing:
    the race and the search replayed on the stored runs of the plan's sweep as far as they
    go, to the end (`complete`: a rerun trains nothing and re-derives the answer) or to the
    first stage with a point the sweep has no result for."""

    stopped: list[Stop] = []

    def check(now: MemoryPlan, runs: pd.DataFrame, rounds: int) -> bool:
        """After each stage's read of the store (nothing trained): stop at a point it lacks."""
        have = {  # k is NaN in the frame where a reference has none
            (m, None if m in now.references else int(k), int(seed))
            for m, k, seed in zip(runs["model"], runs["k"], runs["seed"], strict=True)
        }
        missing = [c for c in now.points if (*cell_key(now, c), c.seed) not in have]
        if missing:
            stopped.append(Stop(rounds, now, missing, len(now.points)))
        return bool(missing)

    now, asked, _answers, _ran, rounds = replay(
        store, plan, lambda now, points, stage: 0, race, seen=check
    )
    return stopped[0] if stopped else Stop(rounds, now, [], len(asked))


class _OnePool:
    """One executor for every stage of a memory command (the race's seeds, the search's
    rounds), started when first needed and shut down at the end: a fresh pool each stage
    paid its workers' start and their first run's warm-up every time."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make, self.executor = make, None

    def factory(self) -> object:
        if self.executor is None:
            self.executor = self.make()
        return _Kept(self.executor)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown()


class _Kept:
    """An executor whose shutdown is left to its _OnePool."""

    def __init__(self, executor: object) -> None:
        self._executor = executor

    def __getattr__(self, name: str):
        return getattr(self._executor, name)

    def shutdown(self) -> None:
        pass


def replay(store, plan, train, race, seen=None, read=None, extend=with_points):
    """The race and the search over `plan`, each stage's points handed to `train(plan,
    points, stage)` (which trains those without a result and returns how many it trained)
    and the answers derived from what `read(plan)` gives after it (default: the plan's runs in
    `store`, plan_runs); `seen(plan, runs, rounds)`, if given, is shown each stage's runs as
    read, and ends the replay there by returning True (the dry replay's check: no answers
    then). Returns the plan with every context tried, the points asked for by config hash,
    the answers, the runs trained and the search rounds."""
    from seqbench.configure import config_hash

    read = read or (lambda now: plan_runs(store, now))
    ran, rounds = 0, 0
    asked: dict[str, RunConfig] = {}  # the points the answer rests on, by config hash
    settled: frozenset = frozenset()  # the race's settled cells
    facts = answer_facts(plan)
    grid = k_grid(plan.max_k)  # a safety bound: the widest gap's search, in rounds
    most_rounds = max((search_rounds(b - a) for a, b in itertools.pairwise(grid)), default=0)
    while True:  # the grid, then each search round's new context
        what = "grid" if rounds == 0 else f"search {rounds}"
        n = min(RACE_SEEDS, len(plan.seeds)) if race else len(plan.seeds)
        while True:  # the race: a seed more for every cell still open
            want = wanted(plan, n, settled)
            new = {h: c for h, c in ((config_hash(c), c) for c in want) if h not in asked}
            if new or not asked:
                asked |= new
                stage = what if not race else f"{what}, {n} seeds"
                ran += train(plan, list(asked.values()), stage)
                now = replace(plan, points=list(asked.values()))
                runs = read(now)
                if seen is not None and seen(now, runs, rounds):
                    return now, asked, [], ran, rounds
                answers = answers_from(runs, now, facts)
                settled = race_settled(runs, now, facts) if race else frozenset()
            elif n >= len(plan.seeds):
                break
            n = min(n + 1, len(plan.seeds))
        # every tolerance searches its own boundary; a round trains all their next contexts at once
        # an under-trained answer's k* is still what these budgets measured: it is searched too
        ks = {next_k(list(plan.ks), a.k_star, plan.max_k) for a in answers if a.k_star is not None}
        ks.discard(None)
        if not ks or rounds >= most_rounds:
            break
        rounds += 1
        plan = extend(plan, [*plan.ks, *ks])
    return plan, asked, answers, ran, rounds


def _save(store, plan, asked, answers, ran, rounds, *, name: str) -> MemoryOutcome:
    """Store the answer (or a profile's answers) under `name` with the runs they rest on."""
    spared = len(plan.points) - len(asked)
    plan = replace(plan, points=list(asked.values()))
    if not plan.epsilons:
        (answer,) = answers
        answer_id = store.save_answer(name, answer_columns(answer, plan), answer.run_ids)
        return MemoryOutcome(answer, plan, answer_id, ran, rounds, spared=spared, name=name)
    from seqbench.memory.profile import profile_facts

    profile = profile_facts(plan, answers)
    ids = [
        store.save_answer(
            profile_name(name, a.epsilon), answer_columns(a, plan, profile), a.run_ids
        )
        for a in answers
    ]
    return MemoryOutcome(answers[0], plan, ids[0], ran, rounds, answers, ids, profile, spared,
                         name)  # fmt: skip


def race_settled(runs: pd.DataFrame, plan: MemoryPlan, facts: dict) -> frozenset:
    """The cells the race has settled (they get no more seeds): judged by the answer's own
    procedure at ALPHA over the looks the race may take (memory/race.py)."""
    from seqbench.memory.race import settled

    return settled(answers_from(runs, plan, facts, ALPHA / looks(len(plan.seeds))))


def settled_in_store(store, plan: MemoryPlan) -> frozenset:
    """What the race would settle from the runs of `plan` the store has (nothing without
    any): what a dry run leaves out of what is to train."""
    runs = plan_runs(store, plan)
    if runs.empty:  # no run of the plan yet
        return frozenset()
    return race_settled(runs, plan, answer_facts(plan))


def wanted(plan: MemoryPlan, n: int, settled: frozenset = frozenset()) -> list[RunConfig]:
    """The plan's points of its first `n` seeds, those of the cells the race settled left
    out (references are never settled)."""
    first = set(plan.seeds[:n])
    return [c for c in plan.points if c.seed in first and cell_key(plan, c) not in settled]


def _run_points(
    store, plan, points, make_executor, what, on_round, on_result, stale_after, retry_failed
) -> int:
    """Plan `points` as the memory's sweep and run those without a result; the runs trained."""
    from seqbench.sweep import runner

    sweep_id = runner.plan_sweep(store, plan.name, plan.spec(), points, False, True)
    out = runner.run_sweep(
        store,
        sweep_id,
        make_executor,
        stale_after=stale_after,
        retry_failed=retry_failed,
        on_start=lambda total, todo: on_round(what, total, todo),
        on_result=on_result,
    )
    if out.unfinished:
        raise SeqbenchError(
            f"{out.unfinished} of {out.total} run(s) of {plan.name!r} have no result "
            "(failed or crashed): see them with `seqbench runs` and `status` failed; the same "
            "command resumes (`retry_failed` runs failed ones again)"
        )
    return out.ran


def profile_name(name: str, epsilon: float) -> str:
    """The stored name of one tolerance's answer in a profile: NAME@ε."""
    return f"{name}@{epsilon:g}"


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


def plan_facts(plan: MemoryPlan) -> dict:
    """What the answer was asked with: the budget, the families, references and seeds."""
    return {
        "params": plan.params,
        "families": list(plan.families),
        "references": list(plan.references),
        "seeds": list(plan.seeds),
    }


def answer_columns(a: Answer, plan: MemoryPlan, profile: dict | None = None) -> dict:
    d = {**a.to_dict(), **plan_facts(plan)}
    if profile is not None:
        d["profile"] = profile
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


def check_memory_sweep(plan: MemoryPlan, store) -> None:
    """SeqbenchError when the plan's name is a plain sweep's. A memory sweep's name is a rerun:
    the runner replays the race from the grid on the stored runs (it asks for the same points,
    trains none again, and reaches the same answer)."""

    try:
        (sweep,) = store.list_sweeps(plan.name)
    except NotFoundError:
        return
    if not isinstance((sweep.spec or {}).get("memory"), dict):
        raise SeqbenchError(f"sweep {plan.name!r} is not a memory sweep; give another `name`")
