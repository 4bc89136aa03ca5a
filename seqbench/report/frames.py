"""From the store to pandas: one row per completed run with the requested summary metric (the
rows come from the store's reads, `seqbench.store.results.ReadStore`)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd

from seqbench.errors import UnknownNameError, UsageError
from seqbench.store.opening import reads
from seqbench.store.results import RunFilter

GROUP_AXES = ("k", "seq_len", "model")
# what a run records of its model, as a summary, that a report can group by like a field
SUMMARY_AXES = ("state_size",)


def config_fields() -> list[str]:
    """RunConfig fields a report can group by besides GROUP_AXES (read from runs.config)."""
    from seqbench.config import NOT_HASHED
    from seqbench.configure import FIELDS  # loads the registries: their options are fields

    return [f for f in FIELDS if f not in NOT_HASHED and f not in ("model", "task")]


def parse_by(by: str | list[str] | None) -> list[str]:
    """'k,stable' or ['k', 'stable'] -> ['k', 'stable'], each a run column or config field."""
    from seqbench.parsing import split_list

    out = split_list(by)
    allowed = list(GROUP_AXES) + list(SUMMARY_AXES)
    allowed += [f for f in config_fields() if f not in GROUP_AXES]
    for b in out:
        if b not in allowed:
            raise UnknownNameError("`by` field", b, allowed)
    if len(set(out)) != len(out):
        raise UsageError(f"`by` names a field twice: {','.join(out)}")
    return out


def add_config_columns(df: pd.DataFrame, names: list[str], store=None) -> pd.DataFrame:
    """Copy config fields (e.g. stable, teacher_lam) out of the `config` column, and the
    SUMMARY_AXES (state_size) from each run's summaries in `store` (None where a run has none,
    as a run from before the summary)."""
    for name in names:
        if name in df.columns:
            continue
        if name in SUMMARY_AXES and store is not None:
            ids = [int(i) for i in df["run_id"]]
            got = {r: v for r, _, v in store.values_of_runs("summaries", ids, [name])}
            df[name] = [_as_int(got.get(i)) for i in ids]
        else:
            df[name] = [cfg.get(name) for cfg in df["config"]]
    return df


def _as_int(v):
    """A whole-number summary (a size) as an int, for grouping and display."""
    return int(v) if isinstance(v, float) and math.isfinite(v) and v == int(v) else v


TASK_RELATIVE = ("test_metric", "best_valid_metric", "final_valid_metric")


# A plugin task's direction as its runs stored it (summary higher_is_better), read with the
# runs by results_frame: a report never imports a plugin to learn it.
_STORED_DIRECTION: dict[str, bool] = {}


def metric_direction(metric: str, task: str | None = None) -> str:
    """'higher' or 'lower' is better for a summary key; the task-relative keys ask the task
    (a plugin task: what its runs stored)."""
    from seqbench.tasks import TASKS

    if metric == "throughput" or metric.endswith("_acc"):
        return "higher"
    if metric in TASK_RELATIVE and task is not None:
        task = stored_task(task)
        higher = _STORED_DIRECTION.get(task)
        if higher is None and task in TASKS:
            higher = TASKS.get(task).higher_is_better
        if higher:
            return "higher"
    return "lower"


def remember_directions(store, tasks: set[str]) -> None:
    """Read the stored direction of the tasks that are not built in (plugin tasks)."""
    from seqbench.tasks import TASKS

    unknown = sorted(t for t in tasks if not TASKS.is_builtin(t) and t not in _STORED_DIRECTION)
    if unknown:
        _STORED_DIRECTION.update(store.task_directions(unknown))


def results_frame(
    store, metric: str = "test_metric", select: RunFilter = RunFilter()
) -> pd.DataFrame:
    """Columns: run_id, model, task, k, seq_len, seed, sweep, status, config (a dict), value
    (non-finite restored), has_value (False for a run without the metric, which only
    `select.without_metric` brings). One row
    per config hash (seed included): a (config, seed) trained again is one sample, its newest
    run (whatever its outcome), not several. `store`: a Store or ReadStore, opened by the
    caller (store/opening.open_store). `select`'s tasks may be given as data-labelled, its
    sweep as a comma-separated list, and its `where` may name any config field."""
    select = replace(
        select,
        tasks=task_names(select.tasks),
        sweep=sweep_names(select.sweep),
        fields=field_kinds() if select.where else None,
    )
    cols, rows = store.result_rows(metric, select)
    return _one_per_config(cols, rows, store)


def data_label(task: str, config: dict) -> str:
    """A task over the user's data, named with its data: `file-regression (co2·89155d31)`
    (the file's name and its content hash's first 8 digits); other tasks as they are. Runs of
    two data files are two tasks: their rows, baselines and notes never mix."""
    digest = config.get("data_hash")
    if not isinstance(digest, str) or not digest:
        return task
    name = Path(str(config.get("path") or "")).name or "data"
    return f"{task} ({name}·{digest[:8]})"


def stored_task(task: str) -> str:
    """The task name a data-labelled task was stored under."""
    return task.split(" (", 1)[0]


def label_data(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with each run's task named with its data (data_label); `stored_task` keeps
    the name the runs have in the store."""
    if df.empty:
        return df.assign(stored_task=df.get("task"))
    labels = [data_label(t, c) for t, c in zip(df["task"], df["config"], strict=True)]
    return df.assign(stored_task=df["task"], task=labels)


def task_names(tasks: list[str] | None) -> list[str] | None:
    """Tasks as stored: `file` (as --task file is given) is each file-<kind> task."""
    if not tasks:
        return tasks
    from seqbench.tasks import FILE_TASK
    from seqbench.tasks.filedata import KINDS

    out: list[str] = []
    for t in tasks:
        out += [f"file-{kind}" for kind in KINDS] if t == FILE_TASK else [t]
    return list(dict.fromkeys(out))


def sweep_names(sweep: str | list[str] | None) -> list[str] | None:
    """--sweep a,b: the points of several sweeps (a list as given)."""
    if sweep is None or sweep == "":
        return None
    from seqbench.parsing import split_list

    return split_list(sweep) if isinstance(sweep, str) else list(sweep)


def field_kinds() -> dict[str, str]:
    """Every config field and how --where compares it: int, float, bool or text."""
    from seqbench.configure import FIELDS  # loads the registries: their options are fields

    out = {}
    for name, f in FIELDS.items():
        t = str(f.type)
        out[name] = next((k for k in ("int", "float", "bool") if t.startswith(k)), "text")
    return out


def _one_per_config(cols, rows, store) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=cols)
    if not df.empty:
        same = ["config_hash", "model", "task", "k", "seq_len", "seed"]  # the hash, spelt out
        df = df.sort_values("run_id").drop_duplicates(same, keep="last")
        df = df.reset_index(drop=True)
    df = df.drop(columns=["config_hash"])
    if df.empty:
        return df.astype({"has_value": bool})
    remember_directions(store, set(df["task"]))
    return df


FITTED = ("hidden", "heads")  # what fit_size chooses to meet a parameter budget


def not_experiment() -> set[str]:
    """Config fields that never make two runs different experiments (config.NOT_EXPERIMENT)."""
    from seqbench.config import NOT_EXPERIMENT

    return set(NOT_EXPERIMENT)


def canonical(v) -> str:
    """A config value as comparable text (stored configs are JSON)."""
    return json.dumps(v, sort_keys=True, default=str)


def differing_fields(configs: list[dict], skip: set[str]) -> set[str]:
    """The fields (outside `skip`) whose values are not the same in every one of `configs`,
    each seen as its experiment (config.experiment_fields: a data file's path aside when its
    content hash is recorded, a field added later aside while unset)."""
    from seqbench.config import experiment_fields

    configs = [experiment_fields(c) for c in configs]
    names = set().union(*(c.keys() for c in configs)) - skip
    return {n for n in names if len({canonical(c.get(n)) for c in configs}) > 1}


def shown(v) -> str:
    """A config value for people: None as 'none'."""
    return "none" if v is None else str(v)


def _order(v) -> tuple:
    """Sort key for config values of mixed kinds: numbers by value, then text, None last."""
    if isinstance(v, bool) or v is None:
        return (1 if v is not None else 2, str(v))
    if isinstance(v, (int, float)):
        return (0, float(v))
    return (1, str(v))


def label_variants(df: pd.DataFrame, group: list[str]) -> tuple[pd.DataFrame, dict[str, list]]:
    """A report cell averages runs that differ in the seed alone. Where a model's runs in one
    cell (its `group` values, the task first) differ in other config fields too, each distinct
    config is a *variant*: its runs are relabelled `lstm (seq_len=20)` by the fields that
    differ (the same fields in every cell of that model on that task), never averaged
    together.

    Returns the frame (the original name kept as `family`) and {model: [fields, labels]}
    for the models that were split, labels in the order of their values, led by the plain
    name where the model ran one config on another task (split on copy, one TCN on adding)."""
    # the --by fields are the cell's own keys; but the row's k is the run's stored context,
    # while the config's k is the context asked for (none: the fewest levels covering T), so
    # two TCNs of context 32, one asked for k = 32 and one not, are two models
    skip = not_experiment() | (set(group) - {"k"})
    fields: dict[tuple[str, str], set[str]] = {}  # (model, task) -> the fields that differ
    for key, g in df.groupby(["model", *group], dropna=False, sort=False):
        vary = differing_fields(list(g["config"]), skip)
        if "params" in vary:  # a budget fits the width: the budget names the variant
            vary -= set(FITTED)
        if vary:
            fields.setdefault((key[0], key[1]), set()).update(vary)
    df = df.assign(family=df["model"])
    if not fields:
        return df, {}
    labels, order = [], {}
    for model, task, cfg in zip(df["model"], df["task"], df["config"], strict=True):
        names = sorted(fields.get((model, task), ()))
        if not names:
            labels.append(model)
            continue
        label = f"{model} ({' '.join(f'{n}={shown(cfg.get(n))}' for n in names)})"
        labels.append(label)
        order[label] = (names, tuple(_order(cfg.get(n)) for n in names))
    split: dict[str, list] = {}
    for (model, _task), fs in fields.items():
        entry = split.setdefault(model, [set(), []])
        entry[0] |= fs
    for model, entry in split.items():
        mine = [lab for lab in order if lab.startswith(model + " (")]
        entry[0] = sorted(entry[0])
        entry[1] = sorted(mine, key=lambda lab: (order[lab][0], order[lab][1]))
        if model in labels:  # its cells on the tasks where it ran one config keep the name
            entry[1].insert(0, model)
    return df.assign(model=labels), split


def unset_to_none(key: tuple) -> tuple:
    """A group key with NaN parts (pandas' unset k of a full model) as None, so that keys
    compare equal and print blank."""
    return tuple(None if isinstance(v, float) and math.isnan(v) else v for v in key)


def experiment_key(config: dict) -> str:
    """The canonical JSON of a stored config without the seed (and without where it ran): two
    runs with the same key are seeds of one experiment (config.experiment_fields: a field
    added later is left out while unset, so a new run's key equals an old run's)."""
    from seqbench.config import experiment_fields

    skip = not_experiment()
    return canonical({k: v for k, v in experiment_fields(config).items() if k not in skip})


# Reference predictors some tasks store beside `baseline` (Task.other_baselines), each a
# report column where any row has it
OTHER_BASELINES = ("persistence",)


def row_baselines(
    store,
    tasks: list[str],
    group: list[str],
    *,
    sweep=None,
    where=None,
    summary: str = "baseline",
) -> dict[tuple, float]:
    """Mean stored trivial baseline (the runs' `baseline` summary, or another reference's,
    `summary`) per report row: keyed by
    the row's `group` values (task first), and by (task,) alone as a fallback. A baseline that
    depends on the config (the teacher's λ, the copy task's T) is thus shown per row; a row
    whose experiments have different baselines (copy at two T) gets none rather than their
    mean. Seeds are averaged (each teacher seed draws another teacher)."""
    df = results_frame(store, summary, RunFilter(tasks=tasks or None, sweep=sweep, where=where))
    if df.empty:
        return {}
    df = add_config_columns(label_data(df), [g for g in group if g != "task"], store)
    df["experiment"] = [experiment_key(c) for c in df["config"]]
    out = {}
    for keys in (group, ["task"]):
        for key, g in df.groupby(keys, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            fin = g[[math.isfinite(v) for v in g["value"]]]
            if fin.empty:
                continue
            means = fin.groupby("experiment")["value"].mean()
            lo, hi = float(means.min()), float(means.max())
            if hi - lo <= 1e-9 * max(abs(hi), abs(lo), 1e-12):
                out[unset_to_none(key)] = float(fin["value"].mean())
    return out


@reads
def runs_frame(store, *, summaries: bool = True, **filters) -> pd.DataFrame:
    """One row per run (filters: model, task, status, sweep, kind; archived=False leaves
    archived runs out, True gives only them, None both), indexed by run_id: its columns (name
    and archived_at among them), `config.<field>` for every config field, `tags.<key>`, and
    with `summaries` one `summary.<key>` column per summary key. Non-finite values stay
    inf/nan (missing is NaN)."""
    return _runs_frame(store, summaries, filters)


def _runs_frame(store, summaries: bool, filters: dict) -> pd.DataFrame:
    cols, rows = store.run_rows(**filters)
    df = pd.DataFrame(rows, columns=cols)
    configs = list(df.pop("config")) if not df.empty else []
    tags = list(df.pop("tags")) if not df.empty else []
    for prefix, dicts in (("config", configs), ("tags", tags)):
        if dicts:
            flat = pd.DataFrame(dicts).add_prefix(f"{prefix}.")
            df = pd.concat([df, flat.set_index(df.index)], axis=1)
    df = df.set_index("run_id") if "run_id" in df else df
    if summaries and not df.empty:
        vals = store.values_of_runs("summaries", [int(i) for i in df.index])
        long = pd.DataFrame(
            [(r, f"summary.{k}", v) for r, k, v in vals],
            columns=["run_id", "key", "value"],
        )
        if not long.empty:
            df = df.join(long.pivot(index="run_id", columns="key", values="value"))
    return df


@reads
def curves_frame(
    store, run_ids: list[int], metrics: list[str] | None = None, *, wide: bool = False
) -> pd.DataFrame:
    """The logged metrics of runs. Long: columns run_id, key, step, value (inf/nan kept). Wide:
    indexed by (run_id, step), one column per key."""
    rows = store.values_of_runs("metrics", [int(r) for r in run_ids], metrics)
    df = pd.DataFrame(
        [(r, k, int(s), v) for r, k, s, v in rows],
        columns=["run_id", "key", "step", "value"],
    )
    if not wide:
        return df
    last = df.drop_duplicates(["run_id", "step", "key"], keep="last")  # nan and inf kept
    return last.pivot(index=["run_id", "step"], columns="key", values="value")
