"""The library surface: every CLI command is a call here, and everything here works without
the CLI (scripts, notebooks). Library packages never import this module; it imports them.

Importing it costs nothing. A function defined here does work of its own (resolving a config,
opening a store, joining two packages) and imports what it needs when called; every other name
is the library's own function or constant, imported in the `if TYPE_CHECKING:` block below
(where an editor and a type checker find it) and on first use at run time (LAZY, read from that
block; PEP 562): `import seqbench.api` imports nothing of seqbench, and `seqbench --help` no
torch, pandas or SQLAlchemy.

    >>> import seqbench.api as sb
    >>> out = sb.train("indrnn", "adding", seq_len=100, steps=500, db="runs.db")
    >>> sb.open_store("runs.db", "read").summaries(out.run_id)["test_metric"]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

# Every name the api offers as it is (the library's own function or constant, defined once where
# its work lives), as an editor and a type checker see it: LAZY is read from this block, and
# each is imported on first use (PEP 562), so `import seqbench.api` imports nothing of seqbench.
if TYPE_CHECKING:
    from seqbench.bench import bench_kernels
    from seqbench.catalog import (
        ModelInfo,
        TaskInfo,
        data_file,
        default_layers,
        metric_name,
        model_catalog,
        table_fields,
        task_catalog,
        task_metric,
    )
    from seqbench.config import RunConfig
    from seqbench.configure import check_fits, check_shadowed, make_config
    from seqbench.memory import EPSILON as MEMORY_EPSILON
    from seqbench.memory.confirm import confirm_plan as memory_confirm_plan
    from seqbench.memory.confirm import confirmation as memory_confirmation
    from seqbench.memory.kernels import kernel_table as memory_kernels
    from seqbench.memory.plan import make_plan as memory_plan
    from seqbench.memory.plot import plot_answer as plot_memory
    from seqbench.memory.plot import plot_profile as plot_memory_profile
    from seqbench.memory.profile import profile_rows as memory_profile_rows
    from seqbench.memory.words import cell_table as memory_cells
    from seqbench.memory.words import stored_answers as memory_answers
    from seqbench.parsing import (
        flags_and_sets,
        load_toml,
        parse_assignments,
        split_assignment,
        split_list,
    )
    from seqbench.parsing import to_toml as config_toml
    from seqbench.report.baseline_file import export_baseline, import_baseline, resolve_baseline
    from seqbench.report.check import (
        check,
        check_tolerances,
        junit_xml,
        list_baselines,
        save_baseline,
        variant_label,
    )
    from seqbench.report.curves import diff_runs, grouped_curves, plot_curves, plot_grouped
    from seqbench.report.decay import fit_decay
    from seqbench.report.frames import curves_frame, runs_frame
    from seqbench.report.plots import plot_report
    from seqbench.report.rows import comparison_rows, flat_rows, format_cell, leaderboard_rows
    from seqbench.report.statuses import CHECK_STATUSES
    from seqbench.report.tables import build_report
    from seqbench.runs import (
        archive_runs,
        count_runs,
        curve_runs,
        delete_runs,
        list_runs,
        name_run,
        run_config,
        run_details,
        tag_runs,
    )
    from seqbench.store.database import upgrade_store
    from seqbench.store.engine import integrity_problems as check_store
    from seqbench.store.failures import describe_database_error
    from seqbench.store.migrate import history as schema_history
    from seqbench.store.names import RUN_KINDS, RUN_STATUSES, check_label, check_run_name
    from seqbench.store.opening import open_store
    from seqbench.store.query import DEFAULT_MAX_BYTES, coerce_param, run_query
    from seqbench.store.roles import reader_role, reader_role_effects_left, reader_role_limits_left
    from seqbench.store.store import Store
    from seqbench.store.values import float_text
    from seqbench.stress.runner import plot_stress, stress
    from seqbench.stress.views import stored_curves as stored_stress_curves
    from seqbench.stress.views import stress_figure, stress_rows
    from seqbench.sweep.cost import probe_cost as sweep_cost
    from seqbench.sweep.runner import SweepOutcome, check_workers, sweep_points, sweep_status
    from seqbench.sweep.runner import check_flags as check_sweep_flags
    from seqbench.sweep.spec import SweepPlan, parse_range, sweep_grid
    from seqbench.sweep.spec import plan as sweep_plan
    from seqbench.tasks import is_file_task
    from seqbench.tasks.reading import reading_progress as table_progress
    from seqbench.training.checkpoint import load_checkpoint
    from seqbench.training.loop import TrainOutcome
    from seqbench.training.progress import Progress
    from seqbench.training.threads import check_threads


# -- stores ------------------------------------------------------------------------------------
def store_is_current(db: str | None) -> bool:
    """True when `db` is a SQLite store at the current schema, checked with the standard
    library alone (the lean path of the read commands); False means: open it to find out."""

    from seqbench.store.sqlite_file import readable_sqlite

    return readable_sqlite(db) is not None


def store_revision(store: Store) -> tuple[str | None, str]:
    """(the store's schema revision, this seqbench's head revision)."""
    from seqbench.store import migrate

    return store.revision(), migrate.head_revision()


# -- train ---------------------------------------------------------------------------------------
def train(
    model: str | None = None,
    task: str | None = None,
    *,
    db: str | Store | None = None,
    config_file: str | None = None,
    from_run: str | None = None,
    progress: Progress | None = None,
    name: str | None = None,
    threads: int | None = None,
    **overrides: Any,
) -> TrainOutcome:
    """Train one run and record it in the store; returns a TrainOutcome (run id, status,
    summaries, resolved config). Overrides are RunConfig fields, over `config_file`, over the
    config of a stored run (`from_run`: an id, name or uuid prefix in `db`); `name` labels the
    run; `threads` sets torch's CPU threads (default: seqbench's choice, training/threads.py).

    Example: ``seqbench.train("indrnn", "adding", seq_len=100, steps=500, db="runs.db")``

    Example: ``seqbench.train(from_run="12", lr=5e-4, db="runs.db")``
    """
    from seqbench.store.opening import open_store
    from seqbench.store.store import Store

    store = None
    if from_run is not None:  # otherwise nothing is opened until the config is sound
        store = db if isinstance(db, Store) else open_store(db, "read")
    try:
        cfg = train_config_from(
            model, task, overrides=overrides, config_file=config_file, from_run=from_run,
            store=store,
        )  # fmt: skip
    finally:
        if store is not None and store is not db:
            store.dispose()
    return train_config(cfg, db=db, progress=progress, name=name, threads=threads)


def train_config_from(
    model: str | None = None,
    task: str | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    config_file: str | None = None,
    from_run: str | None = None,
    store: Store | None = None,
    tags: dict[str, str] | None = None,
) -> RunConfig:
    """The config `seqbench train` runs, resolved: `overrides` (RunConfig fields) over a TOML
    `config_file` over the config of a stored run (`from_run`, read from `store`), later
    wins; model and task default to the run's and must match it when given; `tags` are added
    to the config's."""
    from dataclasses import replace

    from seqbench.configure import check_shadowed, make_config
    from seqbench.errors import UsageError
    from seqbench.parsing import load_toml

    overrides = dict(overrides or {})
    if "tags" in overrides:
        raise UsageError("use `tag` key=value for tags")
    if from_run is not None:
        from seqbench.runs import run_config

        base = run_config(store, from_run)
        for what, given, stored in (("model", model, base.model), ("task", task, base.task)):
            if given is not None and given != stored:
                raise UsageError(f"`from_run` trained {what} {stored!r}, not {given!r}")
        model, task = base.model, base.task
        from_file = load_toml(config_file) if config_file else {}
        if config_file:
            check_shadowed(model, task, from_file, overrides, config_file)
        checked = set(from_file) | set(overrides)  # the stored fields are what they were
        overrides = {**base.overrides(), **from_file, **overrides}
        config_file = None
    else:
        checked = None
    if model is None or task is None:
        raise UsageError("give `model` and `task` (or `from_run` RUN)")
    cfg = make_config(model, task, overrides, config_file, checked=checked)
    if tags:
        cfg = replace(cfg, tags={**cfg.tags, **tags})
    return cfg


def train_config(
    cfg: RunConfig,
    *,
    db: str | Store | Callable[[], Store] | None = None,
    progress: Progress | None = None,
    name: str | None = None,
    threads: int | None = None,
) -> TrainOutcome:
    """Train a resolved config (make_config) and record it in the store at `db` (a path, a
    URL, an open Store, or a function that opens one: called only once the config has built
    its task and model), with an optional run `name` and torch `threads`."""
    from seqbench.configure import check_fits
    from seqbench.store.names import check_run_name
    from seqbench.training.threads import check_threads

    name = check_run_name(name)
    check_threads(threads)
    check_fits(cfg)  # before a store is opened or torch imported
    from seqbench.store.opening import open_store
    from seqbench.store.store import Store
    from seqbench.training.loop import train as train_loop

    opened: list[Store] = []

    def open_it() -> Store:  # once the task is made and the model built: bad input leaves
        opened.append(open_store(db))  # no store file behind (a width no budget reaches)
        return opened[-1]

    try:
        where = db if isinstance(db, Store) or callable(db) else open_it
        return train_loop(cfg, where, progress=progress, name=name, threads=threads)
    finally:
        for store in opened:
            store.dispose()


# -- sweep ---------------------------------------------------------------------------------------
def run_sweep(
    store: Store | Callable[[], Store],
    plan: SweepPlan,
    *,
    executor: str = "local",
    address: str = "auto",
    workers: int | None = None,
    gpus: list[int] | None = None,
    runs_per_gpu: int = 1,
    **options: Any,
) -> SweepOutcome:
    """Run (or resume) a planned sweep on a local process pool or a Ray cluster (`address`):
    points done before are skipped; each result is written as it arrives. Points on CUDA use
    `gpus` (default: every visible GPU), `runs_per_gpu` at once on each. `options` are
    seqbench.sweep.runner.run_sweep's (force, replan, retry_failed, stale_after, on_start,
    on_result).
    `store` may be a function that opens it, called once the options are checked and the
    executor is up."""
    from seqbench.sweep import runner

    runner.check_options(**options)
    uses_cuda = any(runner.runs_on_cuda(p.device) for p in plan.points)
    make_executor = runner.executor_factory(
        executor, address, workers, gpus=gpus, runs_per_gpu=runs_per_gpu, uses_cuda=uses_cuda
    )
    store = store() if callable(store) else store
    force, replan = options.get("force", False), options.get("replan", False)
    sweep_id = runner.plan_sweep(store, plan.name, plan.spec, plan.points, force, replan)
    return runner.run_sweep(store, sweep_id, make_executor, **options)


# -- memory: the answer --------------------------------------------------------------------------
def memory_cost(db: str | None, plan, workers: int | None = None, race: bool = True) -> dict:
    """What `memory --dry-run` shows: the first round's runs (how many the store at `db`
    already has; a store not made yet has none), the most the search can add, the training
    steps, and an estimate of the time: from the store's earlier runs of the same models and
    task, else from a short timing probe of each model here, shared among `workers`
    (memory/cost.memory_cost). The command is first replayed on the stored runs, training
    nothing (memory/runner.dry_replay): where they take it to the end, the cost is nothing
    ("complete": True, "runs": the runs the answer rests on); where it stops in a search
    round, that round's runs and the rounds after it are what is counted. With `race`, cells
    the store's runs already settle in the race are not counted to train."""
    from seqbench.memory.cost import memory_cost as cost
    from seqbench.memory.plan import cell_key
    from seqbench.memory.runner import dry_replay, settled_in_store
    from seqbench.store.database import store_exists
    from seqbench.store.opening import open_store

    if not store_exists(db):
        return cost(None, plan, workers)
    store = open_store(db, "lean")
    try:
        stop = dry_replay(store, plan, race)
        if stop.complete:
            return {"name": plan.name, "complete": True, "runs": stop.asked,
                    "done": stop.asked, "to_train": 0, "search_at_most": 0, "steps": 0,
                    "seconds": 0.0, "how": "store", "round": stop.rounds}  # fmt: skip
        if stop.rounds > 0:  # every seed of each cell this round lacks
            cells = {cell_key(stop.plan, c) for c in stop.missing}
            points = [c for c in stop.plan.points if cell_key(stop.plan, c) in cells]
            return cost(store, plan, workers, bisecting=(stop.rounds, points))
        settled = settled_in_store(store, plan) if race else frozenset()
        return cost(store, plan, workers, settled)
    finally:
        store.dispose()


def run_memory(
    store: Store | Callable[[], Store],
    plan,
    *,
    executor: str = "local",
    address: str = "auto",
    workers: int | None = None,
    **options: Any,
):
    """Run (or resume) a memory plan: train what the store lacks, search for the boundary on
    integer k, derive the answer and store it with the runs it rests on. `options`: on_round,
    on_result, stale_after, retry_failed. Returns a seqbench.memory.runner.MemoryOutcome."""
    from seqbench.memory import runner
    from seqbench.sweep import runner as sweeps

    sweeps.check_options(**{k: v for k, v in options.items() if k == "stale_after"})
    uses_cuda = any(sweeps.runs_on_cuda(p.device) for p in plan.points)
    make_executor = sweeps.executor_factory(executor, address, workers, uses_cuda=uses_cuda)
    store = store() if callable(store) else store
    runner.check_memory_sweep(plan, store)
    return runner.run_memory(store, plan, make_executor, **options)


# -- the library's own, offered as it is ---------------------------------------------------------
def _offered() -> dict[str, str]:
    """The names of the `if TYPE_CHECKING:` block above, read from this file: name ->
    "module:attribute" (one list, which editors and type checkers read too)."""
    import ast

    with open(__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    )
    return {a.asname or a.name: f"{i.module}:{a.name}" for i in block.body for a in i.names}


LAZY: dict[str, str] = _offered()

__all__ = sorted(
    ["memory_cost", "run_memory", "run_sweep", "store_is_current", "store_revision", "train",
     "train_config", "train_config_from", *LAZY]
)  # fmt: skip


def __getattr__(name: str) -> Any:
    where = LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'seqbench.api' has no attribute {name!r}")
    module, attr = where.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later lookups find it without this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
