"""The results store as a writer (Store: a ReadStore that also writes runs, their metrics,
curves and summaries, sweeps, names and tags, and marks dead runs crashed). Opening a database
as one, created at head when brand-new, is database.py's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import sessionmaker

from seqbench.errors import StoreError, UsageError
from seqbench.store import baselines
from seqbench.store.engine import (
    _make_engine,
    inspect_revision,
    sqlite_path,
)
from seqbench.store.liveness import stale_reason
from seqbench.store.names import check_run_name
from seqbench.store.results import ReadStore
from seqbench.store.schema import (
    AnswerRow,
    AnswerRun,
    Curve,
    Metric,
    Run,
    Summary,
)
from seqbench.store.sweeps import SweepRows
from seqbench.store.values import metric_rows, split_float, utcnow


class Store(ReadStore, SweepRows):
    """A handle on one results database: the one way into it. Its reads are ReadStore's
    (store/results.py, store/records.py: results, runs, sweeps, baselines, answers), SQL over
    one read-only connection a thread; a sweep's writes are SweepRows' (store/sweeps.py); the
    other writes, and the rows a write of its own needs, are here.
    Cheap to create; share one per process. `readonly=True`: for the commands that only
    read; nothing it does changes the database."""

    def __init__(self, url: str, readonly: bool = False):
        super().__init__(url)
        self.readonly = readonly
        self.engine = _make_engine(url, readonly)
        self._file_id = self._identity()
        self.Session = sessionmaker(self.engine, expire_on_commit=False)

    def revision(self) -> str | None:
        """The store's schema revision, read without writing."""
        return inspect_revision(self.url)[0]

    def dispose(self) -> None:
        self.close()  # the read connection
        self.engine.dispose()
        if self.readonly:  # a writer's connection removed the WAL as it closed
            self._tidy()

    def _identity(self) -> tuple[int, int] | None:
        """(device, inode) of the SQLite file, None for other backends or no file yet."""
        path = sqlite_path(self.url)
        try:
            st = path.stat() if path is not None else None
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if st else None

    def ensure_present(self) -> None:
        """Raise StoreError if the SQLite file was deleted or replaced since it was opened: an
        open connection goes on writing into the unlinked file, and every result is lost."""
        if self._file_id is None:
            self._file_id = self._identity()
            return
        if self._identity() != self._file_id:
            raise StoreError(
                f"the store file {sqlite_path(self.url)} was deleted or replaced while seqbench "
                "was writing to it: the results since then are lost; run the command again"
            )

    # -- runs --------------------------------------------------------------------------------
    def create_run(self, **fields: Any) -> Run:
        """Write a run row (a name, if given, checked: names.check_run_name)."""
        check_run_name(fields.get("name"))
        with self.Session.begin() as s:
            run = Run(**fields)
            s.add(run)
        return run

    def update_run(self, run_id: int, **fields: Any) -> None:
        with self.Session.begin() as s:
            s.execute(update(Run).where(Run.id == run_id).values(**fields))

    def heartbeat(self, run_id: int) -> None:
        self.update_run(run_id, heartbeat_at=utcnow())

    def stale_runs(self) -> list[tuple[int, str, str]]:
        """(id, the status it ends with, why) for each `running` run that nothing runs any more:
        its process on this host is gone (kill -9, the OOM killer), or its heartbeat is older
        than its stale limit (another host's process, or a hung one). Read-only."""
        now = utcnow()
        cols = (Run.id, Run.sweep_id, Run.heartbeat_at, Run.started_at, Run.created_at)
        q = select(*cols, Run.environment).where(Run.status == "running")
        with self.Session() as s:
            rows = s.execute(q).all()
        out = []
        for rid, sweep_id, beat, started, created, env in rows:
            why = stale_reason(env, beat or started or created, now)
            if why:
                # a sweep's point is failed (stale), as its sweep's own recovery has it
                out.append((rid, "failed" if sweep_id is not None else "crashed", why))
        return out

    def reap_stale(self) -> list[int]:
        """Mark the stale runs (`stale_runs`) crashed (a sweep's point: failed, stale), each
        only if still running; returns their ids. A read-only handle writes through a short
        writer connection when it can, else leaves them for the next command that writes."""
        stale = self.stale_runs()
        if not stale:
            return []
        target = self
        if self.readonly:
            try:
                target = Store(self.url)
            except Exception:  # a file this user may not write: nothing to do here
                return []
        try:
            with target.Session.begin() as s:
                for rid, status, why in stale:
                    s.execute(
                        update(Run)
                        .where(Run.id == rid, Run.status == "running")
                        .values(status=status, finished_at=utcnow(), error=why)
                    )
        except OperationalError:
            if not self.readonly:
                raise
            return []
        finally:
            if target is not self:
                target.dispose()
        return [rid for rid, _, _ in stale]

    def delete_runs(self, run_ids: list[int]) -> int:
        """Delete runs with their metrics, summaries and curves, in one transaction (nothing is
        left orphaned, whether or not the backend enforces its foreign keys). A run still
        `running` is refused, and nothing is deleted: its process would go on writing to it."""
        ids = sorted(set(run_ids))
        with self.Session.begin() as s:
            live = s.scalars(select(Run.id).where(Run.id.in_(ids), Run.status == "running"))
            live = sorted(live)
            if live:
                raise UsageError(
                    f"run {live[0]} is running: stop it first (a run whose process died is "
                    "marked crashed by the next seqbench command)"
                )
            for table in (Metric, Summary, Curve, AnswerRun):
                s.execute(delete(table).where(table.run_id.in_(ids)))
            return s.execute(delete(Run).where(Run.id.in_(ids))).rowcount

    def save_answer(self, name: str, values: Mapping[str, Any], run_ids: list[int]) -> int:
        """Write `seqbench memory`'s answer `name` (replacing the one it had) with the runs it
        rests on, in one transaction; `values` are the answers table's columns. Returns its
        id."""
        ids = sorted(set(int(r) for r in run_ids))
        with self.Session.begin() as s:
            old = s.scalars(select(AnswerRow.id).where(AnswerRow.name == name)).all()
            if old:
                s.execute(delete(AnswerRun).where(AnswerRun.answer_id.in_(old)))
                s.execute(delete(AnswerRow).where(AnswerRow.id.in_(old)))
            row = AnswerRow(name=name, created_at=utcnow(), n_runs=len(ids), **values)
            s.add(row)
            s.flush()
            if ids:
                s.execute(insert(AnswerRun), [{"answer_id": row.id, "run_id": r} for r in ids])
            return row.id

    def retag_runs(
        self, run_ids: list[int], add: Mapping[str, str], remove: Iterable[str] = ()
    ) -> None:
        """Set the tags in `add` and drop the keys in `remove` on each run, in one
        transaction."""
        remove = set(remove)
        with self.Session.begin() as s:
            for run in s.scalars(select(Run).where(Run.id.in_(sorted(set(run_ids))))):
                tags = {k: v for k, v in (run.tags or {}).items() if k not in remove}
                tags.update(add)
                run.tags = tags or None

    def name_run(self, run_id: int, name: str | None) -> None:
        """Give a run a name (None: take it away); a name is checked (names.check_run_name:
        never one that reads as an id or a uuid prefix). Names need not be unique."""
        self.update_run(run_id, name=check_run_name(name))

    def archive_runs(self, run_ids: list[int], archived: bool = True) -> None:
        """Archive runs (out of lists, reports, checks and baselines, every row kept) or, with
        archived=False, restore them; one transaction. A running run cannot be archived."""
        with self.Session.begin() as s:
            ids = sorted(set(run_ids))
            live = sorted(s.scalars(select(Run.id).where(Run.id.in_(ids), Run.status == "running")))
            if archived and live:
                raise UsageError(f"run {live[0]} is running: archive it once it has finished")
            s.execute(
                update(Run)
                .where(Run.id.in_(sorted(set(run_ids))))
                .values(archived_at=utcnow() if archived else None)
            )

    # -- values ------------------------------------------------------------------------------
    def log_metrics(self, run_id: int, rows: Iterable[tuple[str, int, float]]) -> int:
        """Write (key, step, value) rows in one transaction; non-finite values keep their kind."""
        payload = metric_rows(run_id, rows)
        if payload:
            with self.Session.begin() as s:
                s.execute(insert(Metric), payload)
        return len(payload)

    def set_summaries(self, run_id: int, values: Mapping[str, float]) -> None:
        """Replace the given summary keys of a run (one row per (run, key))."""
        if not values:
            return
        payload = summary_rows(run_id, values)
        with self.Session.begin() as s:
            s.execute(
                delete(Summary).where(Summary.run_id == run_id, Summary.key.in_(list(values)))
            )
            s.execute(insert(Summary), payload)

    def write_run(
        self,
        run_id: int | None,
        fields: Mapping[str, Any],
        *,
        metrics: Iterable[tuple[str, int, float]] = (),
        summaries: Mapping[str, float] | None = None,
        curves: Mapping[str, tuple[Iterable[float], Iterable[float]]] | None = None,
    ) -> int:
        """A run's fields (creating the run when run_id is None), metrics, summaries (their
        keys replaced) and curves in one transaction: a Ctrl-C or SIGTERM leaves all of it or
        none of it. Returns the run id."""
        with self.Session.begin() as s:
            if run_id is None:
                run = Run(**fields)
                s.add(run)
                s.flush()
                run_id = run.id
            elif fields:
                s.execute(update(Run).where(Run.id == run_id).values(**fields))
            rows = metric_rows(run_id, metrics)
            if rows:
                s.execute(insert(Metric), rows)
            rows = summary_rows(run_id, summaries or {})
            if rows:
                keys = [r["key"] for r in rows]
                s.execute(delete(Summary).where(Summary.run_id == run_id, Summary.key.in_(keys)))
                s.execute(insert(Summary), rows)
            for kind, (xs, ys) in (curves or {}).items():
                s.execute(insert(Curve), _curve_rows(run_id, kind, xs, ys))
        return run_id

    # -- baselines ---------------------------------------------------------------------------
    def write_baseline(self, name: str, points: Iterable[Mapping[str, Any]]) -> None:
        """Replace baseline `name` with `points` (dicts of baselines.POINT_FIELDS), in one
        transaction."""
        baselines.write(self.Session, name, points)

    def recorder(self):
        """A RunRecorder writing one run to this store."""
        from seqbench.store.recorder import StoreRecorder

        return StoreRecorder(self)


def summary_rows(run_id: int, values: Mapping[str, float]) -> list[dict]:
    out = []
    for key, value in values.items():
        v, kind = split_float(value)
        out.append({"run_id": run_id, "key": key, "value": v, "value_kind": kind})
    return out


def _curve_rows(run_id: int, kind: str, xs: Iterable[float], ys: Iterable[float]) -> list[dict]:
    rows = []
    for x, y in zip(xs, ys, strict=True):
        v, vk = split_float(y)
        rows.append({"run_id": run_id, "kind": kind, "x": float(x), "value": v, "value_kind": vk})
    return rows
