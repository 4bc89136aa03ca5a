"""Run a memory plan: the k-sweep as a seqbench sweep (resumable; points done before, in any
sweep, are reused), a search on integer k (down from the gap's top, then bisecting) until
the boundary is exact, and the answer
stored with the runs it rests on."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pandas as pd

from seqbench.errors import SeqbenchError
from seqbench.memory import k_grid, search_rounds, whole_descent
from seqbench.memory.answer import shown_within_ks
from seqbench.memory.plan import MemoryPlan, cell_key, next_ks, with_points
from seqbench.memory.race import RACE_SEEDS, looks
from seqbench.memory.reading import answer_facts, answers_from, plan_runs
from seqbench.memory.result import Answer
from seqbench.memory.stats import ALPHA

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
    # a safety bound, in rounds: the widest gap's search, and a round for each context of a
    # gap its descent covers whole (tried whatever k* is, next_ks: their fixed sequence
    # rests on each being tried once the one above it is within, even after a long search)
    grid = k_grid(plan.max_k)
    most_rounds = max((search_rounds(b - a) for a, b in itertools.pairwise(grid)), default=0)
    most_rounds += sum(whole_descent(k, plan.max_k) for k in range(1, plan.max_k))
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
        ks = set().union(*(next_ks(list(plan.ks), a.k_star, shown_within_ks(a.cells), plan.max_k)
                           for a in answers if a.k_star is not None))  # fmt: skip
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
    sweep = store.get_sweep(plan.name)
    if sweep is not None and not isinstance((sweep.spec or {}).get("memory"), dict):
        raise SeqbenchError(f"sweep {plan.name!r} is not a memory sweep; give another `name`")
