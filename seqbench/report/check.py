"""Baselines and regression checks: compare current results with stored reference values per
(model, task, k, variant, metric), using the median over seeds and the metric's direction.

The variant holds the config fields that tell apart runs sharing (model, task, k) in the
saved set, e.g. seq_len when the adding problem ran at T = 100, 500 and 1000, or teacher_lam
and stable in the Miller & Hardt sweep: the fields whose values differ between runs of one
(model, task, k) other than the seed. Without it those runs would share one median.

Each point also keeps the whole config it was measured on, seed aside (`config`, the
experiment key): a check compares it only with runs of that same experiment, so an ad-hoc run
with other steps or widths is never judged against a preset's baseline. Points saved before
configs were kept (config '') fall back to matching by variant."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

import pandas as pd

from seqbench.errors import SeqbenchError, UsageError
from seqbench.report.frames import (
    differing_fields,
    experiment_key,
    metric_direction,
    not_experiment,
    results_frame,
    shown,
)
from seqbench.store.names import check_label
from seqbench.store.opening import reads
from seqbench.store.results import RunFilter
from seqbench.store.store import Store


@dataclass(frozen=True)
class Point:
    model: str
    task: str
    k: int | None
    metric: str
    value: float
    tolerance: float
    direction: str  # "lower" or "higher" is better
    variant: str = ""  # canonical JSON of the distinguishing config fields; "" for none
    config: str = ""  # the experiment key (frames.experiment_key); "" for old points


def variant_text(values: dict) -> str:
    return json.dumps(values, sort_keys=True, separators=(",", ":")) if values else ""


def variant_label(variant: str) -> str:
    """'{"seq_len":100,"stable":true}' -> 'seq_len=100 stable=True' (for people)."""
    if not variant:
        return ""
    return " ".join(f"{k}={v}" for k, v in json.loads(variant).items())


@dataclass(frozen=True)
class CheckRow:
    model: str
    task: str
    k: int | None
    variant: str
    metric: str
    baseline: float
    current: float | None
    tolerance: float
    direction: str
    status: str
    note: str = ""  # why a point is missing, when a run of another config came close


def valid_tolerance(x: float) -> bool:
    """A tolerance must be a finite number ≥ 0: a nan one passes anything (every comparison
    with nan is false), a negative one fails everything."""
    return isinstance(x, (int, float)) and math.isfinite(x) and x >= 0


def check_tolerances(rtol: float, atol: float) -> None:
    """The one refusal of a bad --rtol or --atol (UsageError), before anything is opened."""
    if not (valid_tolerance(rtol) and valid_tolerance(atol)):
        raise UsageError(f"`rtol` and `atol` must be finite and ≥ 0, got {rtol} and {atol}")


def tolerance(value: float, rtol: float, atol: float, error: float) -> float:
    """max(atol, rtol·error): the tolerance scales with the point's error, its distance from a
    perfect score (point_error: the value itself for MSE, NLL, bits and other losses;
    1 − accuracy for an accuracy). A solved point (MSE 1e-4, accuracy
    0.96) is then held to its own scale: rtol = 0.1 fails a 1.1× regression of its error,
    where an absolute floor (atol) would let it regress a hundredfold. 0 for a non-finite
    value."""
    if not (valid_tolerance(rtol) and valid_tolerance(atol)):
        raise UsageError(f"`rtol` and `atol` must be finite and ≥ 0, got {rtol} and {atol}")
    if not math.isfinite(value):
        return 0.0
    return max(atol, rtol * abs(error))


def point_error(value: float, metric: str, task: str) -> float:
    """How far a point is from a perfect score, the scale of its tolerance: 1 − value for an
    accuracy (a higher-is-better metric of a built-in task, each of them an accuracy in [0,
    1]), the value itself otherwise (lower is better, 0 is perfect; a plugin's higher-is-
    better metric, whose ceiling seqbench does not know)."""
    from seqbench.tasks import TASKS

    accuracy = metric.endswith("_acc") or (
        metric_direction(metric, task) == "higher"
        and TASKS.is_builtin(task)
        and TASKS.get(task).metric == "acc"
    )
    return 1.0 - value if accuracy and 0.0 <= value <= 1.0 else abs(value)


def _not_variant() -> set[str]:
    """Fields that never tell apart two experiments of one (model, task, k)."""
    return not_experiment() | {"k"}


def varying_fields(df) -> list[str]:
    """Config fields whose values differ between runs of one (model, task, k), seeds aside."""
    found: set[str] = set()
    for _, g in df.groupby(["model", "task", "k"], dropna=False):
        found |= differing_fields(list(g["config"]), _not_variant())
    return sorted(found)


def _k(v) -> int | None:
    """A k as the points hold it: an int, or None (pandas' NaN) for a full model."""
    return None if v is None or v != v else int(v)


def _current(store, metric, sweep, where):
    """Completed and diverged runs with `metric`, k as an int or None, each run's experiment
    key alongside."""
    df = results_frame(
        store, metric, RunFilter(sweep=sweep, where=where, statuses=("completed", "diverged"))
    )
    if df.empty:
        return df
    df["k"] = pd.Series([_k(k) for k in df["k"]], index=df.index, dtype=object)  # None, not NaN
    df["experiment"] = [experiment_key(c) for c in df["config"]]
    return df


def _median(g) -> float:
    """The median over a group's runs; nan when any of them diverged (its value, finite or not,
    is no result), so a point whose runs diverged is a regression, never a pass."""
    if (g["status"] == "diverged").any():
        return math.nan
    vals = g["value"].astype(float)
    return math.nan if vals.isna().any() else float(vals.median())


def _by_variant(frames: dict, variant_fields=None) -> dict[tuple, tuple[float, int, str]]:
    out = {}
    for metric, df in frames.items():
        if df.empty:
            continue
        fields = varying_fields(df) if variant_fields is None else variant_fields
        df = df.assign(variant=[variant_text({f: c.get(f) for f in fields}) for c in df["config"]])
        for (model, task, k, var), g in df.groupby(["model", "task", "k", "variant"], dropna=False):
            out[(model, task, _k(k), var, metric)] = (
                _median(g),
                len(g),
                g["experiment"].iloc[0],
            )
    return out


def current_medians(
    store, metrics, *, sweep=None, where=None, variant_fields=None
) -> dict[tuple, tuple[float, int, str]]:
    """{(model, task, k, variant, metric): (median over seeds, n, experiment key)} of completed
    and diverged runs, told apart by `variant_fields`, or by the fields that vary
    (`varying_fields`) when None. With the fields that vary, each group is one experiment."""
    return _by_variant({m: _current(store, m, sweep, where) for m in metrics}, variant_fields)


def save_baseline(
    store: Store,
    name: str,
    *,
    metrics=("test_metric",),
    sweep=None,
    where=None,
    rtol=0.05,
    atol=0.0,
    skipped: list[str] | None = None,
) -> list[Point]:
    """Store the current medians as baseline `name` (replacing an older one of that name).
    A point whose runs diverged (or whose median is not finite) is left out, never saved with
    a diverged value: its label goes to `skipped`."""
    check_label("baseline", name)
    cur = current_medians(store, metrics, sweep=sweep, where=where)
    points, left_out = [], []
    for (m, t, k, var, metric), (v, _, ex) in sorted(cur.items(), key=lambda kv: _order(kv[0])):
        if not math.isfinite(v):
            left_out.append(" ".join(x for x in (f"{m}/{t}", f"k={k}", variant_label(var)) if x))
            continue
        direction = metric_direction(metric, t)
        tol = tolerance(v, rtol, atol, point_error(v, metric, t))
        points.append(Point(m, t, k, metric, v, tol, direction, var, ex))
    if skipped is not None:
        skipped.extend(left_out)
    if not points:
        why = f" ({len(left_out)} point(s) had diverged runs)" if left_out else ""
        raise SeqbenchError(f"no completed runs match: nothing to save as a baseline{why}")
    write_points(store, name, points)
    return points


def write_points(store: Store, name: str, points: list[Point]) -> None:
    store.write_baseline(name, [asdict(p) for p in points])


def read_points(store: Store, name: str) -> list[Point]:
    return [Point(**row) for row in store.baseline_points(name)]


@reads
def list_baselines(store) -> tuple[list[str], list[tuple]]:
    """(columns, rows): name, points, created (UTC) per stored baseline. `store`: a Store or
    ReadStore."""
    return store.baseline_list()


def judge(p: Point, current: float | None, tol: float) -> str:
    if current is None:
        return "missing"
    if not math.isfinite(current):
        return "regressed"  # a nan (or a blown-up inf) is never a pass
    if math.isnan(p.value):
        return "improved"
    worse = current - p.value if p.direction == "lower" else p.value - current
    # the edge itself passes: allow for the rounding in (value ± tol) of decimal inputs
    slack = tol + 1e-12 * max(abs(p.value), abs(current), 1.0)
    if worse > slack:
        return "regressed"
    if worse < -slack:
        return "improved"
    return "pass"


def _differences(want: dict, have: dict) -> list[str]:
    return [
        f"{k} ({shown(want.get(k))} → {shown(have.get(k))})"
        for k in sorted(differing_fields([want, have], set()))
    ]


def _nearest(p: Point, df) -> str:
    """For a point no current run matches: the fields by which the closest runs of its
    (model, task, k) differ, as a note ('' if it has no such runs)."""
    if df is None or df.empty:
        return ""
    same = df[(df["model"] == p.model) & (df["task"] == p.task)]
    same = same[[k == p.k for k in same["k"]]]
    if same.empty:
        return ""
    want = json.loads(p.config)
    diffs = min((_differences(want, json.loads(ex)) for ex in set(same["experiment"])), key=len)
    return f"no run of this config; the nearest differs in {', '.join(diffs[:4])}" + (
        f" and {len(diffs) - 4} more" if len(diffs) > 4 else ""
    )


def _order(key: tuple) -> tuple:
    """(model, task, k, variant, metric) in reading order: k as a number (1, 2, 16, 20, not
    1, 16, 2, 20), a full model's (None) last."""
    m, t, k, var, metric = key
    return (m, t, k is None, k if k is not None else 0, var, metric)


def check(
    store: Store, points: list[Point], *, sweep=None, where=None, rtol=None, atol=None
) -> list[CheckRow]:
    """Judge the current medians against each baseline point; --rtol/--atol override the stored
    tolerance. A point with a config is compared with the runs of exactly that config (seeds
    pooled); an old point without one, with the runs of its variant."""
    if not points:
        raise UsageError("the baseline has no points: a check against it would pass on nothing")
    metrics = sorted({p.metric for p in points})
    fields = sorted({f for p in points if p.variant for f in json.loads(p.variant)})
    frames = {m: _current(store, m, sweep, where) for m in metrics}
    legacy = _by_variant(frames, fields) if any(not p.config for p in points) else {}
    by_experiment = {
        (model, task, _k(k), ex, metric): _median(g)
        for metric, df in frames.items()
        if not df.empty
        for (model, task, k, ex), g in df.groupby(
            ["model", "task", "k", "experiment"], dropna=False
        )
    }
    rows = []
    for p in points:
        tol = p.tolerance
        if rtol is not None or atol is not None:
            tol = tolerance(
                p.value, rtol or 0.0, atol or 0.0, point_error(p.value, p.metric, p.task)
            )
        if not valid_tolerance(tol):  # e.g. a stored baseline written before this check
            raise UsageError(
                f"baseline point {p.model}/{p.task} {p.metric} has tolerance {tol}; "
                "it must be finite and ≥ 0"
            )
        if p.config:
            current = by_experiment.get((p.model, p.task, p.k, p.config, p.metric))
        else:
            found = legacy.get((p.model, p.task, p.k, p.variant, p.metric))
            current = None if found is None else found[0]
        note = _nearest(p, frames.get(p.metric)) if current is None and p.config else ""
        rows.append(
            CheckRow(
                p.model,
                p.task,
                p.k,
                p.variant,
                p.metric,
                p.value,
                current,
                tol,
                p.direction,
                judge(p, current, tol),
                note,
            )
        )
    return sorted(rows, key=lambda r: _order((r.model, r.task, r.k, r.variant, r.metric)))


def junit_xml(rows: list[CheckRow], path: str | Path) -> None:
    """One testcase per point: failure for regressed, skipped for missing."""
    suite = ET.Element(
        "testsuite",
        name="seqbench check",
        tests=str(len(rows)),
        failures=str(sum(r.status == "regressed" for r in rows)),
        skipped=str(sum(r.status == "missing" for r in rows)),
    )
    for r in rows:
        label = " ".join(x for x in (f"k={r.k}", variant_label(r.variant), r.metric) if x)
        case = ET.SubElement(suite, "testcase", classname=f"{r.task}.{r.model}", name=label)
        msg = (
            f"{r.metric} {r.current} vs baseline {r.baseline} ± {r.tolerance} "
            f"({r.direction} is better)"
        )
        if r.status == "regressed":
            ET.SubElement(case, "failure", message=msg, type="regression").text = msg
        elif r.status == "missing":
            ET.SubElement(case, "skipped", message=r.note or "no current result")
        else:
            ET.SubElement(case, "system-out").text = f"{r.status}: {msg}"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
