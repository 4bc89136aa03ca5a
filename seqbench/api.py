"""The library surface: every CLI command is a call here, and everything here works without
the CLI (scripts, notebooks). Library packages never import this module; it imports them.

Importing it costs nothing. A function defined here does work of its own (resolving a config,
opening a store, joining two packages) and imports what it needs when called; every other name
is the library's own function or constant, named in LAZY and imported on first use (PEP 562):
`import seqbench.api` imports nothing of seqbench, and `seqbench --help` no torch, pandas or
SQLAlchemy.

    >>> import seqbench.api as sb
    >>> out = sb.train("indrnn", "adding", seq_len=100, steps=500, db="runs.db")
    >>> sb.open_store("runs.db", "read").summaries(out.run_id)["test_metric"]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seqbench.config import RunConfig
    from seqbench.store.store import Store
    from seqbench.sweep.runner import SweepOutcome
    from seqbench.sweep.spec import SweepPlan
    from seqbench.training.loop import TrainOutcome
    from seqbench.training.progress import Progress


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
        raise UsageError("use --tag key=value for tags")
    if from_run is not None:
        from seqbench.runs import run_config

        base = run_config(store, from_run)
        for what, given, stored in (("model", model, base.model), ("task", task, base.task)):
            if given is not None and given != stored:
                raise UsageError(f"--from-run trained {what} {stored!r}, not {given!r}")
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
        raise UsageError("give --model and --task (or --from-run RUN)")
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
    (memory/plan.memory_cost). The command is first replayed on the stored runs, training
    nothing (memory/runner.dry_replay): where they take it to the end, the cost is nothing
    ("complete": True, "runs": the runs the answer rests on); where it stops in a search
    round, that round's runs and the rounds after it are what is counted. With `race`, cells
    the store's runs already settle in the race are not counted to train."""
    from seqbench.memory.plan import cell_key
    from seqbench.memory.plan import memory_cost as cost
    from seqbench.memory.runner import dry_replay, settled_in_store
    from seqbench.store.opening import open_store
    from seqbench.store.store import store_exists

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


# -- the library's own, named here, imported when called ---------------------------------------
# Each is the function (or constant) itself, defined once where its work lives (its signature and
# defaults there, nowhere else), imported on first use so that `import seqbench.api` imports
# nothing of seqbench. The reads over a store take a path as well (store/opening.reads).
# Name: "module:attribute".
LAZY: dict[str, str] = {
    "RunConfig": "seqbench.config:RunConfig",
    "make_config": "seqbench.configure:make_config",
    "check_fits": "seqbench.configure:check_fits",
    "check_shadowed": "seqbench.configure:check_shadowed",
    "config_toml": "seqbench.parsing:to_toml",
    "flags_and_sets": "seqbench.parsing:flags_and_sets",
    "load_toml": "seqbench.parsing:load_toml",
    "parse_assignments": "seqbench.parsing:parse_assignments",
    "split_assignment": "seqbench.parsing:split_assignment",
    "split_list": "seqbench.parsing:split_list",
    "parse_range": "seqbench.sweep.spec:parse_range",
    "SweepPlan": "seqbench.sweep.spec:SweepPlan",
    "open_store": "seqbench.store.opening:open_store",
    "RUN_KINDS": "seqbench.store.names:RUN_KINDS",
    "RUN_STATUSES": "seqbench.store.names:RUN_STATUSES",
    "check_label": "seqbench.store.names:check_label",
    "check_run_name": "seqbench.store.names:check_run_name",
    "describe_database_error": "seqbench.store.failures:describe_database_error",
    "float_text": "seqbench.store.values:float_text",
    "DEFAULT_MAX_BYTES": "seqbench.store.query:DEFAULT_MAX_BYTES",
    "coerce_param": "seqbench.store.query:coerce_param",
    "run_query": "seqbench.store.query:run_query",
    "CHECK_STATUSES": "seqbench.report.statuses:CHECK_STATUSES",
    "MEMORY_EPSILON": "seqbench.memory:EPSILON",
    "memory_plan": "seqbench.memory.plan:make_plan",
    "memory_answers": "seqbench.memory.words:stored_answers",
    "is_file_task": "seqbench.tasks:is_file_task",
    "Progress": "seqbench.training.progress:Progress",
    "check_threads": "seqbench.training.threads:check_threads",
    "sweep_grid": "seqbench.sweep.spec:sweep_grid",
    "sweep_points": "seqbench.sweep.runner:sweep_points",
    "run_config": "seqbench.runs:run_config",
    "list_runs": "seqbench.runs:list_runs",
    "curve_runs": "seqbench.runs:curve_runs",
    "delete_runs": "seqbench.runs:delete_runs",
    "tag_runs": "seqbench.runs:tag_runs",
    "name_run": "seqbench.runs:name_run",
    "archive_runs": "seqbench.runs:archive_runs",
    "count_runs": "seqbench.runs:count_runs",
    "run_details": "seqbench.runs:run_details",
    "reader_role": "seqbench.store.roles:reader_role",
    "reader_role_limits_left": "seqbench.store.roles:reader_role_limits_left",
    "reader_role_effects_left": "seqbench.store.roles:reader_role_effects_left",
    "ModelInfo": "seqbench.catalog:ModelInfo",
    "TaskInfo": "seqbench.catalog:TaskInfo",
    "model_catalog": "seqbench.catalog:model_catalog",
    "task_catalog": "seqbench.catalog:task_catalog",
    "default_layers": "seqbench.catalog:default_layers",
    "data_file": "seqbench.catalog:data_file",
    "table_fields": "seqbench.catalog:table_fields",
    "metric_name": "seqbench.catalog:metric_name",
    "task_metric": "seqbench.catalog:task_metric",
    "schema_history": "seqbench.store.migrate:history",
    "check_store": "seqbench.store.engine:integrity_problems",
    "sweep_plan": "seqbench.sweep.spec:plan",
    "sweep_status": "seqbench.sweep.runner:sweep_status",
    "check_workers": "seqbench.sweep.runner:check_workers",
    "check_sweep_flags": "seqbench.sweep.runner:check_flags",
    "sweep_cost": "seqbench.sweep.cost:probe_cost",
    "memory_cells": "seqbench.memory.words:cell_table",
    "memory_confirm_plan": "seqbench.memory.confirm:confirm_plan",
    "memory_confirmation": "seqbench.memory.confirm:confirmation",
    "plot_memory": "seqbench.memory.plot:plot_answer",
    "plot_memory_profile": "seqbench.memory.plot:plot_profile",
    "memory_profile_rows": "seqbench.memory.profile:profile_rows",
    "memory_kernels": "seqbench.memory.kernels:kernel_table",
    "upgrade_store": "seqbench.store.store:upgrade_store",
    "load_checkpoint": "seqbench.training.loop:load_checkpoint",
    "bench_kernels": "seqbench.bench:bench_kernels",
    "stress": "seqbench.stress.runner:stress",
    "plot_stress": "seqbench.stress.runner:plot_stress",
    "stress_figure": "seqbench.stress.views:stress_figure",
    "stress_rows": "seqbench.stress.views:stress_rows",
    "stored_stress_curves": "seqbench.stress.views:stored_curves",
    "runs_frame": "seqbench.report.frames:runs_frame",
    "curves_frame": "seqbench.report.frames:curves_frame",
    "diff_runs": "seqbench.report.curves:diff_runs",
    "plot_curves": "seqbench.report.curves:plot_curves",
    "grouped_curves": "seqbench.report.curves:grouped_curves",
    "plot_grouped": "seqbench.report.curves:plot_grouped",
    "build_report": "seqbench.report.tables:build_report",
    "comparison_rows": "seqbench.report.tables:comparison_rows",
    "leaderboard_rows": "seqbench.report.tables:leaderboard_rows",
    "flat_rows": "seqbench.report.tables:flat_rows",
    "format_cell": "seqbench.report.tables:format_cell",
    "plot_report": "seqbench.report.plots:plot_report",
    "fit_decay": "seqbench.report.decay:fit_decay",
    "save_baseline": "seqbench.report.check:save_baseline",
    "export_baseline": "seqbench.report.check:export_baseline",
    "import_baseline": "seqbench.report.check:import_baseline",
    "list_baselines": "seqbench.report.check:list_baselines",
    "resolve_baseline": "seqbench.report.check:resolve_baseline",
    "check": "seqbench.report.check:check",
    "check_tolerances": "seqbench.report.check:check_tolerances",
    "table_progress": "seqbench.tasks.reading:reading_progress",
    "junit_xml": "seqbench.report.check:junit_xml",
    "variant_label": "seqbench.report.check:variant_label",
}

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
