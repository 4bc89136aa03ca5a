"""Baseline rows: named sets of reference values, one row per (model, task, k, variant,
metric), written by Store.write_baseline, read by ReadStore.baseline_points and baseline_list.
What they mean and how a check judges them is `seqbench.report.check`'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import delete, insert

from seqbench.store.schema import Baseline
from seqbench.store.values import split_float, utcnow

# the columns of a baseline point, as write() takes and read() returns them
POINT_FIELDS = (
    "model",
    "task",
    "k",
    "metric",
    "value",
    "tolerance",
    "direction",
    "variant",
    "config",
)


def write(session, name: str, points: Iterable[Mapping[str, Any]]) -> None:
    """Replace baseline `name` with `points` (dicts of POINT_FIELDS), in one transaction of
    `session` (a store's sessionmaker)."""
    rows = []
    for p in points:
        v, kind = split_float(p["value"])
        row = {f: p[f] for f in POINT_FIELDS}
        rows.append({**row, "name": name, "value": v, "value_kind": kind, "created_at": utcnow()})
    with session.begin() as s:
        s.execute(delete(Baseline).where(Baseline.name == name))
        if rows:
            s.execute(insert(Baseline), rows)
