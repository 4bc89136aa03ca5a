"""The store's reads: what reports, checks, baseline lists, the dashboard and a run's own
page read, as methods of ReadStore (`Store`, store.py, is a ReadStore that also writes; runs
and sweeps are read by its Records part, records.py). One row per training run with one
summary value, filtered by task, model, status, sweep and a user's condition on the v_results
view; the metrics, summaries and curves of one run or many; the baselines and answers saved.

Every statement goes through the read-only query runner (`store/query.py`), so a --where
cannot write, and every other value is a bound parameter: the one read path. It runs on the
store's read connection, one a thread, kept between statements: a SQLite store at head is
opened read-only once (store/opening.open_store, "lean": the standard library alone, no
SQLAlchemy), a PostgreSQL store's connection on its first statement (pg_query.run_postgres).

Reads `summaries` (one row per run and key) joined to `runs`, never the metric history, so a
report over 10,000 runs costs one indexed query. Values come back decoded: floats with their
inf and nan restored (schema.py's value/value_kind pairs), JSON columns as dicts, whichever
database held them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seqbench.errors import UsageError
from seqbench.store.query import API_LIMITS, Reader, run_query
from seqbench.store.records import Records, in_list, sweep_points
from seqbench.store.sqlite_file import plain_sqlite_path, tidy_wal
from seqbench.store.values import decode_json, join_float


@dataclass(frozen=True)
class RunFilter:
    """Which training runs a results read selects (never an archived one).

    tasks, models: their names (None: every one); sweep: the runs of a sweep's points,
    whichever sweep (or plain train) produced them (a list: several sweeps'); where: one SQL
    condition on v_results' columns and on the config fields in `fields` ({name: int, float,
    bool or text}) that it names and v_results lacks, read from each run's config; statuses:
    the runs'; without_metric: runs that lack the summary too (a failed run), which a report
    counts."""

    tasks: Sequence[str] | None = None
    models: Sequence[str] | None = None
    sweep: str | Sequence[str] | None = None
    where: str | None = None
    statuses: tuple[str, ...] = ("completed",)
    without_metric: bool = False
    fields: Mapping[str, str] | None = None


class ReadStore(Records):
    """The reads of one results database. `url`: its path or URL. A ReadStore of its own
    (open_store(db, "lean")) holds one read-only connection; close it (or use it as a context).

    Safe to share between threads (the dashboard's request threads): each thread reads over
    a connection of its own, opened on its first read and kept for the thread's id (so their
    number is bounded by the threads alive at once), behind the same walls; `release()` closes
    the calling thread's, `close()` every one."""

    readonly = True
    _view_columns: set[str] | None = None  # v_results' columns, read once

    def __init__(self, url: str, reader: Reader | None = None):
        self.url = url
        self._lock = threading.Lock()
        self._readers: dict[int, Reader] = {}
        if reader is not None:
            self._readers[threading.get_ident()] = reader

    def _target(self) -> Reader:
        """What run_query reads through: the calling thread's read-only connection (a SQLite
        store at head, opened on its first use), or the store's checked URL."""
        me = threading.get_ident()
        with self._lock:
            reader = self._readers.get(me)
        if reader is None:
            reader = Reader(self.url, checked=True)  # an open store was checked
            with self._lock:
                self._readers[me] = reader
        return reader

    def release(self) -> None:
        """Close the calling thread's read connection, if it has one (a server's request
        thread, done with its request)."""
        with self._lock:
            reader = self._readers.pop(threading.get_ident(), None)
        if reader is not None:
            reader.close()

    def close(self) -> None:
        """Close the read connections (a Store's dispose does too)."""
        with self._lock:
            readers, self._readers = list(self._readers.values()), {}
        for reader in readers:
            reader.close()

    def dispose(self) -> None:
        """Close everything this store holds (a Store: its engine too), and tidy the empty
        -wal and -shm files its read-only connections leave (sqlite_file.tidy_wal)."""
        self.close()
        self._tidy()

    def _tidy(self) -> None:
        tidy_wal(plain_sqlite_path(self.url))

    def __enter__(self) -> ReadStore:
        return self

    def __exit__(self, *exc) -> None:
        self.dispose()

    def query(self, sql: str, params: dict[str, Any] | None = None, **limits: Any):
        """A user's SQL statement, read-only (store/query.run_query's walls and limits):
        (column names, rows)."""
        return run_query(self._target(), sql, params, **limits)

    # -- results ------------------------------------------------------------------------------
    def result_rows(
        self, metric: str, select: RunFilter = RunFilter()
    ) -> tuple[list[str], list[tuple]]:
        """(columns, rows) of the training runs `select` chooses, with summary `metric`:
        run_id, model, task, k, seq_len, seed, sweep, status, config (a dict), config_hash,
        value (a float, inf and nan restored; nan without one) and has_value (False only for
        a run `select.without_metric` brings)."""
        join = "LEFT JOIN" if select.without_metric else "JOIN"
        sql = [
            "SELECT r.id AS run_id, r.model, r.task, r.k, r.seq_len, r.seed, sw.name AS sweep,",
            "  r.status, r.config, r.config_hash, s.value, s.value_kind",
            f"FROM runs r {join} summaries s ON s.run_id = r.id AND s.key = :metric",
            "LEFT JOIN sweeps sw ON sw.id = r.sweep_id",
            "WHERE r.kind = 'train' AND r.archived_at IS NULL",
        ]
        names, params = in_list("st", list(select.statuses))
        params["metric"] = metric
        sql.append(f"AND r.status IN ({names})")
        for name, values in (("task", select.tasks), ("model", select.models)):
            if values:
                names, more = in_list(name, values)
                params.update(more)
                sql.append(f"AND r.{name} IN ({names})")
        if select.sweep:
            cond, more = sweep_points(select.sweep)
            sql.append(f"AND {cond}")
            params.update(more)
        if where := select.where:
            if ";" in where:
                raise UsageError("`where` takes one SQL condition, without ';'")
            sql.append(f"AND r.id IN (SELECT run_id FROM {self._where_view(where, select.fields)} "
                       f"WHERE {where})")  # fmt: skip
        cols, rows = self.query("\n".join(sql), params)
        out = []
        for *head, config, config_hash, value, kind in rows:
            has = kind is not None
            value = join_float(value, kind) if has else math.nan
            out.append((*head, decode_json(config), config_hash, value, has))
        return [*cols[:-1], "has_value"], out  # value_kind read into value and has_value

    def _where_view(self, where: str, fields: dict[str, str] | None) -> str:
        """v_results, or a derived table of it with the config fields that `where` names as
        columns (those v_results has are its own)."""
        import re

        named = {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", where)}
        if self._view_columns is None:
            self._view_columns = set(self.query("SELECT * FROM v_results WHERE 1 = 0")[0])
        extra = sorted(n for n in (fields or {}) if n in named and n not in self._view_columns)
        if not extra:
            return "v_results"
        dialect = self._dialect()
        cols = [f"{dialect.config_field(n, fields[n])} AS {n}" for n in extra if n.isidentifier()]
        return f"(SELECT v.*, {', '.join(cols)} FROM v_results v JOIN runs r ON r.id = v.run_id) w"

    def task_directions(self, tasks: list[str]) -> dict[str, bool]:
        """Whether higher is better for each of `tasks`, as their runs stored it (the summary
        higher_is_better, which runs of plugin tasks carry); tasks without it are left out."""
        names, params = in_list("t", tasks)
        _cols, rows = self.query(
            "SELECT r.task, MAX(s.value) FROM runs r JOIN summaries s ON s.run_id = r.id "
            f"AND s.key = 'higher_is_better' WHERE r.task IN ({names}) GROUP BY r.task",
            params,
        )
        return {t: bool(v) for t, v in rows if v is not None}

    def summary_keys(self) -> list[str]:
        """Every summary key the store's training runs have (for a helpful unknown-metric
        error)."""
        _cols, rows = self.query(
            "SELECT DISTINCT s.key FROM summaries s JOIN runs r ON r.id = s.run_id "
            "WHERE r.kind = 'train' ORDER BY 1",
        )
        return [r[0] for r in rows]

    def _dialect(self):
        from seqbench.store.dialect import dialect_of

        return dialect_of(str(self.url))

    def values_of_runs(
        self, table: str, run_ids: list[int], keys: list[str] | None = None
    ) -> list[tuple]:
        """Rows of `summaries` (run_id, key, value) or `metrics` (run_id, key, step, value)
        for the given runs (and keys), in run, key and step order; values decoded (inf, nan
        kept)."""
        if table not in ("summaries", "metrics") or not run_ids:
            return []
        step = "step, " if table == "metrics" else ""
        rows: list[tuple] = []
        for start in range(0, len(run_ids), 500):  # well below SQLite's bound-parameter limit
            ids, params = in_list("r", run_ids[start : start + 500])
            sql = f"SELECT run_id, key, {step}value, value_kind FROM {table} "
            sql += f"WHERE run_id IN ({ids})"
            if keys:
                names, more = in_list("k", keys)
                sql += f" AND key IN ({names})"
                params.update(more)
            order = "run_id, key, step, id" if table == "metrics" else "run_id, key"
            got = self.query(f"{sql} ORDER BY {order}", params, **API_LIMITS)[1]
            rows += [(*head, join_float(v, vk)) for *head, v, vk in got]
        return rows

    def metrics(self, run_id: int, key: str | None = None) -> list[tuple[str, int, float]]:
        """(key, step, value) of a run's metric history (one key's, given one), in key and step
        order."""
        return [row[1:] for row in self.values_of_runs("metrics", [run_id], [key] if key else None)]

    def last_metrics(self, run_id: int) -> dict[str, tuple[int, float]]:
        """The last (step, value) of every metric key of a run."""
        return {key: (step, value) for key, step, value in self.metrics(run_id)}

    def summaries(self, run_id: int) -> dict[str, float]:
        """A run's summaries, by key."""
        return {key: value for _r, key, value in self.values_of_runs("summaries", [run_id])}

    def summary_values(self, run_ids: list[int], key: str) -> dict[int, float]:
        """One summary key for many runs, by run id."""
        return {r: value for r, _k, value in self.values_of_runs("summaries", run_ids, [key])}

    def curve(self, run_id: int, kind: str) -> list[tuple[float, float]]:
        """The points (x, value) of a run's curve `kind` (a stress test's gradient norm by
        distance, …), in x order."""
        _cols, rows = self.query(
            "SELECT x, value, value_kind FROM curves WHERE run_id = :r AND kind = :kind "
            "ORDER BY x, id",
            {"r": run_id, "kind": kind},
            **API_LIMITS,
        )
        return [(x, join_float(v, vk)) for x, v, vk in rows]

    # -- baselines ----------------------------------------------------------------------------
    def baseline_points(self, name: str) -> list[dict[str, Any]]:
        """The points of baseline `name` (dicts of baselines.POINT_FIELDS) in the order they
        were saved (empty if there is none)."""
        cols, rows = self.query(
            "SELECT model, task, k, metric, value, value_kind, tolerance, direction, variant, "
            "config FROM baselines WHERE name = :name ORDER BY id",
            {"name": name},
            **API_LIMITS,
        )
        out = []
        for row in rows:
            point = dict(zip(cols, row, strict=True))
            point["value"] = join_float(point["value"], point.pop("value_kind"))
            point["variant"] = point["variant"] or ""
            point["config"] = point["config"] or ""
            out.append(point)
        return out

    def baseline_list(self) -> tuple[list[str], list[tuple]]:
        """(columns, rows): each baseline's name, number of points and when it was saved
        (UTC)."""
        return self.query(
            "SELECT name, COUNT(*) AS points, MAX(created_at) AS created FROM baselines "
            "GROUP BY name ORDER BY name",
        )

    def answer_rows(self, name: str | None = None, task: str | None = None) -> list[dict]:
        """`seqbench memory`'s stored answers, newest first: the answers table's columns
        (details decoded) and `stale`, true when a run the answer rests on was deleted or
        archived since it was derived (run `seqbench memory` again to re-derive it)."""
        sql = [
            "SELECT a.id, a.name, a.task, a.created_at, a.verdict, a.k_star, a.k_low, a.k_high,",
            "  a.max_k, a.epsilon, a.metric, a.n_runs, a.sentence, a.details,",
            "  (SELECT COUNT(*) FROM answer_runs ar JOIN runs r ON r.id = ar.run_id",
            "   WHERE ar.answer_id = a.id AND r.archived_at IS NULL) AS live_runs",
            "FROM answers a WHERE 1 = 1",
        ]
        params: dict[str, Any] = {}
        if name is not None:
            sql.append("AND a.name = :name")
            params["name"] = name
        if task is not None:
            sql.append("AND a.task = :task")
            params["task"] = task
        sql.append("ORDER BY a.id DESC")
        cols, rows = self.query("\n".join(sql), params)
        out = []
        for row in rows:
            d = dict(zip(cols, row, strict=True))
            d["details"] = decode_json(d["details"])
            d["stale"] = d.pop("live_runs") != d["n_runs"]
            out.append(d)
        return out

    def trained(self, task: str, models: list[str], limit: int = 2000) -> list[tuple]:
        """(model, config_hash, status, wall_seconds, steps) of the newest training runs of
        `models` on `task` that ended completed or diverged: which configs the store has done,
        and what they cost (a dry run's estimate)."""
        names, params = in_list("m", models)
        params.update(task=task, limit=limit)
        _cols, rows = self.query(
            "SELECT model, config_hash, status, wall_seconds, config FROM runs "
            f"WHERE kind = 'train' AND task = :task AND model IN ({names}) "
            "AND status IN ('completed', 'diverged') ORDER BY id DESC LIMIT :limit",
            params,
        )
        out = []
        for model, h, status, secs, config in rows:
            steps = decode_json(config).get("steps")
            out.append((model, h, status, secs, steps if isinstance(steps, int) else None))
        return out

    def answer_run_ids(self, answer_id: int) -> list[int]:
        """The runs an answer rests on (those still in the store)."""
        _cols, rows = self.query(
            "SELECT run_id FROM answer_runs WHERE answer_id = :a ORDER BY run_id", {"a": answer_id}
        )
        return [int(r) for (r,) in rows]
