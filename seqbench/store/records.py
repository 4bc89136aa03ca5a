"""The reads of runs and sweeps, as methods of ReadStore (which is a Records): a run as the
reads give it (RunRecord: the runs table's row, decoded) listed, counted, found by id, name or
uuid prefix, flattened for a frame; a sweep's row (SweepRecord) and its points' states. One
condition selects runs by what the CLI filters on (RunSelect: model, task, status, kind,
sweep, tags, archived). SQL through the store's read connection (results.ReadStore.query),
standard library only: the lean read path imports no SQLAlchemy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from seqbench.errors import NotFoundError, SeqbenchError, UsageError
from seqbench.store.query import API_LIMITS
from seqbench.store.values import decode_json


@dataclass(frozen=True)
class RunRecord:
    """One row of `runs` (schema.Run's columns, in its order): config as a dict, environment
    and tags as dicts or None, times as naive UTC datetimes, whichever database held them."""

    id: int
    uuid: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    status: str
    kind: str
    model: str
    task: str
    k: int | None
    seq_len: int | None
    seed: int | None
    config: dict[str, Any]
    config_hash: str
    sweep_id: int | None
    environment: dict[str, Any] | None
    error: str | None
    heartbeat_at: datetime | None
    wall_seconds: float | None
    n_params: int | None
    tags: dict[str, Any] | None
    checkpoint: str | None
    name: str | None
    archived_at: datetime | None


RUN_COLUMNS = tuple(f.name for f in fields(RunRecord))
_TIMES = {f.name for f in fields(RunRecord) if "datetime" in str(f.type)}
_MAYBE_JSON = {"environment", "tags"}


def _time(value: Any) -> datetime | None:
    """A DateTime column's value: SQLite keeps ISO text, PostgreSQL's driver a datetime."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def run_record(row: Sequence[Any]) -> RunRecord:
    """A RunRecord from a row of RUN_COLUMNS, as either backend returns it."""
    values = dict(zip(RUN_COLUMNS, row, strict=True))
    for name in _TIMES:
        values[name] = _time(values[name])
    values["config"] = decode_json(values["config"])
    for name in _MAYBE_JSON:
        if values[name] is not None:
            values[name] = decode_json(values[name])
    return RunRecord(**values)


@dataclass(frozen=True)
class SweepRecord:
    """One row of `sweeps`: its spec as a dict, created_at a naive UTC datetime."""

    id: int
    name: str
    spec: dict[str, Any]
    created_at: datetime
    status: str


@dataclass
class PointState:
    """A sweep's point with the run that speaks for it."""

    position: int
    config_hash: str
    config: dict
    status: str  # completed | diverged | running | failed | interrupted | crashed | pending
    run_id: int | None


# Which run of a point speaks for it when several share its config hash.
_RANK = {"completed": 5, "diverged": 4, "running": 3, "failed": 2, "interrupted": 1, "crashed": 1}

SWEEP_POINTS = (
    "r.config_hash IN (SELECT sp.config_hash FROM sweep_points sp "
    "JOIN sweeps s2 ON s2.id = sp.sweep_id WHERE s2.name IN ({names}))"
)


@dataclass(frozen=True)
class RunSelect:
    """Which runs a read of runs selects. model, task, status, kind: one value or any of
    several; sweep: the runs of a sweep's points (several sweeps': a list), whichever sweep or
    plain train produced them, as `report --sweep` reads them; tags: each key at its value;
    archived: False leaves archived runs out, True gives only them, None both."""

    model: str | Sequence[str] | None = None
    task: str | Sequence[str] | None = None
    status: str | Sequence[str] | None = None
    kind: str | Sequence[str] | None = None
    sweep: str | Sequence[str] | None = None
    tags: Mapping[str, str] | None = None
    archived: bool | None = False

    def where(self, tag_equals) -> tuple[str, dict[str, Any]]:
        """(`WHERE …` over `runs AS r`, its parameters); `tag_equals`: the backend's
        condition on a tag (dialect.Dialect.tag_equals)."""
        sql = ["WHERE 1 = 1"]
        params: dict[str, Any] = {}
        if self.archived is not None:
            sql.append(f"AND r.archived_at IS {'NOT ' if self.archived else ''}NULL")
        for column in ("model", "task", "status", "kind"):
            value = getattr(self, column)
            if value:
                names, more = in_list(column, [value] if isinstance(value, str) else value)
                sql.append(f"AND r.{column} IN ({names})")
                params.update(more)
        if self.sweep:
            cond, more = sweep_points(self.sweep)
            sql.append(f"AND {cond}")
            params.update(more)
        for i, (key, value) in enumerate((self.tags or {}).items()):
            cond, more = tag_equals(str(key), str(value), f"tag{i}")
            sql.append(f"AND {cond}")
            params.update(more)
        return "\n".join(sql), params


def sweep_points(sweep: str | Sequence[str]) -> tuple[str, dict]:
    """The condition selecting the runs of one sweep's points, or of several sweeps'."""
    names, params = in_list("sw", [sweep] if isinstance(sweep, str) else list(sweep))
    return SWEEP_POINTS.format(names=names), params


def in_list(prefix: str, values: Sequence[Any]) -> tuple[str, dict]:
    """(`:p0, :p1, …`, their parameters) for an IN list."""
    keys = [f"{prefix}{i}" for i in range(len(values))]
    return ", ".join(f":{k}" for k in keys), dict(zip(keys, values, strict=True))


class Records:
    """The reads of runs and sweeps (ReadStore's; module docstring)."""

    def list_runs(
        self, *, limit: int | None = 50, oldest_first: bool = False, **filters: Any
    ) -> list[RunRecord]:
        """The runs `filters` select (records.RunSelect's: model, task, status, kind, sweep,
        tags, archived), newest first (oldest first if asked), at most `limit` (None: all)."""
        where, params = self._where(filters)
        sql = f"SELECT {', '.join(f'r.{c}' for c in RUN_COLUMNS)} FROM runs r\n{where}"
        sql += f"\nORDER BY r.id {'ASC' if oldest_first else 'DESC'}"
        if limit and limit < 2**63:  # a larger limit is no limit
            sql += "\nLIMIT :limit"
            params["limit"] = limit
        return [run_record(row) for row in self.query(sql, params, **API_LIMITS)[1]]

    def count_runs(self, **filters: Any) -> int:
        """How many runs list_runs would give with the same filters and no limit."""
        where, params = self._where(filters)
        return int(self.query(f"SELECT COUNT(*) FROM runs r\n{where}", params)[1][0][0])

    def get_run(self, run_id: int | str) -> RunRecord | None:
        """A run by id, by name, or by a uuid prefix, whichever names exactly one run (a name
        or prefix that matches several is an error naming the runs it matches)."""
        cols = ", ".join(f"r.{c}" for c in RUN_COLUMNS)
        if isinstance(run_id, str) and not (run_id.isascii() and run_id.isdecimal()):
            for what, cond in (
                ("name", "r.name = :ref"),
                ("uuid prefix", "substr(r.uuid, 1, length(:ref)) = :ref"),
            ):
                sql = f"SELECT {cols} FROM runs r WHERE {cond} ORDER BY r.id LIMIT 5"
                found = [run_record(row) for row in self.query(sql, {"ref": run_id})[1]]
                if len(found) > 1:
                    ids = ", ".join(str(r.id) for r in found[:4])
                    raise UsageError(
                        f"{what} {run_id!r} matches several runs ({ids}"
                        f"{', ...' if len(found) > 4 else ''}): give the id"
                    )
                if found:
                    return found[0]
            return None
        rid = int(run_id)
        if not 0 < rid < 2**63:  # no row has such an id
            return None
        rows = self.query(f"SELECT {cols} FROM runs r WHERE r.id = :id", {"id": rid})[1]
        return run_record(rows[0]) if rows else None

    def require_run(self, run_id: int | str) -> RunRecord:
        """get_run, with an unknown run an error naming the store."""
        run = self.get_run(run_id)
        if run is None:
            raise SeqbenchError(f"no run {run_id!r} in {self.display_url}")
        return run

    @property
    def display_url(self) -> str:
        """The store's path, or its URL with the password hidden."""
        if "://" not in self.url:
            return self.url
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)

    def run_rows(self, **filters: Any) -> tuple[list[str], list[tuple]]:
        """The columns of every run `filters` select (as list_runs'), oldest first, as a frame
        wants them: run_id for id, each run's sweep by name, config and tags as dicts."""
        where, params = self._where(filters)
        sql = [
            "SELECT r.id AS run_id, r.uuid, r.name, r.kind, r.status, r.model, r.task, r.k,",
            "  r.seq_len, r.seed, sw.name AS sweep, r.created_at, r.started_at, r.finished_at,",
            "  r.wall_seconds, r.n_params, r.config_hash, r.config, r.tags, r.error,",
            "  r.archived_at",
            "FROM runs r LEFT JOIN sweeps sw ON sw.id = r.sweep_id",
            where,
            "ORDER BY r.id",
        ]
        cols, rows = self.query("\n".join(sql), params, **API_LIMITS)
        at = [cols.index(c) for c in ("config", "tags")]
        decoded = []
        for row in rows:
            row = list(row)
            for i in at:
                row[i] = decode_json(row[i])
            decoded.append(tuple(row))
        return cols, decoded

    def _where(self, filters: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return RunSelect(**filters).where(self._dialect().tag_equals)

    # -- sweeps ---------------------------------------------------------------------------------
    def list_sweeps(self, name: str | None = None) -> list[SweepRecord]:
        """Every sweep (or the one named; an unknown name is an error), oldest first."""
        if name:
            sweep = self.get_sweep(name)
            if sweep is None:
                raise NotFoundError(f"no sweep named {name!r} in {self.display_url}")
            return [sweep]
        return self._sweeps("", {})

    def get_sweep(self, name: str) -> SweepRecord | None:
        """The sweep named `name`, or None."""
        found = self._sweeps("WHERE name = :name", {"name": name})
        return found[0] if found else None

    def _sweeps(self, where: str, params: dict[str, Any]) -> list[SweepRecord]:
        sql = f"SELECT id, name, spec, created_at, status FROM sweeps {where} ORDER BY id"
        rows = self.query(sql, params, **API_LIMITS)[1]
        return [SweepRecord(i, n, decode_json(spec), _time(at), st) for i, n, spec, at, st in rows]

    def point_states(self, sweep_id: int) -> list[PointState]:
        """Every point of the sweep with the run that speaks for it (the best status)."""
        points = self.query(
            "SELECT position, config_hash, config FROM sweep_points WHERE sweep_id = :s "
            "ORDER BY position",
            {"s": sweep_id},
            **API_LIMITS,
        )[1]
        runs = self.query(
            "SELECT config_hash, status, id FROM runs WHERE kind = 'train' AND config_hash IN "
            "(SELECT config_hash FROM sweep_points WHERE sweep_id = :s) ORDER BY id",
            {"s": sweep_id},
            **API_LIMITS,
        )[1]
        best: dict[str, tuple[str, int]] = {}
        for h, status, rid in runs:
            if h not in best or _RANK.get(status, 0) >= _RANK.get(best[h][0], 0):
                best[h] = (status, rid)
        return [
            PointState(pos, h, decode_json(cfg), *(best.get(h) or ("pending", None)))
            for pos, h, cfg in points
        ]
