"""A baseline as a file: written out (`check --export`), read back and checked point by point
(a nan value, a negative tolerance, a point given twice: one line each), imported into a
store, and a baseline named by the store or given as a file (`resolve_baseline`). What a
baseline is and how a check judges it is report/check.py's."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

from seqbench.errors import UsageError
from seqbench.report.check import (
    Point,
    read_points,
    valid_tolerance,
    variant_label,
    variant_text,
    write_points,
)
from seqbench.report.frames import experiment_key
from seqbench.store.store import Store
from seqbench.store.values import float_text


def _json_value(v: float):
    return float_text(v)


def export_baseline(store: Store, name: str, path: str | Path) -> int:
    points = read_points(store, name)
    if not points:
        raise UsageError(f"no baseline named {name!r} in {store.display_url}")
    data = {
        "name": name,
        "points": [
            {
                **asdict(p),
                "value": _json_value(p.value),
                "variant": json.loads(p.variant) if p.variant else {},
                "config": json.loads(p.config) if p.config else {},
            }
            for p in points
        ],
    }
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return len(points)


def _text(d: dict, key: str) -> str:
    v = d[key]
    if not isinstance(v, str) or not v:
        raise TypeError(f"{key} must be a non-empty string, got {type(v).__name__}")
    return v


def _file_k(d: dict) -> int | None:
    k = d["k"]
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < 2**63:
        raise TypeError(f"k must be a positive integer or null, got {k!r}")
    return k


def _finite(d: dict, key: str) -> float:
    v = d[key]
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
    if key == "tolerance" and ok and v < 0:
        ok = False
    if not ok:
        need = "finite and ≥ 0" if key == "tolerance" else "a finite number"
        raise ValueError(
            f"{d.get('model')}/{d.get('task')} {key} must be {need}, got {v!r} (a nan or "
            "infinite one would pass or fail everything)"
        )
    return float(v)


def load_file(path: str | Path) -> tuple[str, list[Point]]:
    p = Path(path)
    try:
        data = json.loads(p.read_bytes().decode("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("points"), list):
            raise TypeError('it must be an object with a list of "points"')
        if not data["points"]:
            raise ValueError("it has no points: a check against it would pass on nothing")
        points = []
        for d in data["points"]:
            if not isinstance(d, dict):
                raise TypeError("each point must be an object")
            points.append(
                Point(
                    _text(d, "model"),
                    _text(d, "task"),
                    _file_k(d),
                    _text(d, "metric"),
                    _finite(d, "value"),
                    _finite(d, "tolerance"),
                    d["direction"],
                    _variant(d.get("variant")),
                    _experiment(d.get("config")),
                )
            )
        name = data.get("name", p.stem)
        if not isinstance(name, str):
            raise TypeError("name must be a string")
    except FileNotFoundError:
        raise UsageError(f"baseline file {str(p)!r} not found") from None
    except IsADirectoryError:
        raise UsageError(f"baseline file {str(p)!r} is a directory") from None
    except OSError as e:
        raise UsageError(f"cannot read baseline file {str(p)!r}: {e.strerror}") from None
    except RecursionError:
        raise UsageError(
            f"baseline file {str(p)!r} is not a seqbench baseline: its JSON nests too deep"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError,
            OverflowError) as e:  # fmt: skip
        raise UsageError(f"baseline file {str(p)!r} is not a seqbench baseline: {e}") from None
    seen: set[tuple] = set()
    for pt in points:  # a repeated point would be counted (and pass) twice
        key = (pt.model, pt.task, pt.k, pt.metric, pt.variant, pt.config)
        if key in seen:
            k = "" if pt.k is None else f" k={pt.k}"
            variant = f" [{variant_label(pt.variant)}]" if pt.variant else ""
            raise UsageError(
                f"baseline file {str(p)!r} gives the point {pt.model}/{pt.task}{k} "
                f"{pt.metric}{variant} twice: keep one"
            )
        seen.add(key)
    for pt in points:
        if pt.direction not in ("lower", "higher"):
            raise UsageError(f"baseline file {str(p)!r}: direction must be lower or higher")
        if not valid_tolerance(pt.tolerance):
            raise UsageError(
                f"baseline file {str(p)!r}: {pt.model}/{pt.task} {pt.metric} has tolerance "
                f"{pt.tolerance}; it must be finite and ≥ 0"
            )
    return name, points


def _variant(v) -> str:
    """A file's variant: a JSON object (or its canonical text, or nothing)."""
    if not v:
        return ""
    if isinstance(v, str):
        v = json.loads(v)
    if not isinstance(v, dict):
        raise TypeError("variant must be an object of config fields")
    return variant_text(v)


def _experiment(c) -> str:
    """A file's point config: an object of config fields (nothing for an old file)."""
    if not c:
        return ""
    if not isinstance(c, dict):
        raise TypeError("config must be an object of config fields")
    return experiment_key(c)


def import_baseline(store: Store, path: str | Path, name: str | None = None) -> tuple[str, int]:
    file_name, points = load_file(path)
    write_points(store, name or file_name, points)
    return name or file_name, len(points)


def resolve_baseline(store: Store, ref: str) -> list[Point]:
    """A baseline by name in the store, or from a .json file."""
    if ref.endswith(".json") or Path(ref).is_file():
        return load_file(ref)[1]
    points = read_points(store, ref)
    if not points:
        raise UsageError(f"no baseline named {ref!r} in {store.display_url}")
    return points
