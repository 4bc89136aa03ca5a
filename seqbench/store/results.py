"""The reads behind reports and checks: one row per training run with one summary value,
filtered by task, model, status, sweep and a user's condition on the v_results view. Every
statement goes through the read-only query runner (`store/query.py`), so a --where cannot
write, and every other value is a bound parameter.

Reads `summaries` (one row per run and key) joined to `runs`, never the metric history, so a
report over 10,000 runs costs one indexed query. Values come back decoded: floats with their
inf and nan restored (schema.py's value/value_kind pairs), JSON columns as dicts, whichever
database held them.
"""

from __future__ import annotations

import math

from seqbench.errors import UsageError
from seqbench.store.common import decode_json, join_float
from seqbench.store.query import run_query

# the runs of a sweep's points, whichever sweep (or plain train) produced them
SWEEP_POINTS = (
    "AND r.config_hash IN (SELECT sp.config_hash FROM sweep_points sp "
    "JOIN sweeps s2 ON s2.id = sp.sweep_id WHERE s2.name = :sweep)"
)


def result_rows(
    db: str | None,
    metric: str,
    *,
    tasks: list[str] | None = None,
    models: list[str] | None = None,
    sweep: str | None = None,
    where: str | None = None,
    statuses: tuple[str, ...] = ("completed",),
    without_metric: bool = False,
) -> tuple[list[str], list[tuple]]:
    """(columns, rows) of the training runs with summary `metric` (run_id, model, task, k,
    seq_len, seed, sweep, status, config (a dict), config_hash, value (a float, inf and nan
    restored; nan without one), has_value); `sweep` selects the sweep's points, whichever
    sweep (or plain train) produced their runs. `without_metric`: runs that lack the summary
    too (a failed run), has_value False: a report counts them."""
    join = "LEFT JOIN" if without_metric else "JOIN"
    sql = [
        "SELECT r.id AS run_id, r.model, r.task, r.k, r.seq_len, r.seed, sw.name AS sweep,",
        "  r.status, r.config, r.config_hash, s.value, s.value_kind",
        f"FROM runs r {join} summaries s ON s.run_id = r.id AND s.key = :metric",
        "LEFT JOIN sweeps sw ON sw.id = r.sweep_id",
        "WHERE r.kind = 'train' AND r.archived_at IS NULL",
    ]
    names, params = _in_list("st", list(statuses))
    params["metric"] = metric
    sql.append(f"AND r.status IN ({names})")
    for name, values in (("task", tasks), ("model", models)):
        if values:
            names, more = _in_list(name, values)
            params.update(more)
            sql.append(f"AND r.{name} IN ({names})")
    if sweep:
        sql.append(SWEEP_POINTS)
        params["sweep"] = sweep
    if where:
        if ";" in where:
            raise UsageError("--where takes one SQL condition, without ';'")
        sql.append(f"AND r.id IN (SELECT run_id FROM v_results WHERE {where})")
    cols, rows = run_query(db, "\n".join(sql), params)
    out = []
    for *head, config, config_hash, value, kind in rows:
        has = kind is not None
        value = join_float(value, kind) if has else math.nan
        out.append((*head, decode_json(config), config_hash, value, has))
    return [*cols[:-1], "has_value"], out  # value_kind read into value and has_value


def task_directions(db: str | None, tasks: list[str]) -> dict[str, bool]:
    """Whether higher is better for each of `tasks`, as their runs stored it (the summary
    higher_is_better, which runs of plugin tasks carry); tasks without it are left out."""
    names, params = _in_list("t", tasks)
    _cols, rows = run_query(
        db,
        "SELECT r.task, MAX(s.value) FROM runs r JOIN summaries s ON s.run_id = r.id "
        f"AND s.key = 'higher_is_better' WHERE r.task IN ({names}) GROUP BY r.task",
        params,
    )
    return {t: bool(v) for t, v in rows if v is not None}


def summary_keys(db: str | None) -> list[str]:
    """Every summary key the store's training runs have (for a helpful unknown-metric error)."""
    _cols, rows = run_query(
        db,
        "SELECT DISTINCT s.key FROM summaries s JOIN runs r ON r.id = s.run_id "
        "WHERE r.kind = 'train' ORDER BY 1",
    )
    return [r[0] for r in rows]


# The library's read API reads everything a store holds: no row or time limit of `query`.
_API_LIMITS = {"timeout": 24 * 3600.0, "max_rows": 2**31 - 2}


def run_rows(
    db: str | None,
    *,
    model: str | None = None,
    task: str | None = None,
    status: str | None = None,
    sweep: str | None = None,
    kind: str | None = None,
    archived: bool | None = False,
) -> tuple[list[str], list[tuple]]:
    """Every run's columns (config and tags as dicts) oldest first; `sweep` selects the
    runs of its points, as `runs --sweep` and `report --sweep` do. `archived`: False leaves
    archived runs out, True gives only them, None both."""
    sql = [
        "SELECT r.id AS run_id, r.uuid, r.name, r.kind, r.status, r.model, r.task, r.k,",
        "  r.seq_len, r.seed, sw.name AS sweep, r.created_at, r.started_at, r.finished_at,",
        "  r.wall_seconds, r.n_params, r.config_hash, r.config, r.tags, r.error, r.archived_at",
        "FROM runs r LEFT JOIN sweeps sw ON sw.id = r.sweep_id WHERE 1 = 1",
    ]
    if archived is not None:
        sql.append(f"AND r.archived_at IS {'NOT ' if archived else ''}NULL")
    params: dict = {}
    for name, value in (("model", model), ("task", task), ("status", status), ("kind", kind)):
        if value is not None:
            sql.append(f"AND r.{name} = :{name}")
            params[name] = value
    if sweep is not None:
        sql.append(SWEEP_POINTS)
        params["sweep"] = sweep
    sql.append("ORDER BY r.id")
    cols, rows = run_query(db, "\n".join(sql), params, **_API_LIMITS)
    at = {c: cols.index(c) for c in ("config", "tags")}
    decoded = []
    for row in rows:
        row = list(row)
        for i in at.values():
            row[i] = decode_json(row[i])
        decoded.append(tuple(row))
    return cols, decoded


def _in_list(prefix: str, values: list) -> tuple[str, dict]:
    keys = [f"{prefix}{i}" for i in range(len(values))]
    return ", ".join(f":{k}" for k in keys), dict(zip(keys, values, strict=True))


def values_of_runs(
    db: str | None, table: str, run_ids: list[int], keys: list[str] | None = None
) -> list[tuple]:
    """Rows of `summaries` (run_id, key, value) or `metrics` (run_id, key, step, value) for
    the given runs (and keys), in run, key and step order; values decoded (inf, nan kept)."""
    if table not in ("summaries", "metrics") or not run_ids:
        return []
    step = "step, " if table == "metrics" else ""
    rows: list[tuple] = []
    for start in range(0, len(run_ids), 500):  # well below SQLite's bound-parameter limit
        ids, params = _in_list("r", run_ids[start : start + 500])
        sql = f"SELECT run_id, key, {step}value, value_kind FROM {table} WHERE run_id IN ({ids})"
        if keys:
            names, more = _in_list("k", keys)
            sql += f" AND key IN ({names})"
            params.update(more)
        order = "run_id, key, step, id" if table == "metrics" else "run_id, key"
        got = run_query(db, f"{sql} ORDER BY {order}", params, **_API_LIMITS)[1]
        rows += [(*head, join_float(v, vk)) for *head, v, vk in got]
    return rows
