"""A sweep's writes: its plan (one row per point), the claim of a point by a driver,
heartbeats, stale-run recovery, and a point's result written in one transaction. The
scheduling around them (which point runs where, retries) is `seqbench.sweep.runner`'s.

Resumability: a point is done when any run with its config hash completed (or diverged: that
is a result too). Crash safety: a run row is 'running' with a heartbeat while its point is in
flight; after a crash its heartbeat goes stale (or its driver process is gone) and the next
invocation marks it failed and runs the point again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update

from seqbench.errors import UsageError
from seqbench.store.liveness import stale_reason
from seqbench.store.schema import Metric, Run, Sweep, SweepPoint
from seqbench.store.values import metric_rows, utcnow

DONE = ("completed", "diverged")
LIVE = ("running",)  # a point in flight, whose driver sends heartbeats


def _point_hashes(sweep_id: int):
    return select(SweepPoint.config_hash).where(SweepPoint.sweep_id == sweep_id)


# the run fields a worker's record may set (the rest were fixed when the point was claimed)
RESULT_FIELDS = (
    "finished_at",
    "wall_seconds",
    "error",
    "n_params",
    "checkpoint",
    "started_at",
    "config",
)  # not tags: the claim set the config's, and `runs tag` during the run must survive its end


class SweepRows:
    """A sweep's writes, as methods of the Store (which is a SweepRows): the sweep driver's
    (seqbench.sweep.runner) plan, claims, heartbeats, recovery and results. Its reads (the
    sweeps, their points' states) are records.Records'."""

    def plan_sweep(
        self,
        name: str,
        spec: dict,
        points: list[tuple[str, dict]],
        force: bool,
        replan: bool = False,
    ) -> int:
        """Create (or reuse) sweep `name` with its points, (config hash, config) in order; refuse
        a reused name with another spec unless `force` or `replan` (take the new spec: a preset
        that a newer seqbench extended; the points it shares with the old spec keep their runs).
        A reused spec whose points now resolve to other hashes gets the new points (its old runs
        stay in the store). `spec` is canonical JSON (as stored). One transaction; returns the
        sweep id."""
        with self.Session.begin() as s:
            sweep = s.scalars(select(Sweep).where(Sweep.name == name)).first()
            write_points = True
            if sweep is None:
                sweep = Sweep(name=name, spec=spec, status="running", created_at=utcnow())
                s.add(sweep)
                s.flush()
            elif sweep.spec != spec:
                if not (force or replan):
                    raise UsageError(
                        f"sweep {name!r} exists with a different spec; use another `name`, "
                        "`replan` to take the new spec (points done keep their runs), or `force` "
                        "to replace it and re-run every point"
                    )
                sweep.spec = spec
                s.execute(delete(SweepPoint).where(SweepPoint.sweep_id == sweep.id))
            else:
                # the same spec may resolve to other configs now (a plugin upgraded, a data file
                # changed, a rule of seqbench's own): the points are what it resolves to today,
                # so that their runs are of the code and data that will run
                stored = s.scalars(
                    select(SweepPoint.config_hash)
                    .where(SweepPoint.sweep_id == sweep.id)
                    .order_by(SweepPoint.position)
                ).all()
                write_points = list(stored) != [h for h, _ in points]
                if write_points:
                    s.execute(delete(SweepPoint).where(SweepPoint.sweep_id == sweep.id))
            sweep.status = "running"
            if write_points:
                rows = [
                    {"sweep_id": sweep.id, "position": i, "config_hash": h, "config": c}
                    for i, (h, c) in enumerate(points)
                ]
                s.execute(insert(SweepPoint), rows)
            return sweep.id

    def recover_stale_points(self, sweep_id: int, stale_after: float) -> list[int]:
        """Mark this sweep's running rows failed when their heartbeat is older than stale_after
        seconds or their driver process on this host is gone (liveness.stale_reason, with this
        invocation's limit); return their ids."""
        now = utcnow()
        with self.Session.begin() as s:
            rows = s.execute(
                select(Run.id, Run.heartbeat_at, Run.environment).where(
                    Run.config_hash.in_(_point_hashes(sweep_id)), Run.status.in_(LIVE)
                )
            ).all()
            stale = [
                rid
                for rid, hb, env in rows
                if stale_reason({**(env or {}), "stale_after": stale_after}, hb, now)
            ]
            if stale:
                error = "stale: no heartbeat from its sweep driver (crashed or killed)"
                s.execute(
                    update(Run)
                    .where(Run.id.in_(stale))
                    .values(status="failed", finished_at=utcnow(), error=error)
                )
        return stale

    def claim_point(
        self,
        sweep_id: int,
        config_hash: str,
        fields: Mapping[str, Any],
        stale_after: float | None,
    ) -> int | None:
        """Create the point's running row and return its id, unless (with `stale_after`) another
        driver of this store finished the point or holds it with a live heartbeat since this
        driver planned its list: two drivers of one sweep then share the points instead of both
        running each. One transaction: BEGIN IMMEDIATE on SQLite; on PostgreSQL the point's row
        is locked."""
        with self.Session.begin() as s:
            if stale_after is not None:
                # every sweep's point of this config (two sweeps of one grid under different
                # names share its run): the lock serializes their claims on PostgreSQL, as BEGIN
                # IMMEDIATE does on SQLite; in id order, so two claims never deadlock
                points = (
                    select(SweepPoint.id)
                    .where(SweepPoint.config_hash == config_hash)
                    .order_by(SweepPoint.id)
                )
                s.execute(points.with_for_update())
                live_since = utcnow() - timedelta(seconds=stale_after)
                held = and_(Run.status.in_(LIVE), Run.heartbeat_at >= live_since)
                taken = s.scalar(
                    select(func.count())
                    .select_from(Run)
                    .where(Run.config_hash == config_hash, or_(Run.status.in_(DONE), held))
                )
                if taken:
                    return None
            run = Run(config_hash=config_hash, sweep_id=sweep_id, **fields)
            s.add(run)
            s.flush()
            return run.id

    def heartbeat_points(self, run_ids: Iterable[int]) -> None:
        with self.Session.begin() as s:
            s.execute(update(Run).where(Run.id.in_(list(run_ids))).values(heartbeat_at=utcnow()))

    def mark_runs(self, run_ids: Iterable[int], status: str, error: str | None = None) -> None:
        """End runs with `status` (interrupted after Ctrl-C, crashed, failed)."""
        values = {"status": status, "finished_at": utcnow()}
        if error is not None:
            values["error"] = error
        with self.Session.begin() as s:
            s.execute(update(Run).where(Run.id.in_(sorted(run_ids))).values(**values))

    def write_point_result(self, run_id: int, record: Mapping[str, Any]) -> str:
        """A worker's record (fields, metrics, summaries) on the point's claimed run: through
        Store.write_run, the one transaction that finishes any run (metrics, summaries with their
        keys replaced, and the run's final fields), so a point is never half-recorded. Returns
        the status."""
        fields = dict(record["fields"])
        status = fields.get("status", "failed")
        if status == "running":  # the worker stopped without an outcome
            status = "failed"
        values = {k: fields[k] for k in RESULT_FIELDS if k in fields}
        values.setdefault("finished_at", utcnow())
        with self.Session() as s:  # the driver's fields (host, pid) kept, the worker's added
            env = {**(s.get(Run, run_id).environment or {}), **(fields.get("environment") or {})}
        final = {"status": status, "environment": env, "heartbeat_at": utcnow(), **values}
        self.write_run(run_id, final, metrics=record["metrics"], summaries=record["summaries"])
        return status

    def log_point_metrics(self, batches: Iterable[tuple[int, Iterable]]) -> None:
        """Metric rows streamed from the workers, (run id, [(key, step, value), ...]) per batch,
        in one transaction."""
        payload = [row for run_id, batch in batches for row in metric_rows(run_id, batch)]
        if payload:
            with self.Session.begin() as s:
                s.execute(insert(Metric), payload)

    def set_sweep_status(self, sweep_id: int, status: str) -> None:
        with self.Session.begin() as s:
            s.execute(update(Sweep).where(Sweep.id == sweep_id).values(status=status))
