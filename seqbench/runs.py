"""The stored runs as a user handles them: listed and counted with the CLI's filters (a file
task's every kind, several sweeps at once), selected by id, name or uuid prefix, named, tagged,
archived and deleted, and a training run's config resolved again for `train --from-run`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from seqbench.config import RunConfig
from seqbench.configure import stored_config
from seqbench.errors import UnknownNameError, UsageError
from seqbench.store.names import RUN_KINDS, RUN_STATUSES

if TYPE_CHECKING:
    from seqbench.store.store import Store


def run_config(store: Store, ref: str) -> RunConfig:
    """The config a stored training run was trained with, resolved again by this seqbench (a
    field the run predates takes today's default). Steps derived from epochs are re-derived."""
    run = store.require_run(ref)
    if run.kind != "train":
        raise UsageError(f"run {run.id} is a {run.kind} run; `from_run` takes a training run")

    return stored_config(run.model, run.task, run.config)


def list_runs(
    store: Store | Callable[[], Store], *, limit: int | None = 50, **filters: Any
) -> list[tuple[Any, float | None]]:
    """(run, its test_metric or None) newest first; filters: model, task, status, sweep (the
    runs of its points, as `report --sweep` reads them), kind. An unknown status or kind is an
    error naming the known ones (checked before `store`, if it is a function, opens it)."""

    for what, known in (("status", RUN_STATUSES), ("kind", RUN_KINDS)):
        if filters.get(what) is not None and filters[what] not in known:
            raise UnknownNameError(what, filters[what], list(known))
    if limit is not None and limit < 0:
        raise UsageError(f"`limit` must be ≥ 0 (0: all), got {limit}")
    store = store() if callable(store) else store
    runs = store.list_runs(limit=limit or None, **_named(filters))
    metric = store.summary_values([r.id for r in runs], "test_metric")
    return [(r, metric.get(r.id)) for r in runs]


def curve_runs(store: Store, refs: list[str], **filters: Any) -> list:
    """The runs to draw: those named (ids or uuid prefixes, each must exist), else those the
    filters select (model, task, sweep, status), oldest first."""
    if refs:
        return _resolve_runs(store, refs)
    if not any(filters.values()):
        raise UsageError("name runs (seqbench curves 3 4) or select them (`sweep`, `model`)")
    return store.list_runs(limit=None, oldest_first=True, kind="train", **_named(filters))


def _named(filters: dict[str, Any]) -> dict[str, Any]:
    """Run filters as the store takes them: `--task file` is every file task, `--sweep a,b`
    the runs of both sweeps' points."""
    from seqbench.report.frames import sweep_names, task_names

    out = dict(filters)
    if out.get("task"):
        out["task"] = task_names([out["task"]]) if isinstance(out["task"], str) else out["task"]
    if out.get("sweep"):
        out["sweep"] = sweep_names(out["sweep"])
    return out


def _resolve_runs(store: Store, refs: list[str]) -> list:
    if not refs:
        raise UsageError("name at least one run (an id, a name or a uuid prefix)")
    return [store.require_run(ref) for ref in refs]


def delete_runs(store: Store, refs: list[str]) -> list[int]:
    """Delete runs (ids, names or uuid prefixes) with their metrics, summaries and curves,
    all or none; the store refuses a run still `running` (Store.delete_runs)."""
    ids = sorted({r.id for r in _resolve_runs(store, refs)})
    store.delete_runs(ids)
    return ids


def tag_runs(
    store: Store, refs: list[str], add: dict[str, str] | None = None, remove: list[str] = ()
) -> list[int]:
    """Add (or change) tags and remove tag keys on runs after the fact."""
    ids = sorted({r.id for r in _resolve_runs(store, refs)})
    store.retag_runs(ids, {str(k): str(v) for k, v in (add or {}).items()}, remove)
    return ids


def name_run(store: Store, ref: str, name: str | None) -> int:
    """Name a run (an id, name or uuid prefix); None takes its name away."""
    run = store.require_run(ref)
    store.name_run(run.id, name)
    return run.id


def archive_runs(store: Store, refs: list[str], archived: bool = True) -> list[int]:
    """Archive runs (hidden from runs, report, check and baseline save; nothing is deleted)
    or restore them; the store refuses to archive a running run (Store.archive_runs)."""
    ids = sorted({r.id for r in _resolve_runs(store, refs)})
    store.archive_runs(ids, archived)
    return ids


def count_runs(store: Store, **filters: Any) -> int:
    """How many runs match the filters of list_runs."""
    return store.count_runs(**_named(filters))


def run_details(store: Store, ref: str) -> tuple[Any, dict[str, float], dict]:
    """(run, its summaries, the last (step, value) of each metric) for a run id or uuid
    prefix; an unknown run is an error."""
    run = store.require_run(ref)
    return run, store.summaries(run.id), store.last_metrics(run.id)
