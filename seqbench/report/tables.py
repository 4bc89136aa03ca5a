"""A report (pandas): the runs of a store grouped into cells, each model's mean, spread and
seeds per row, with the notes on what the runs cannot carry (nothing learned, stopped early,
rows that differ in more than their axes). Printed as rows by rows.py; plotted by plots.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqbench.errors import SeqbenchError, UnknownNameError, UsageError
from seqbench.report.frames import (
    FITTED,
    OTHER_BASELINES,
    TASK_RELATIVE,
    add_config_columns,
    canonical,
    differing_fields,
    label_data,
    label_variants,
    metric_direction,
    not_experiment,
    parse_by,
    results_frame,
    row_baselines,
    shown,
    unset_to_none,
)
from seqbench.store.opening import reads
from seqbench.store.results import RunFilter

# The statuses of a run that ran to an outcome: completed, or lost to a divergence or failure
# (an interrupted run is the user's choice, not an outcome of the config).
RAN = ("completed", "diverged", "failed", "crashed")


@dataclass(frozen=True)
class Outcome:
    ran: int  # seeds (one sample per config and seed) that ran to an outcome
    diverged: int
    failed: int  # failed or crashed

    @property
    def lost(self) -> int:
        return self.diverged + self.failed

    def text(self, n: int) -> str:
        """'2 of 5, 3 diverged' (n the completed seeds in the mean); '' when none was lost."""
        if not self.lost:
            return ""
        parts = [f"{c} {w}" for c, w in ((self.diverged, "diverged"), (self.failed, "failed")) if c]
        return f"{n} of {self.ran}, {', '.join(parts)}"


class Cell(tuple):
    """(mean, std, n) of a report cell, with the cell's Outcome (if any) as `.outcome`: it
    unpacks as the 3-tuple every layout reads, and prints the seeds lost beside n."""

    outcome: Outcome | None

    def __new__(cls, mean: float, std: float, n: int, outcome: Outcome | None = None):
        cell = super().__new__(cls, (mean, std, n))
        cell.outcome = outcome
        return cell


@dataclass
class Report:
    """A long frame (one row per group × model: mean, std, n) plus how to lay it out."""

    stats: pd.DataFrame  # columns: task, *by (without model), model, mean, std, n
    metric: str
    by: list[str]  # the --by fields, in order; may include "model"
    models: list[str]  # the compared models, in order (all models for a leaderboard)
    compare: bool
    baselines: dict
    frame: pd.DataFrame | None = None  # one row per run (value, seed, the --by fields)
    # models whose runs in one cell differed beyond the seed: {model: [fields, variant labels]}
    variants: dict[str, list] | None = None
    # (row key, model label) -> Outcome: the seeds that ran in the cell, how many diverged or
    # failed (only the completed ones are in the mean)
    outcomes: dict[tuple, Outcome] | None = None
    # one line per model whose rows rest on different configs besides the --by fields
    row_notes: list[str] | None = None
    # other reference predictors stored beside the baseline (a forecast's persistence):
    # {name: {row key: value}}, only the names some row has
    others: dict[str, dict] | None = None

    @property
    def notes(self) -> list[str]:
        """One line per model split into variants, naming the fields that told them apart."""

        def shown(labels: list[str]) -> str:
            if len(labels) <= 6:
                return ", ".join(labels)
            return f"{', '.join(labels[:5])} and {len(labels) - 5} more"

        return [
            f"{m}: runs differ in {', '.join(fs)} beyond the seed, so each config is reported "
            f"apart ({shown(labels)}); `by` {fs[0]} groups by it, `where` picks one"
            for m, (fs, labels) in (self.variants or {}).items()
        ] + list(self.row_notes or [])

    def outcome(self, key: tuple, model: str) -> Outcome | None:
        return (self.outcomes or {}).get((unset_to_none(tuple(key)), model))

    @property
    def group(self) -> list[str]:
        """The row key: the task and every --by field except the model."""
        return ["task"] + [b for b in self.by if b != "model"]


def _agg(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    def stats(v: pd.Series) -> pd.Series:
        vals = v.to_numpy(dtype=float)
        # a nan result is a result: it makes the mean nan instead of vanishing from it
        return pd.Series(
            {
                "mean": float(np.mean(vals)),
                "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                "n": len(vals),
            }
        )

    out = df.groupby(keys, dropna=False)["value"].apply(stats).unstack().reset_index()
    out["n"] = out["n"].astype(int)
    return out


@reads
def build_report(
    store,
    *,
    compare: list[str] | None = None,
    tasks: list[str] | None = None,
    metric: str = "test_metric",
    by: str | list[str] | None = None,
    sweep: str | None = None,
    where: str | None = None,
) -> Report | None:
    """None when the store holds no completed training runs matching the filters at all.
    `by` is a run column (k, seq_len, model) or any config field (stable, teacher_lam, ...),
    or a comma-separated list of them."""
    bys = parse_by(by)
    if compare is not None and len(compare) < 1:
        raise UsageError("`compare` needs at least one model")
    select = RunFilter(
        tasks=tasks, models=compare, sweep=sweep, where=where, statuses=RAN, without_metric=True
    )
    every = results_frame(store, metric, select)
    # a completed run without the metric is not a sample of it at all
    every = every[(every["status"] != "completed") | every["has_value"]]
    df = _samples(every)
    if df.empty:
        known = store.summary_keys()
        if known and metric not in known:
            raise UnknownNameError("`metric` (a summary key)", metric, known)
        if compare:
            raise SeqbenchError(
                f"no completed runs with metric {metric!r} for "
                f"{', '.join(compare)}{' on ' + ', '.join(tasks) if tasks else ''}"
            )
        return None
    if compare:
        missing = [m for m in compare if m not in set(df["model"])]
        if missing:
            raise SeqbenchError(
                f"no completed runs for model {', '.join(repr(m) for m in missing)}"
                f"{' on ' + ', '.join(tasks) if tasks else ''} with metric {metric!r}"
            )
    every = add_config_columns(label_data(every), bys, store)
    for b in bys:  # unhashable config values (lists) group by their text
        if every[b].map(lambda v: isinstance(v, (list, dict))).any():
            every[b] = every[b].map(str)
    group = ["task"] + [b for b in bys if b != "model"]
    every, variants = label_variants(every, group)  # never a mean over different configs
    df = _samples(every)
    stats = _agg(df, [*group, "model"])
    outcomes = _outcomes(every, group)
    models = compare or sorted(set(every["family"]))
    models = [v for m in models for v in (variants[m][1] if m in variants else [m])]
    stored_tasks = sorted(set(df["stored_task"]))
    base = row_baselines(store, stored_tasks, group, sweep=sweep, where=where)
    others = {}
    for name in OTHER_BASELINES:
        found = row_baselines(store, stored_tasks, group, sweep=sweep, where=where, summary=name)
        if found:
            others[name] = found
    compared = bool(compare) and "model" not in bys
    notes = row_differences(df, group)
    rep = Report(stats, metric, bys, models, compared, base, df, variants, outcomes, notes)
    rep.others = others
    rep.row_notes = [*notes, *nothing_learned(rep), *stopped_early(store, df),
                     *trained_until_converged(store, df)]  # fmt: skip
    return rep


def trained_until_converged(store, df: pd.DataFrame) -> list[str]:
    """A note on the runs trained until converged (config `max_steps`, --steps auto): how
    many the rule ended, the steps they trained, and how many reached their cap improving."""
    ids, got = _runs_with(store, df, "max_steps", ["steps", "converged"])
    if not ids:
        return []
    steps = [g["steps"] for g in got.values() if "steps" in g]
    capped = sum(g.get("converged") == 0.0 for g in got.values())
    span = f"; trained {int(min(steps)):,}–{int(max(steps)):,} steps" if steps else ""
    return [
        f"`steps` auto: {len(ids) - capped} of {len(ids)} run(s) converged, {capped} reached "
        f"the cap still improving (train longer: `max_steps=N`){span}"
    ]


def _runs_with(store, df: pd.DataFrame, field: str, keys: list[str]):
    """The runs whose config sets `field`, and their summaries `keys` (run id → key → value)."""
    ids = [int(r) for r, c in zip(df["run_id"], df["config"], strict=True) if c.get(field)]
    got: dict[int, dict[str, float]] = {}
    for run_id, key, value in store.values_of_runs("summaries", ids, keys) if ids else []:
        got.setdefault(run_id, {})[key] = value
    return ids, got


def stopped_early(store, df: pd.DataFrame) -> list[str]:
    """A note on the runs with early stopping (config `patience`): how many stopped before
    their `steps`, and the steps they trained (their `steps` summary)."""
    ids, got = _runs_with(store, df, "patience", ["steps", "stopped_early"])
    if not ids:
        return []
    early = [g["steps"] for g in got.values() if g.get("stopped_early") and "steps" in g]
    if not early:
        return [f"{len(ids)} run(s) could stop early (patience) and none did"]
    return [
        f"{len(early)} of {len(ids)} run(s) with early stopping stopped before their steps "
        f"(trained {int(min(early)):,}–{int(max(early)):,} steps; `seqbench show RUN` per run)"
    ]


LEARNED = 0.05  # a cell learned something when it beats its trivial baseline by 5% of it


def nothing_learned(rep: Report) -> list[str]:
    """One note per task whose every cell sits at its trivial baseline or beyond it (worse
    than LEARNED of the baseline better): the comparison there is between models that learned
    nothing at this budget, not between what they can learn."""
    if rep.metric not in TASK_RELATIVE:
        return []
    notes = []
    for task, g in rep.stats.groupby("task", sort=True):
        learned, judged, shown = False, 0, None
        higher = metric_direction(rep.metric, task) == "higher"
        for _, r in g.iterrows():
            key = unset_to_none(tuple(r[c] for c in rep.group))
            b, mean = baseline_for(rep, key), float(r["mean"])
            if b is None or not math.isfinite(mean):
                continue
            judged, shown = judged + 1, b
            if (mean > b + LEARNED * abs(b)) if higher else (mean < b - LEARNED * abs(b)):
                learned = True
        if judged and not learned:
            notes.append(
                f"nothing learned at this budget on {task}: every cell is at its trivial "
                f"baseline ({shown:.4g}) or beyond it; train longer (`steps=...`) before "
                "comparing the models"
            )
    return notes


def _samples(every: pd.DataFrame) -> pd.DataFrame:
    """The runs a mean is taken over: completed, with the metric."""
    return every[(every["status"] == "completed") & every["has_value"]]


def _outcomes(every: pd.DataFrame, group: list[str]) -> dict[tuple, Outcome]:
    """Outcome per (row key, model label), for the cells where some seed diverged or failed."""
    out = {}
    for key, g in every.groupby([*group, "model"], dropna=False, sort=False):
        diverged = int((g["status"] == "diverged").sum())
        failed = int(g["status"].isin(["failed", "crashed"]).sum())
        if diverged or failed:
            key = unset_to_none(tuple(key))
            out[(key[:-1], key[-1])] = Outcome(len(g), diverged, failed)
    return out


def row_differences(df: pd.DataFrame, group: list[str]) -> list[str]:
    """One note per (model, task) whose rows rest on different configs besides the --by
    fields and the seed: the k = 20 row of 5000-step runs between k = 16 and 32 rows of
    500-step ones reads as a k effect but is a steps effect. Names the fields and which rows
    have which values (within a row, label_variants has already split differing configs).
    Rows at one parameter budget (`params`) differ in the width it fitted by design: that is
    like with like, and not noted."""
    if len(group) < 2:
        return []
    skip = not_experiment() | set(group)
    notes = []
    for (model, task), g in df.groupby(["model", "task"], sort=True):
        rows = list(g.groupby(group[1:], dropna=False, sort=True))
        if len(rows) < 2:
            continue
        configs = [r[1]["config"].iloc[0] for r in rows]
        vary = sorted(differing_fields(configs, skip))
        if len({canonical(c.get("params")) for c in configs}) == 1 and configs[0].get("params"):
            vary = [f for f in vary if f not in FITTED]  # one budget: the width follows k
        if not vary:
            continue
        by_values: dict[str, list[str]] = {}
        for key, r in rows:
            key = row_key(group[1:], key)
            cfg = r["config"].iloc[0]
            values = " ".join(f"{f}={shown(cfg.get(f))}" for f in vary)
            row = ", ".join(f"{n}={shown(v)}" for n, v in zip(group[1:], key, strict=True))
            by_values.setdefault(values, []).append(row)
        parts = "; ".join(f"{', '.join(rs)}: {v}" for v, rs in by_values.items())
        notes.append(
            f"{model} on {task}: rows differ in {', '.join(vary)}, not only in "
            f"{', '.join(group[1:])} ({parts}); compare them with care, or `where` one config"
        )
    return notes


INT_AXES = ("k", "seq_len")  # integer run columns that pandas turns into floats beside a blank


def row_key(group: list[str], key) -> tuple:
    """A group key as printed: unset parts None, k and seq_len as integers (not 1.0)."""
    key = unset_to_none(key if isinstance(key, tuple) else (key,))
    return tuple(
        int(v) if name in INT_AXES and isinstance(v, float) and v.is_integer() else v
        for name, v in zip(group, key, strict=True)
    )


def baseline_for(rep: Report, key: tuple, name: str = "baseline") -> float | None:
    """The row's own baseline (or other reference, `name`), else the task's mean one (None
    when the task has none)."""
    key = unset_to_none(key)
    values = rep.baselines if name == "baseline" else (rep.others or {}).get(name, {})
    found = values.get(key, values.get(key[:1]))
    return None if found is None else float(found)
