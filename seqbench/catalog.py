"""What can be trained: the model and task catalogues that `seqbench models` and `seqbench tasks`
list (installed plugins' too), where `train`'s defaults come from, and what a data file makes
(`tasks --path`). Torch is imported only to count a model's parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seqbench.config import FIELDS, ModelArgs, TaskArgs
from seqbench.errors import UsageError
from seqbench.models import MODELS, build_model
from seqbench.parsing import coerce, split_assignment
from seqbench.tasks import TASKS, make_task


@dataclass(frozen=True)
class ModelInfo:
    name: str
    kind: str
    hidden: int
    n_params: int
    description: str
    context: str  # the family's context rule (what a run stores as k)
    source: str = "built-in"  # or a plugin's provenance ("dist version")
    state_size: int | None = None  # Backbone.state_size at these sizes (None: not declared)
    options: str = ""  # the --set fields of its own it reads (ModelSpec.reads and .options)


@dataclass(frozen=True)
class TaskInfo:
    name: str
    metric: str
    better: str  # "higher" or "lower"
    seq_len: int
    baseline: str
    description: str
    source: str = "built-in"  # or a plugin's provenance ("dist version")
    options: str = ""  # the --set fields of its own it reads (TaskSpec.reads and .options)


def _own_fields(spec) -> str:
    """The fields a family or task reads beyond every one's own, its options among them, as
    `models` and `tasks` list them ("any" for the shared ones where a plugin does not say)."""
    own = [o.name for o in spec.options]
    if spec.reads is None:
        return ", ".join(["any", *own])
    return ", ".join([*spec.reads, *own]) or "-"


def _specs(registry, problems: list[str] | None) -> list:
    """Every spec of a registry, the installed plugins' included (imported here); a plugin that
    fails to load is left out with its one-line error in `problems` (raised without it)."""
    from seqbench.plugins import PluginError

    out = []
    for name in registry.names(plugins=True):
        try:
            out.append(registry.get(name))
        except PluginError as e:
            if problems is None:
                raise
            problems.append(str(e))
    return out


def model_catalog(problems: list[str] | None = None) -> list[ModelInfo]:
    """Every model, installed plugins' too, at its default width, sized for the adding task at
    T = 100. A plugin that fails to import goes to `problems` (one line each)."""
    from seqbench.models.base import count_params

    task = make_task("adding", TaskArgs(seq_len=100))
    out = []
    for spec in _specs(MODELS, problems):
        args = ModelArgs(seq_len=100).with_(**spec.defaults)
        try:
            model = build_model(spec.name, task, args)
            n = count_params(model)
            state = getattr(model.backbone, "state_size", None)
        except Exception as e:  # a plugin's builder: reported, the list goes on
            if spec.plugin is None or problems is None:
                raise
            problems.append(f"plugin model {spec.name!r} failed to build: {e}")
            continue
        kind = "recurrent" if spec.recurrent else "feedforward"
        source = spec.plugin or "built-in"
        info = (spec.name, kind, args.hidden, n, spec.description, spec.context_rule, source)
        out.append(ModelInfo(*info, state, _own_fields(spec)))
    return out


def default_layers() -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """Where `train`'s defaults come from, in the order they apply (later wins): the main
    fields' own defaults, each model family's, each task's, then the papers' per (model,
    task) pair; torch-free."""

    own = {n: FIELDS[n].default for n in ("batch_size", "lr", "optimizer", "hidden")}
    families = [(m, MODELS.get(m).defaults) for m in MODELS if MODELS.get(m).defaults]
    own_tasks = [(t, TASKS.get(t).defaults) for t in TASKS if TASKS.get(t).defaults]
    pairs = [(f"{m}/{t}", d) for m in MODELS for t, d in MODELS.get(m).task_defaults.items()]
    return [
        ("field", [("", own)]),
        ("family", families),
        ("task", own_tasks),
        ("pair", pairs),
    ]


def task_catalog(problems: list[str] | None = None) -> list[TaskInfo]:
    """Every task, installed plugins' too, with its metric, direction, default T and trivial
    baseline (a file task's T is its file's: 0 here)."""

    return [
        TaskInfo(
            s.name,
            s.metric,
            "higher" if s.higher_is_better else "lower",
            s.default_seq_len,
            s.baseline_note,
            s.description,
            s.plugin or "built-in",
            _own_fields(s),
        )
        for s in _specs(TASKS, problems)
    ]


def data_file(
    path: str,
    target: str | None = None,
    split_seed: int | None = None,
    table: dict[str, Any] | None = None,
):
    """What a data file holds, checked (tasks/filedata.FileFacts: kind, T, sizes, content hash,
    trivial baselines); a bad file raises a one-line error. NumPy (and pandas for a table)
    only. `table`: how a CSV or Parquet file is cut, as task fields (y_cols, x_cols, time_col,
    series_col, horizon, seq_len)."""
    from seqbench.tasks import series
    from seqbench.tasks.filedata import describe

    return describe(path, target, split_seed, series.choice_for(path, dict(table or {})))


def table_fields(sets: list[str] | None) -> dict[str, Any]:
    """--set key=value items naming how to cut a table (tasks/series.TABLE_FIELDS and seq_len),
    typed as config fields; any other key is refused."""
    from seqbench.tasks.series import TABLE_FIELDS

    out: dict[str, Any] = {}
    for item in sets or []:
        key, val = split_assignment(item, "`set`", "key=value")
        if key not in (*TABLE_FIELDS, "seq_len"):
            raise UsageError(
                f"`{key}=` does not say how to cut a table; give "
                f"{', '.join((*TABLE_FIELDS, 'seq_len'))}"
            )
        out[key] = coerce(key, val)
    return out


def metric_name(task: str) -> str | None:
    """The metric's name of a built-in task, or of a plugin task already loaded (None for one
    that is not: listing runs imports no plugin)."""

    return TASKS.get(task).metric if task in TASKS else None


def task_metric(task: str) -> str:
    """The name of a task's metric (mse, acc, bpc, ...)."""

    return TASKS.get(task).metric
