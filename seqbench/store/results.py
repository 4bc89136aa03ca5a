"""The reads behind reports and checks: one row per training run with one summary value,
filtered by task, model, status, sweep and a user's condition on the v_results view. Every
statement goes through the read-only query runner (`store/query.py`), so a --where cannot
write, and every other value is a bound parameter.

Reads `summaries` (one row per run and key) joined to `runs`, never the metric history, so a
report over 10,000 runs costs one indexed query.
"""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.store.query import run_query


def result_rows(
    db: str | None,
    metric: str,
    *,
    tasks: list[str] | None = None,
    models: list[str] | None = None,
    sweep: str | None = None,
    where: str | None = None,
    statuses: tuple[str, ...] = ("completed",),
) -> tuple[list[str], list[tuple]]:
    """(columns, rows) of the training runs with summary `metric` (run_id, model, task, k,
    seq_len, seed, sweep, config, value, value_kind); `sweep` selects the
    sweep's points, whichever sweep (or plain train) produced their runs."""
    sql = [
        "SELECT r.id AS run_id, r.model, r.task, r.k, r.seq_len, r.seed, sw.name AS sweep,",
        "  r.config, s.value, s.value_kind",
        "FROM runs r JOIN summaries s ON s.run_id = r.id AND s.key = :metric",
        "LEFT JOIN sweeps sw ON sw.id = r.sweep_id",
        "WHERE r.kind = 'train'",
    ]
    params: dict = {"metric": metric}
    for i, st in enumerate(statuses):
        params[f"st{i}"] = st
    sql.append("AND r.status IN (" + ", ".join(f":st{i}" for i in range(len(statuses))) + ")")
    for name, values in (("task", tasks), ("model", models)):
        if values:
            keys = [f"{name}{i}" for i in range(len(values))]
            params.update(dict(zip(keys, values, strict=True)))
            sql.append(f"AND r.{name} IN (" + ", ".join(f":{k}" for k in keys) + ")")
    if sweep:
        sql.append(
            "AND r.config_hash IN (SELECT sp.config_hash FROM sweep_points sp "
            "JOIN sweeps s2 ON s2.id = sp.sweep_id WHERE s2.name = :sweep)"
        )
        params["sweep"] = sweep
    if where:
        if ";" in where:
            raise UsageError("--where takes one SQL condition, without ';'")
        sql.append(f"AND r.id IN (SELECT run_id FROM v_results WHERE {where})")
    return run_query(db, "\n".join(sql), params)


def summary_keys(db: str | None) -> list[str]:
    """Every summary key the store's training runs have (for a helpful unknown-metric error)."""
    _cols, rows = run_query(
        db,
        "SELECT DISTINCT s.key FROM summaries s JOIN runs r ON r.id = s.run_id "
        "WHERE r.kind = 'train' ORDER BY 1",
    )
    return [r[0] for r in rows]
