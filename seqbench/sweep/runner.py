"""The sweep driver: plan the grid in the store, recover stale runs, dispatch the points that
still need a result, and write each result back in one transaction.

Resumability: a point is done when any run with its config hash completed (or diverged: that
is a result too). Crash safety: a run row is 'running' with a heartbeat while its point is in
flight; after a crash its heartbeat goes stale (or its driver process is gone) and the next
invocation marks it failed and runs the point again. A result is committed atomically (metrics,
summaries and the final status together), so a point is never half-recorded as completed.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import and_, delete, func, insert, or_, select, update

from seqbench.config import RunConfig
from seqbench.errors import UsageError
from seqbench.store.schema import Metric, Run, Summary, Sweep, SweepPoint, split_float, utcnow
from seqbench.store.store import Store
from seqbench.sweep.spec import canonical

DONE = ("completed", "diverged")
HEARTBEAT_EVERY = 2.0
# A point whose worker died is run again at once, up to this many times in one sweep command
# (a point that kills its worker every time, e.g. by memory, is then left `crashed` for the
# next plain re-run instead of looping).
CRASH_RETRIES = 2


@dataclass
class PointState:
    position: int
    config_hash: str
    config: dict
    status: str  # completed | diverged | running | failed | interrupted | crashed | pending
    run_id: int | None


@dataclass
class SweepOutcome:
    sweep_id: int
    total: int
    skipped: int
    ran: int
    counts: dict[str, int] = field(default_factory=dict)


def _rank(status: str) -> int:
    return {"completed": 5, "diverged": 4, "running": 3, "queued": 3, "interrupted": 1,
            "crashed": 1, "failed": 2}.get(status, 0)  # fmt: skip


def plan_sweep(store: Store, name: str, spec: dict, points: list[RunConfig], force: bool) -> int:
    """Create (or reuse) the sweep row and its points; refuse a reused name with another spec
    unless force. One transaction."""
    spec = canonical(spec)
    with store.Session.begin() as s:
        sweep = s.scalars(select(Sweep).where(Sweep.name == name)).first()
        if sweep is not None and canonical(sweep.spec) != spec:
            if not force:
                raise UsageError(
                    f"sweep {name!r} exists with a different spec; use another --name, "
                    "or --force to replace its spec"
                )
            sweep.spec = spec
            s.execute(delete(SweepPoint).where(SweepPoint.sweep_id == sweep.id))
            sweep_points_missing = True
        elif sweep is None:
            sweep = Sweep(name=name, spec=spec, status="running", created_at=utcnow())
            s.add(sweep)
            s.flush()
            sweep_points_missing = True
        else:
            sweep_points_missing = False
        sweep.status = "running"
        if sweep_points_missing:
            s.execute(insert(SweepPoint), [
                {"sweep_id": sweep.id, "position": i, "config_hash": c.config_hash(),
                 "config": c.to_dict()} for i, c in enumerate(points)])  # fmt: skip
        return sweep.id


def point_states(store: Store, sweep_id: int) -> list[PointState]:
    with store.Session() as s:
        pts = s.execute(
            select(SweepPoint.position, SweepPoint.config_hash, SweepPoint.config)
            .where(SweepPoint.sweep_id == sweep_id)
            .order_by(SweepPoint.position)
        ).all()
        runs = s.execute(
            select(Run.config_hash, Run.status, Run.id)
            .where(
                Run.config_hash.in_(
                    select(SweepPoint.config_hash).where(SweepPoint.sweep_id == sweep_id)
                ),
                Run.kind == "train",
            )
            .order_by(Run.id)
        ).all()
    best: dict[str, tuple[str, int]] = {}
    for h, status, rid in runs:
        if h not in best or _rank(status) >= _rank(best[h][0]):
            best[h] = (status, rid)
    return [PointState(pos, h, cfg, *(best.get(h) or ("pending", None))) for pos, h, cfg in pts]


def _alive(env: dict | None) -> bool:
    if not env or env.get("driver_host") != socket.gethostname():
        return True  # another machine's driver: only its heartbeat can tell
    try:
        os.kill(int(env["driver_pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, ValueError, TypeError):
        return True
    return True


def recover_stale(store: Store, sweep_id: int, stale_after: float) -> list[int]:
    """Mark this sweep's running/queued rows failed when their heartbeat is older than
    stale_after seconds or their driver process on this host is gone; return their ids."""
    cutoff = utcnow() - timedelta(seconds=stale_after)
    hashes = select(SweepPoint.config_hash).where(SweepPoint.sweep_id == sweep_id)
    with store.Session.begin() as s:
        rows = s.execute(
            select(Run.id, Run.heartbeat_at, Run.environment).where(
                Run.config_hash.in_(hashes), Run.status.in_(("running", "queued"))
            )
        ).all()
        stale = [rid for rid, hb, env in rows if hb is None or hb < cutoff or not _alive(env)]
        if stale:
            s.execute(
                update(Run)
                .where(Run.id.in_(stale))
                .values(status="failed", finished_at=utcnow(),
                        error="stale: no heartbeat from its sweep driver (crashed or killed)")
            )  # fmt: skip
    return stale


def write_result(store: Store, run_id: int, record: dict) -> str:
    """Metrics, summaries and the run's final fields in one transaction; returns the status."""
    fields = dict(record["fields"])
    status = fields.get("status", "failed")
    if status == "running":  # the worker stopped without an outcome
        status = "failed"
    keep = ("finished_at", "wall_seconds", "error", "n_params", "checkpoint", "started_at", "tags")
    values = {k: fields[k] for k in keep if k in fields}
    if "config" in fields:
        values["config"] = fields["config"]
    metrics = []
    for key, step, v in record["metrics"]:
        val, kind = split_float(v)
        metrics.append({"run_id": run_id, "key": key, "step": step, "value": val,
                        "value_kind": kind})  # fmt: skip
    summaries = []
    for key, v in record["summaries"].items():
        val, kind = split_float(v)
        summaries.append({"run_id": run_id, "key": key, "value": val, "value_kind": kind})
    with store.Session.begin() as s:
        run = s.get(Run, run_id)
        env = {**(run.environment or {}), **(fields.get("environment") or {})}
        if metrics:
            s.execute(insert(Metric), metrics)
        s.execute(delete(Summary).where(Summary.run_id == run_id))
        if summaries:
            s.execute(insert(Summary), summaries)
        s.execute(update(Run).where(Run.id == run_id).values(
            status=status, environment=env, heartbeat_at=utcnow(),
            finished_at=values.pop("finished_at", utcnow()), **values))  # fmt: skip
    return status


def _fail(store: Store, run_id: int, error: str) -> None:
    store.update_run(run_id, status="failed", finished_at=utcnow(), error=error)


def run_sweep(
    store: Store,
    sweep_id: int,
    executor_factory: Callable[[], object],
    *,
    force: bool = False,
    retry_failed: bool = False,
    stale_after: float = 60.0,
    on_start: Callable[[int, int], None] = lambda total, todo: None,
    on_result: Callable[[str], None] = lambda status: None,
) -> SweepOutcome:
    recover_stale(store, sweep_id, stale_after)
    states = point_states(store, sweep_id)
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
            _dispatch(store, sweep_id, executor, todo, counts, on_result, live, claim)
        except KeyboardInterrupt:  # Ctrl-C: the points in flight re-run first next time
            with store.Session.begin() as s:
                s.execute(update(Run).where(Run.id.in_(sorted(live)))
                          .values(status="interrupted", finished_at=utcnow()))  # fmt: skip
            raise
        finally:
            executor.shutdown()
    final = point_states(store, sweep_id)
    done = all(p.status in DONE for p in final)
    store_status = "completed" if done else "incomplete"
    with store.Session.begin() as s:
        s.execute(update(Sweep).where(Sweep.id == sweep_id).values(status=store_status))
    elsewhere = counts.pop("elsewhere", 0)  # done or running in another driver meanwhile
    ran = len(todo) - elsewhere
    return SweepOutcome(sweep_id, len(states), len(states) - ran, ran, counts)


def _claim(store: Store, sweep_id: int, p: PointState, fields: dict,
           stale_after: float | None) -> int | None:  # fmt: skip
    """Create the point's running row, unless (with `stale_after`) another driver of this
    store finished the point or holds it with a live heartbeat since this driver planned
    its list: two drivers of one sweep then share the points instead of both running each.
    One transaction: BEGIN IMMEDIATE on SQLite; on PostgreSQL the point's row is locked."""
    with store.Session.begin() as s:
        if stale_after is not None:
            s.execute(select(SweepPoint.id).where(SweepPoint.sweep_id == sweep_id,
                                                  SweepPoint.config_hash == p.config_hash)
                      .with_for_update())  # fmt: skip
            live_since = utcnow() - timedelta(seconds=stale_after)
            taken = s.scalar(select(func.count()).select_from(Run).where(
                Run.config_hash == p.config_hash,
                or_(Run.status.in_(DONE),
                    and_(Run.status.in_(("running", "queued")), Run.heartbeat_at >= live_since)),
            ))  # fmt: skip
            if taken:
                return None
        run = Run(config_hash=p.config_hash, sweep_id=sweep_id, **fields)
        s.add(run)
        s.flush()
        return run.id


def _dispatch(store, sweep_id, executor, todo, counts, on_result, live: set[int],
              claim: float | None = None) -> None:  # fmt: skip
    queue = list(todo)
    inflight: dict[object, int] = {}
    point_of: dict[object, PointState] = {}
    crashes: dict[str, int] = {}
    driver = {"driver_host": socket.gethostname(), "driver_pid": os.getpid()}
    last_beat = time.monotonic()
    while queue or inflight:
        while queue and len(inflight) < executor.workers:
            p = queue.pop(0)
            cfg = p.config
            run_id = _claim(store, sweep_id, p, dict(
                kind="train", status="running", model=cfg["model"], task=cfg["task"],
                k=cfg.get("k"), seq_len=cfg.get("seq_len"), seed=cfg.get("seed"), config=cfg,
                environment=driver, tags=cfg.get("tags") or None, started_at=utcnow(),
                heartbeat_at=utcnow(),
            ), claim)  # fmt: skip
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
                store.update_run(run_id, status="crashed", finished_at=utcnow(), error=error)
                live.discard(run_id)
                crashes[p.config_hash] = crashes.get(p.config_hash, 0) + 1
                if crashes[p.config_hash] <= CRASH_RETRIES:
                    queue.insert(0, p)
                    continue
                status = "crashed"
            elif record is None:
                _fail(store, run_id, error or "worker error")
                status = "failed"
            else:
                status = write_result(store, run_id, record)
            store.ensure_present()  # a deleted file takes the writes silently
            live.discard(run_id)
            counts[status] = counts.get(status, 0) + 1
            on_result(status)
        if inflight and time.monotonic() - last_beat >= HEARTBEAT_EVERY:
            with store.Session.begin() as s:
                s.execute(update(Run).where(Run.id.in_(list(inflight.values())))
                          .values(heartbeat_at=utcnow()))  # fmt: skip
            last_beat = time.monotonic()


def sweep_status(store: Store, name: str | None = None) -> list[dict]:
    """Per sweep: total points and how many are done, running, failed or remaining."""
    with store.Session() as s:
        q = select(Sweep).order_by(Sweep.id)
        if name:
            q = q.where(Sweep.name == name)
        sweeps = list(s.scalars(q))
    if name and not sweeps:
        from seqbench.errors import SeqbenchError

        raise SeqbenchError(f"no sweep named {name!r} in {store.display_url}")
    out = []
    for sw in sweeps:
        states = point_states(store, sw.id)
        c = {k: 0 for k in ("completed", "diverged", "running", "failed", "remaining")}
        for p in states:
            if p.status in ("completed", "diverged", "running", "failed"):
                c[p.status] += 1
            elif p.status == "queued":
                c["running"] += 1
            else:
                c["remaining"] += 1
        out.append({"name": sw.name, "status": sw.status, "total": len(states), **c,
                    "created": sw.created_at})  # fmt: skip
    return out
