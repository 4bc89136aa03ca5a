"""The sweep driver: a scheduler over the store's sweep rows (`seqbench.store.sweeps`). It plans
the grid, recovers stale runs, dispatches the points that still need a result to an executor,
keeps their heartbeats, and hands each finished point's record back to the store, which
writes it in one transaction.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from seqbench.config import RunConfig
from seqbench.configure import config_hash, stored_k
from seqbench.errors import UsageError
from seqbench.store.records import PointState
from seqbench.store.store import Store
from seqbench.store.sweeps import DONE
from seqbench.store.values import utcnow
from seqbench.sweep.spec import canonical

HEARTBEAT_EVERY = 2.0
MAX_WORKERS = 4096  # processes at once, or Ray tasks in flight; beyond any machine's cores
# A point whose worker died is run again at once, up to this many times in one sweep command
# (a point that kills its worker every time, e.g. by memory, is then left `crashed` for the
# next plain re-run instead of looping).
CRASH_RETRIES = 2
STREAM_WAIT = 10.0

__all__ = [
    "DONE",
    "PointState",
    "SweepOutcome",
    "await_elsewhere",
    "plan_sweep",
    "run_sweep",
    "sweep_status",
]


@dataclass
class SweepOutcome:
    sweep_id: int
    total: int
    skipped: int
    ran: int
    counts: dict[str, int] = field(default_factory=dict)
    # points left without a result when the command ended (failed, crashed, interrupted,
    # pending), this command's or an earlier one's
    unfinished: int = 0


def plan_sweep(
    store: Store,
    name: str,
    spec: dict,
    points: list[RunConfig],
    force: bool,
    replan: bool = False,
) -> int:
    """Create (or reuse) the sweep row and its points; refuse a reused name with another spec
    unless force or replan (store/sweeps.SweepRows.plan_sweep). One transaction."""
    planned = [(config_hash(c), c.to_dict()) for c in points]
    return store.plan_sweep(name, canonical(spec), planned, force, replan)


MAX_STALE_S = 30 * 86400  # a heartbeat older than 30 days is stale whatever was asked


def check_options(stale_after: float = 60.0, **_: object) -> None:
    if not 0 < stale_after <= MAX_STALE_S:  # nan fails too
        raise UsageError(
            f"`stale_after` must be a number of seconds in (0, {MAX_STALE_S}] (30 days), "
            f"got {stale_after:g}"
        )


def check_flags(executor: str, workers: int | None, runs_per_gpu: int, stale_after: float) -> None:
    """The sweep's own flags, checked before its grid is built (a --dry-run's too)."""
    check_executor(executor)
    check_workers(workers)
    check_gpus(None, runs_per_gpu, 0)
    check_options(stale_after=stale_after)


def runs_on_cuda(device: str) -> bool:
    return device == "cuda" or (device == "auto" and visible_gpus() > 0)


def visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_gpus(gpus: list[int] | None, runs_per_gpu: int, available: int) -> None:
    """One-line errors for a GPU request this machine cannot meet (`available` GPUs)."""
    if not 0 < runs_per_gpu <= MAX_WORKERS:
        raise UsageError(f"`runs_per_gpu` must be in 1..{MAX_WORKERS}, got {runs_per_gpu}")
    if gpus is None:
        return
    if not gpus:
        raise UsageError("`gpus` names no GPU")
    if len(set(gpus)) != len(gpus):
        raise UsageError(f"`gpus` names a GPU twice: {','.join(map(str, gpus))}")
    if available == 0:
        raise UsageError("`gpus`: no CUDA GPU is visible here")
    bad = [g for g in gpus if not 0 <= g < available]
    if bad:
        raise UsageError(
            f"`gpus` {','.join(map(str, gpus))}: this machine has {available} GPU"
            f"{'s' if available != 1 else ''} (0..{available - 1}), not {bad[0]}"
        )


def check_executor(executor: str) -> None:
    if executor not in ("local", "ray"):
        raise UsageError(f"`executor` must be local or ray, got {executor!r}")


def check_workers(workers: int | None) -> None:
    if workers is not None and not 0 < workers <= MAX_WORKERS:
        raise UsageError(f"`workers` must be in 1..{MAX_WORKERS}, got {workers}")


def executor_factory(
    executor: str,
    address: str,
    workers: int | None,
    *,
    gpus: list[int] | None = None,
    runs_per_gpu: int = 1,
    uses_cuda: bool = False,
    available_gpus: int | None = None,
) -> Callable[[], object]:
    """A function that starts the executor (`local` or `ray`); bad options and an unreachable
    Ray cluster fail here, before anything is written. Points that run on CUDA spread over
    `gpus` (default: every visible GPU), `runs_per_gpu` at once on each."""
    check_executor(executor)
    check_workers(workers)
    available = visible_gpus() if available_gpus is None else available_gpus
    check_gpus(gpus, runs_per_gpu, available)
    if executor == "ray":
        if gpus is not None:
            raise UsageError("`gpus` is for the local executor; Ray places GPU points itself")
        from seqbench.sweep.executors import RayExecutor

        ray_exec = RayExecutor(address, workers, runs_per_gpu)
        return lambda: ray_exec
    from seqbench.sweep.executors import LocalExecutor, usable_cpus

    if gpus is None and uses_cuda:
        gpus = list(range(available))
    if gpus:
        if workers is not None:
            raise UsageError("on GPUs, give `runs_per_gpu` (workers per GPU), not `workers`")
        return lambda: LocalExecutor(0, gpus, runs_per_gpu)
    if runs_per_gpu != 1:
        raise UsageError("`runs_per_gpu` needs points that run on CUDA (`device=cuda`)")
    n_workers = workers or usable_cpus()
    return lambda: LocalExecutor(n_workers)


def run_sweep(
    store: Store,
    sweep_id: int,
    executor_factory: Callable[[], object],
    *,
    force: bool = False,
    replan: bool = False,  # used by plan_sweep only: which points are done is the same
    retry_failed: bool = False,
    stale_after: float = 60.0,
    on_start: Callable[[int, int], None] = lambda total, todo: None,
    on_result: Callable[[str], None] = lambda status: None,
) -> SweepOutcome:
    store.recover_stale_points(sweep_id, stale_after)
    states = store.point_states(sweep_id)
    todo = []
    for p in states:
        if force or p.status in ("pending", "interrupted", "crashed"):
            todo.append(p)
        elif p.status == "failed":
            run = store.get_run(p.run_id)
            if retry_failed or (run and (run.error or "").startswith("stale:")):
                todo.append(p)
    counts = {"completed": 0, "diverged": 0, "failed": 0, "crashed": 0}
    on_start(len(states), len(todo))
    if todo:
        executor = executor_factory()
        live: set[int] = set()  # runs created and not yet recorded
        claim = None if force else stale_after  # --force runs every point regardless
        try:
            _dispatch(store, sweep_id, executor, todo, counts, on_result, live, claim, stale_after)
        except KeyboardInterrupt:  # Ctrl-C: the points in flight re-run first next time
            _store_streamed(store, executor)  # what they logged so far is kept
            store.mark_runs(live, "interrupted")
            store.set_sweep_status(sweep_id, "interrupted")  # not "running" in sweep status
            raise
        finally:
            executor.shutdown()
    known = {p.config_hash for p in states}
    final = await_elsewhere(store, sweep_id, known, stale_after)
    done = all(p.status in DONE for p in final)
    store.set_sweep_status(sweep_id, "completed" if done else "incomplete")
    elsewhere = counts.pop("elsewhere", 0)  # done or running in another driver meanwhile
    ran = len(todo) - elsewhere
    # the points this command set out to run: another driver may have added points since (a
    # memory command's search) that are its to run, not this command's failures
    unfinished = sum(p.status not in DONE for p in final if p.config_hash in known)
    return SweepOutcome(sweep_id, len(states), len(states) - ran, ran, counts, unfinished)


def await_elsewhere(
    store: Store, sweep_id: int, known: set[str], stale_after: float, poll: float = 1.0
) -> list[PointState]:
    """The sweep's points once none of `known` is running in another driver: a point another
    command holds is waited for (its result is this command's too), not counted as failed. A
    holder that stops beating its heart is recovered as stale (failed) and ends the wait."""
    while True:
        final = store.point_states(sweep_id)
        if not any(p.status == "running" for p in final if p.config_hash in known):
            return final
        time.sleep(poll)
        store.recover_stale_points(sweep_id, stale_after)


def _dispatch(
    store,
    sweep_id,
    executor,
    todo,
    counts,
    on_result,
    live: set[int],
    claim: float | None = None,
    stale_after: float = 60.0,
) -> None:
    queue = list(todo)
    inflight: dict[object, int] = {}
    point_of: dict[object, PointState] = {}
    crashes: dict[str, int] = {}
    # who keeps the points' heartbeats, and after how long without one they are stale
    driver = {
        "driver_host": socket.gethostname(),
        "driver_pid": os.getpid(),
        "stale_after": stale_after,
    }
    last_beat = time.monotonic()
    ended: set[int] = set()  # points whose streamed metrics have all arrived
    while queue or inflight:
        while queue and len(inflight) < executor.workers:
            p = queue.pop(0)
            cfg = p.config
            fields = dict(
                kind="train",
                status="running",
                model=cfg["model"],
                task=cfg["task"],
                k=stored_k(RunConfig(**cfg)),  # as train() records it
                seq_len=cfg.get("seq_len"),
                seed=cfg.get("seed"),
                config=cfg,
                environment=driver,
                tags=cfg.get("tags") or None,
                started_at=utcnow(),
                heartbeat_at=utcnow(),
            )
            run_id = store.claim_point(sweep_id, p.config_hash, fields, claim)
            if run_id is None:  # done or running elsewhere
                counts["elsewhere"] = counts.get("elsewhere", 0) + 1
                on_result("elsewhere")
                continue
            live.add(run_id)
            handle = executor.submit(run_id, cfg)
            inflight[handle], point_of[handle] = run_id, p
        for handle, record, error, crashed in executor.wait(
            list(inflight), timeout=HEARTBEAT_EVERY
        ):
            run_id, p = inflight.pop(handle), point_of.pop(handle)
            if crashed:  # not the config's fault: run it again on a fresh pool
                store.mark_runs([run_id], "crashed", error)
                live.discard(run_id)
                crashes[p.config_hash] = crashes.get(p.config_hash, 0) + 1
                if crashes[p.config_hash] <= CRASH_RETRIES:
                    queue.insert(0, p)
                    continue
                status = "crashed"
            elif record is None:
                store.mark_runs([run_id], "failed", error or "worker error")
                status = "failed"
            else:
                _await_stream(store, executor, run_id, ended)
                status = store.write_point_result(run_id, record)
            store.ensure_present()  # a deleted file takes the writes silently
            live.discard(run_id)
            counts[status] = counts.get(status, 0) + 1
            on_result(status)
        _store_streamed(store, executor, ended)
        if inflight and time.monotonic() - last_beat >= HEARTBEAT_EVERY:
            store.heartbeat_points(inflight.values())
            last_beat = time.monotonic()


def _store_streamed(store: Store, executor, ended: set[int] | None = None) -> None:
    """Write the metrics the workers logged since the last call (one transaction); add to
    `ended` the points whose worker has sent all of them (its end marker, rows None)."""
    drain = getattr(executor, "drain", None)
    batches = drain() if drain else []
    data = [(run_id, batch) for run_id, batch in batches if batch is not None]
    if data:
        store.log_point_metrics(data)
    if ended is not None:
        ended.update(run_id for run_id, batch in batches if batch is None)


def _await_stream(store: Store, executor, run_id: int, ended: set[int]) -> None:
    """A point's result can overtake its last streamed metrics (another pipe): wait for its
    end marker before the result is written (a few ms; at most STREAM_WAIT seconds)."""
    if not hasattr(executor, "drain"):
        return
    deadline = time.monotonic() + STREAM_WAIT
    while run_id not in ended and time.monotonic() < deadline:
        time.sleep(0.01)
        _store_streamed(store, executor, ended)
    ended.discard(run_id)


def sweep_status(store: Store, name: str | None = None) -> list[dict]:
    """Per sweep: total points and how many are done, running, failed or remaining."""
    return [_summary(sw, store.point_states(sw.id)) for sw in store.list_sweeps(name)]


def sweep_detail(store: Store, name: str) -> tuple[dict, list]:
    """One sweep's summary (as sweep_status gives it) and its points' states, read once."""
    (sw,) = store.list_sweeps(name)  # an unknown name is an error there
    states = store.point_states(sw.id)
    return _summary(sw, states), states


def _summary(sw, states: list) -> dict:
    c = {k: 0 for k in ("completed", "diverged", "running", "failed", "remaining")}
    for p in states:
        c[p.status if p.status in c else "remaining"] += 1
    return {
        "name": sw.name,
        "status": _computed_status(sw.status, c),
        "total": len(states),
        **c,
        "created": sw.created_at,
    }


def _computed_status(stored: str, counts: dict[str, int]) -> str:
    """A sweep's status from its points' rows (a run deleted after the sweep ended makes it
    incomplete again): running while a point is in flight, completed when every point has a
    result, else interrupted (as its last driver said) or incomplete."""
    if counts["running"]:
        return "running"
    if not (counts["failed"] or counts["remaining"]):
        return "completed"
    return "interrupted" if stored == "interrupted" else "incomplete"


def sweep_points(store: Store, name: str) -> tuple[dict, list[dict]]:
    """Sweep `name`'s summary (as sweep_status gives it) and every point in order: position,
    model, task, k, seed, status (completed, diverged, running, failed, interrupted, crashed,
    pending), run_id, and for a point in flight its latest logged metrics ({key: (step,
    value)}), as a running sweep's page shows them. One read of the points."""
    summary, states = sweep_detail(store, name)
    out = []
    for p in states:
        c = p.config or {}
        latest = store.last_metrics(p.run_id) if p.run_id and p.status == "running" else {}
        out.append(
            {
                "position": p.position,
                "model": c.get("model"),
                "task": c.get("task"),
                "k": c.get("k"),
                "seed": c.get("seed"),
                "status": p.status,
                "run_id": p.run_id,
                "latest": latest,
            }
        )
    return summary, out
