"""What an answer costs before it is asked: the first round's runs, those the store already
has, the most the search may add, the steps to train and the seconds that would take (`memory
--dry-run`, and the line a memory command says first)."""

from __future__ import annotations

import itertools

from seqbench.config import RunConfig
from seqbench.memory import search_rounds
from seqbench.memory.plan import MemoryPlan, cell_key
from seqbench.sweep.cost import probe_cost


def memory_cost(
    store,
    plan: MemoryPlan,
    workers: int | None = None,
    settled: frozenset = frozenset(),
    bisecting: tuple[int, list[RunConfig]] | None = None,
) -> dict:
    """The first round's runs, those the store already has, the most the search may add,
    the steps to train, and the seconds that would take: at the pace of this store's earlier
    runs of each model on the task (serial seconds, `how` "store"), else from a timing probe
    of each model and context on this machine divided among `workers` (default: one per
    usable core, as a sweep runs them; `how` "probe"). `settled`: the (model, k) cells the
    store's runs already settle in the race (memory/race.py), whose missing runs it would
    not train; the rest is the most the
    race trains (it may spare more). `bisecting`: the store has the whole first round and the
    replay (memory/runner.dry_replay) stopped in this search round, whose points these are
    (every seed of each cell it lacks): they are what is to train, and the rounds after it
    what the search may add."""
    import statistics

    from seqbench.configure import config_hash

    models = sorted({c.model for c in plan.points})
    history = store.trained(plan.task, models) if store is not None else []
    done = {h for _m, h, _s, _secs, _steps in history}
    pace: dict[str, list[float]] = {}
    for m, _h, _s, secs, steps in history:
        if secs and steps:
            pace.setdefault(m, []).append(secs / steps)

    def spared(c: RunConfig) -> bool:
        return cell_key(plan, c) in settled

    widest = max((b - a for a, b in itertools.pairwise(plan.ks)), default=1)
    rounds = search_rounds(widest)  # to narrow it to one step
    if bisecting is None:
        missing = [c for c in plan.points if config_hash(c) not in done]
        todo = [c for c in missing if not spared(c)]
        asked = len(plan.points) - (len(missing) - len(todo))
    else:  # the grid is in the store: this round's points, and the rounds after it
        now, points = bisecting
        todo = [c for c in points if config_hash(c) not in done]
        asked = len(points)
        rounds = max(rounds - now, 0)
    search = rounds * len(plan.families) * len(plan.seeds) * len(plan.tolerances)
    steps = sum(c.steps or 0 for c in todo)
    cap = sum(c.max_steps or c.steps or 0 for c in todo)  # --steps auto: trains on to this
    if all(c.model in pace for c in todo):
        how = "store"
        seconds = sum((c.steps or 0) * statistics.median(pace[c.model]) for c in todo)
    else:
        how = "probe"
        seconds = probe_cost(todo, workers)
    return {
        "name": plan.name,
        "runs": asked,
        "done": asked - len(todo),
        "to_train": len(todo),
        "search_at_most": search,
        "round": 0 if bisecting is None else bisecting[0],
        "steps": steps,
        "steps_cap": cap,
        "seconds": seconds,
        "how": how,
    }
