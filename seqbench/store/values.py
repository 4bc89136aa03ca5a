"""How values cross the store: the one codec of non-finite floats (JSON has no nan or inf), JSON
columns read back as dicts, a run's metric rows, and the naive UTC timestamps every table holds.
Standard library only."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def float_text(x: float) -> float | str:
    """The one codec of non-finite floats as text: nan, inf, -inf become 'nan', 'inf', '-inf'
    (JSON has none of them); a finite float is itself. The store's value_kind column, the
    baseline files and the CLI's json/csv output all use it."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def split_float(x: float) -> tuple[float | None, str]:
    """float -> (value or None, value_kind) so that nan/inf/-inf round-trip exactly."""
    text = float_text(x)
    return (text, "finite") if isinstance(text, float) else (None, text)


def join_float(value: float | None, kind: str) -> float:
    """Inverse of :func:`split_float`."""
    if kind == "finite":
        return float(value) if value is not None else math.nan
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[kind]


def decode_json(v: Any) -> dict:
    """A JSON column as a dict: SQLite hands JSON back as text, PostgreSQL's driver as a dict;
    NULL (or anything not an object) is {}."""
    if isinstance(v, str):
        v = json.loads(v) if v else {}
    return v if isinstance(v, dict) else {}


def metric_rows(run_id: int, rows: Iterable[tuple[str, int, float]]) -> list[dict]:
    """(key, step, value) -> metrics rows; a non-finite value keeps its kind."""
    out = []
    for key, step, value in rows:
        v, kind = split_float(value)
        row = {"run_id": run_id, "key": key, "step": int(step), "value": v, "value_kind": kind}
        out.append(row)
    return out
