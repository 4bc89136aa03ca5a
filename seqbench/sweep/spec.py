"""Sweep specifications: axes, ranges, presets, scales, and expansion into RunConfigs.

A spec is a list of *grids*; each grid is {models, tasks, k, seeds, set: {field: [values]}}
and expands to their Cartesian product. Presets are several grids (e.g. recurrent models with
TBPTT k next to a TCN with context k). `--scale` picks the sizes: tiny (minutes on a CPU),
small (about an hour on a 2-core CPU), paper (the papers' sizes, for a GPU).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqbench.config import NOT_HASHED, RunConfig
from seqbench.errors import SeqbenchError, UnknownNameError, UsageError
from seqbench.parsing import coerce, split_assignment, split_list
from seqbench.store.names import check_label
from seqbench.sweep.presets import preset_grids

GRID_KEYS = {"models", "tasks", "k", "seeds", "set"}


MAX_POINTS = 100_000  # a grid past this is a typo in a range, not an experiment


def parse_range(text: str, name: str | None = None) -> list[int]:
    """'1,2,4' or 'start:stop:xF' (geometric, factor F) or 'start:stop:+S' / 'start:stop:S'
    (arithmetic); stop is inclusive. Raises UsageError on anything malformed or empty, naming
    `name` (the flag or field it came from) where given."""
    try:
        return _parse_range(text)
    except UsageError as e:
        if name is None:
            raise
        raise UsageError(f"{name}: {e}") from None


def _parse_range(text: str) -> list[int]:
    text = text.strip()
    if ":" not in text:
        try:
            vals = [int(v) for v in split_list(text)]
        except ValueError:
            raise UsageError(f"not a list of integers: {text!r}") from None
        if not vals:
            raise UsageError(f"empty list: {text!r}")
        return vals
    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"a range is start:stop:xF or start:stop:+S, got {text!r}")
    try:
        start, stop = int(parts[0]), int(parts[1])
        step = parts[2].strip()
        geometric = step.startswith("x")
        amount = float(step[1:]) if geometric else int(step.lstrip("+"))
    except ValueError:
        raise UsageError(f"malformed range {text!r}") from None
    if stop < start:
        raise UsageError(f"range {text!r} is empty: stop is below start")
    if geometric and (amount <= 1 or start <= 0):
        raise UsageError(f"range {text!r}: a geometric range needs start > 0 and factor > 1")
    if not geometric and amount <= 0:
        raise UsageError(f"range {text!r}: the step must be positive")
    import math

    n = math.log(stop / start) / math.log(amount) + 1 if geometric else (stop - start) // amount + 1
    if n > MAX_POINTS:
        raise UsageError(
            f"range {text!r} has {int(n):,} values; a sweep has at most {MAX_POINTS:,} points"
        )
    vals, v = [], float(start)
    while v <= stop:
        if not vals or round(v) != vals[-1]:
            vals.append(round(v))
        v = v * amount if geometric else v + amount
    return vals


def parse_values(field: str, text: str) -> list[Any]:
    """--set key=v1,v2 (or an integer range) -> typed values for RunConfig field `field`."""
    from seqbench.configure import FIELDS  # loads the registries: their options are fields

    if field not in FIELDS or field in ("model", "task", "tags"):
        valid = [f for f in FIELDS if f not in ("model", "task", "tags")]
        raise UnknownNameError("sweep axis", field, valid)
    if ":" in text and str(FIELDS[field].type).startswith("int"):
        return parse_range(text, field)
    if field in ("x_cols", "y_cols"):  # a table's columns: one choice, "a,b" is two columns
        return [coerce(field, text)]
    vals = [coerce(field, v) for v in split_list(text)]
    if not vals:
        raise UsageError(f"`{field}=` has no values")
    return vals


def _csv(text: str | list | None) -> list[str]:
    if isinstance(text, list):
        return [str(t) for t in text]
    return split_list(text)


def grid_from_flags(models, tasks, k, seeds, sets: list[str] | None) -> dict:
    grid: dict[str, Any] = {"models": _csv(models), "tasks": _csv(tasks)}
    if k:
        grid["k"] = parse_range(k, "`k`")
    grid["seeds"] = parse_range(seeds, "`seeds`") if seeds else [0]
    axes = {}
    for item in sets or []:
        key, val = split_assignment(item, "`set`", "key=v1,v2")
        axes[key] = parse_values(key, val)
    if axes:
        grid["set"] = axes
    return grid


def load_spec_file(path: str) -> dict:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"spec file {path!r} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read spec file {path!r}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"spec file {path!r} does not parse: {e}") from None
    top = GRID_KEYS | {"name", "grid"}
    for key in data:  # a typo (seed, ks, [sets]) must not silently drop an axis
        if key not in top:
            err = UnknownNameError("key", key, sorted(top))
            raise UsageError(f"spec file {path!r}: {err}") from None
    if "grid" in data and set(data) & GRID_KEYS:
        raise UsageError(
            f"spec file {path!r}: give the axes either at the top level or in [[grid]] "
            f"tables, not both (found {', '.join(sorted(set(data) & GRID_KEYS))} beside grid)"
        )
    grids = data.get("grid") or [{k: v for k, v in data.items() if k in GRID_KEYS}]
    if not isinstance(grids, list) or not all(isinstance(g, dict) for g in grids):
        raise UsageError(f"spec file {path!r}: grid must be an array of tables ([[grid]])")
    for g in grids:
        for key in g:
            if key not in GRID_KEYS:
                err = UnknownNameError("grid key", key, sorted(GRID_KEYS))
                raise UsageError(f"spec file {path!r}: {err}") from None
        if not isinstance(g.get("set") or {}, dict):
            raise UsageError(f"spec file {path!r}: set must be a table of field = [values]")
        for key in ("k", "seeds"):
            if isinstance(g.get(key), str):
                g[key] = parse_range(g[key], key)
        g["set"] = {
            f: (parse_values(f, v) if isinstance(v, str) else [coerce(f, x) for x in v])
            for f, v in (g.get("set") or {}).items()
        }
    return {"grids": grids, "name": data.get("name")}


# -- one parameter budget across k ------------------------------------------------------------
BUDGET = 10_000  # where the search for a budget every model meets at every k starts


def _sized(points: list[RunConfig]) -> list[RunConfig]:
    """One config per network the points build (model, task, T, k and the model's fields)."""
    out: dict[str, RunConfig] = {}
    for c in points:
        key = json.dumps([c.model, c.task, c.seq_len, c.k, c.model_args().__dict__], default=str)
        out.setdefault(key, c)
    return list(out.values())


def check_budget(points: list[RunConfig], budget: int) -> None:
    """Every network of `points` can be sized to `budget` parameters (within 5%): a one-line
    UsageError naming the first that cannot, before anything is written."""
    from seqbench.models import fit_size
    from seqbench.tasks import make_task

    tasks: dict[str, Any] = {}
    for cfg in _sized(points):
        key = json.dumps(cfg.task_args().__dict__, default=str) + cfg.task
        if key not in tasks:
            tasks[key] = make_task(cfg.task, cfg.task_args())
        try:
            fit_size(cfg.model, tasks[key], cfg.model_args(), budget)
        except UsageError as e:
            at = f" at k = {cfg.k}" if cfg.k is not None else ""
            raise UsageError(f"`params` {budget}{at}: {e}") from None


def smallest_budget(points: list[RunConfig], start: int = BUDGET, limit: float = 4.0) -> int:
    """The smallest budget from `start` up (in steps of 2.5%) that every network of `points`
    meets within 5%: a deep TCN's count moves in steps of more than 10% at a narrow width, so
    a round budget can fall between two of them. Raises as check_budget does when none up to
    `limit`·start does."""
    import math

    budget = start
    while budget <= limit * start:
        try:
            check_budget(points, budget)
            return budget
        except UsageError:
            budget = math.ceil(budget * 1.025)
    check_budget(points, start)  # raises, naming the first network that cannot
    return start


def holds_budget(grid: dict) -> bool:
    """Whether a grid given by flags is a k-sweep that must hold one budget across k: two or
    more contexts, a feedforward model (whose size follows its context), and neither a width
    (`hidden`), a budget (`params`) nor a depth (`levels`) given."""
    from seqbench.models import MODELS

    if len(set(grid.get("k") or [])) < 2:
        return False
    if {"hidden", "params", "levels"} & set(grid.get("set") or {}):
        return False
    return any(not MODELS.get(m).recurrent for m in grid.get("models") or [])


# -- expansion --------------------------------------------------------------------------------
def expand(grids: list[dict]) -> list[RunConfig]:
    """All points of all grids as resolved, validated RunConfigs, duplicates removed, in order.
    Raises (before anything is written) on an empty grid or any invalid point."""
    from seqbench.configure import (
        check_fits,
        config_hash,
        make_config,
        not_read_by_any,
        read_by_any,
        readable,
    )

    points: list[RunConfig] = []
    seen: set[str] = set()
    asked: dict[str, bool] = {}  # each --set axis: whether some point of the grids reads it
    seen_parts: tuple[list[str], list[str]] = ([], [])
    for g in grids:
        models, tasks = g.get("models") or [], g.get("tasks") or []
        if not models or not tasks:
            raise UsageError("empty grid: give at least one model and one task")
        ks = g.get("k") or [None]
        seeds = g.get("seeds") or [0]
        axes = g.get("set") or {}
        names = list(axes)
        size = len(models) * len(tasks) * len(ks) * len(seeds)
        for n in names:
            size *= len(axes[n])
        if len(points) + size > MAX_POINTS:  # checked before a single point is built
            raise UsageError(
                f"the grid has {len(points) + size:,} points; a sweep has at most "
                f"{MAX_POINTS:,} (split it into several sweeps)"
            )
        bases = axes.get("base") or [None]
        for n in names:  # is some point of the grids reading it (refused once all are seen)
            asked[n] = asked.get(n, False) or read_by_any(n, models, tasks, bases)
        seen_parts[0].extend(m for m in models if m not in seen_parts[0])
        seen_parts[1].extend(t for t in tasks if t not in seen_parts[1])
        for model, task, k, seed, *vals in itertools.product(
            models, tasks, ks, seeds, *(axes[n] for n in names)
        ):
            # each point takes the grid's --set where its model and task read it
            over = readable(model, task, {"seed": seed, **dict(zip(names, vals, strict=True))})
            if k is not None:
                over["k"] = k
            try:
                cfg = make_config(model, task, over)
                check_fits(cfg)  # before torch is imported
                from seqbench.training.setup import preflight

                preflight(cfg)
            except SeqbenchError as e:
                e.args = (f"grid point {model}/{task} {over}: {e}",)
                raise
            h = config_hash(cfg)
            if h not in seen:
                seen.add(h)
                points.append(cfg)
    for n, read in asked.items():  # a --set that no point of any grid reads, said once
        if not read:
            raise not_read_by_any(n, *seen_parts)
    if not points:
        raise UsageError("empty grid: nothing to run")
    return points


def canonical(spec: dict) -> dict:
    """A JSON-stable copy of a spec (what is stored and compared when a name is reused)."""
    return json.loads(json.dumps(deepcopy(spec), sort_keys=True, default=str))


def spec_name(spec: dict) -> str:
    blob = json.dumps(canonical(spec), sort_keys=True)
    return "sweep-" + hashlib.sha256(blob.encode()).hexdigest()[:8]


def sweep_grid(points: list[RunConfig]) -> tuple[list[str], list[list]]:
    """(columns, rows) of a plan's points: model, task and the fields that vary; a field a
    point's model and task do not read is left blank (an RNN's kernel_size beside TCNs)."""
    from seqbench.configure import FIELDS, unread

    names = [n for n in FIELDS if n not in NOT_HASHED]
    varying = [n for n in names if len({repr(getattr(p, n)) for p in points}) > 1]
    cols = ["#", *dict.fromkeys(["model", "task", *varying])]

    def shown(p: RunConfig, c: str):
        return None if unread(p.model, p.task, {c: None}, p.base) else getattr(p, c)

    return cols, [[i, *(shown(p, c) for c in cols[1:])] for i, p in enumerate(points)]


# -- a sweep's plan ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPlan:
    name: str
    spec: dict  # what is stored with the sweep: {"grids": [...]} (and the preset's name)
    points: list[RunConfig]
    held_budget: int | None = None  # the budget a k-sweep holds across k, when seqbench chose it


def plan(
    *,
    models: str | None = None,
    tasks: str | None = None,
    k: str | None = None,
    seeds: str = "0",
    set_: list[str] | None = None,
    spec: str | None = None,
    preset: str | None = None,
    scale: str = "small",
    name: str | None = None,
) -> SweepPlan:
    """The grid of a sweep from one of three sources, never several: grid flags (comma lists
    and ranges), a TOML spec file or a preset (with --seeds replacing its seeds), every point
    resolved and validated (nothing is written). A k-sweep given by flags over a feedforward
    model, with no width, budget or depth given, holds one parameter budget across k: the
    smallest from BUDGET up that every model meets at every k within 5%."""
    if name is not None:
        check_label("sweep", name)
    sources = [bool(preset), bool(spec), bool(models or tasks or k or set_)]
    if sum(sources) == 0:
        raise UsageError("give `models` and `tasks`, a `spec` file or a `preset`")
    if sum(sources) > 1:
        raise UsageError("give grid flags, `spec` or `preset`, not several")
    held = None
    if preset:
        grids = preset_grids(preset, scale)
        if seeds != "0":
            for g in grids:
                g["seeds"] = parse_range(seeds, "`seeds`")
        spec_doc = {"preset": preset, "scale": scale, "grids": grids}
        if seeds == "0":  # the preset as shipped: a name to quote in docs and --sweep filters
            name = name or f"{preset}-{scale}"
    elif spec:
        loaded = load_spec_file(spec)
        name = name or loaded.get("name")
        spec_doc = {"grids": loaded["grids"]}
    else:
        grid = grid_from_flags(models, tasks, k, seeds, set_)
        if holds_budget(grid):  # like with like: a larger context is not a larger model
            held = smallest_budget(expand([grid]))
            grid["set"] = {**grid.get("set", {}), "params": [held]}
        spec_doc = {"grids": [grid]}
    points = expand(spec_doc["grids"])  # validates every point before any write
    return SweepPlan(name or spec_name(spec_doc), spec_doc, points, held)
