"""From flags and files to a validated RunConfig, and its hash: the layer above config.py that
knows the model families and tasks (their defaults, their checks, the context a feedforward
model has). config.py is the ground (it imports nothing of seqbench but errors); models,
tasks and ops import config, and this module imports all of them.

Resolution order (later wins): global defaults < the model family's defaults (ModelSpec
.defaults) < the task's (TaskSpec.defaults) < the family's for this task (ModelSpec
.task_defaults: the papers' setups) < a TOML config file < command-line flags and --set; then
the family's own conditions (ModelSpec.condition). The fully resolved config is stored with
the run; config_hash is the de-duplication key for sweeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from seqbench import models, tasks
from seqbench.config import FIELDS, TASK_FIELDS, RunConfig, digest
from seqbench.errors import UsageError
from seqbench.models import MODELS
from seqbench.models.context import legacy_context
from seqbench.options import MODEL, OPTIONS, SHARED, TASK
from seqbench.parsing import AUTO, AUTO_CAP, check_fields, coerce, load_toml
from seqbench.tasks import TASKS

__all__ = [
    "config_hash",
    "fed_steps",
    "make_config",
    "resolve",
    "stored_config",
    "stored_k",
    "validate",
]


def validate(cfg: RunConfig) -> None:
    """Every check a config can fail before a run exists: its fields (parsing.check_fields),
    then the family's and the task's (the model- and task-specific ones that need torch follow
    in make_backbone / make_task, also before the run row is written)."""
    check_fields(cfg)
    models.validate(cfg)
    tasks.validate(cfg)
    steps = fed_steps(cfg) if cfg.k is not None and cfg.seq_len else None
    if steps is not None and cfg.k > steps:
        raise UsageError(
            f"k = {cfg.k} is longer than the {steps} steps a sequence of {cfg.task} has: a "
            f"context of {steps} or more is the whole sequence; leave `k` out for that, or "
            f"give k ≤ {steps}"
        )


def fed_steps(cfg: RunConfig) -> int:
    """How many steps a sequence of this config has: T, plus the task's extra steps (copy:
    T + 20). A context is capped at it (the models are built for T)."""
    extra = TASKS.get(cfg.task).extra_steps if cfg.task in TASKS else 0
    return cfg.seq_len + extra


def stored_k(cfg: RunConfig, steps: int | None = None) -> int | None:
    """What a run of `cfg` stores as k, the one rule for train, sweep and stress: a
    feedforward model's exact context (built for the config's T) capped at the steps it is fed
    (`steps`, default the config's own: fed_steps; stress feeds a trained model its own T), a
    recurrent model's truncation length (models.context)."""
    return models.context(cfg, fed_steps(cfg) if steps is None else steps)


def config_hash(cfg: RunConfig) -> str:
    """sha256 of the canonical JSON of every field that changes the experiment
    (RunConfig.hashed). A feedforward config whose network changed when contexts became exact
    (store revision 0006: a TCN given k = 4 had context 13, now 4) hashes its context too, so
    that no run of the old network dedupes with one of the new; unchanged networks keep their
    hash."""
    d = cfg.hashed()
    old, now = legacy_context(cfg, fed_steps(cfg)), stored_k(cfg)
    if old is not None and old != now:
        d["context"] = now
    return digest(d)


def _base(model: str, values: Mapping[str, Any]) -> str | None:
    """The base family a window wraps under `values` (its default where not given)."""
    if not MODELS.get(model).wraps_base:
        return None
    return values.get("base") or MODELS.get(model).defaults.get("base") or FIELDS["base"].default


def task_fields() -> list[str]:
    """Every task field: RunConfig's (TASK_FIELDS) and the tasks' options (a copy run's
    `symbols`, a table's `horizon`): what makes two runs' tasks differ."""
    return [*TASK_FIELDS, *(n for n, o in OPTIONS.items() if o.group == TASK)]


def _is_model_field(name: str) -> bool:
    """Whether `name` is a family's option (one that some families read and others do not)."""
    option = OPTIONS.get(name)
    return option is not None and option.group == MODEL


def unread(model: str, task: str, values: Mapping[str, Any], base: str | None = None) -> list[str]:
    """The options given in `values` that neither `model` (a window: with its base, `base` or
    the one `values` names) nor `task` reads, in the order given: one its spec does not
    declare, unless it is shared (options.SHARED) and a plugin's spec lists it in `reads`
    (ModelSpec.reads, TaskSpec.reads; a plugin that lists none reads every shared one).
    RunConfig's own fields every run reads."""
    base = base or _base(model, values)
    m, t = models.reads(model, base), tasks.reads(task)
    family = {model, base} if MODELS.get(model).wraps_base else {model}  # a window: its base's
    out = []
    for name in values:
        option = OPTIONS.get(name)
        if option is None:
            continue
        model_side = option.group == MODEL
        owner = family if model_side else {tasks.spec_name(task)}
        listed = m if model_side else t
        if not owner & set(option.owners) and not (
            name in SHARED and (listed is None or name in listed)
        ):
            out.append(name)
    return out


def readers(name: str) -> str:
    """The families (a window over them too) or the tasks that read `name`, in words."""
    option = OPTIONS.get(name)
    if not _is_model_field(name):
        listing = [t for t in TASKS if (r := tasks.reads(t)) is not None and name in r]
        found = [*(option.owners if option is not None else ()), *listing]
        return ", ".join(dict.fromkeys(found)) or "none of the tasks"
    listing = [m for m in MODELS if (r := models.reads(m)) is not None and name in r]
    found = list(dict.fromkeys([*option.owners, *listing]))
    if not found:
        return "none of them"
    wrappers = "/".join(m for m in MODELS if MODELS.get(m).wraps_base)
    over = any(MODELS.get(m).recurrent for m in found)
    return ", ".join(found) + (f" and a {wrappers} over them" if over else "")


def read_by_any(
    name: str, models: Sequence[str], tasks: Sequence[str], bases: Sequence[str | None] = (None,)
) -> bool:
    """Whether some point of a grid (every model × task × base) reads `name`."""
    return any(
        name not in unread(m, t, {name: None}, b) for m in models for t in tasks for b in bases
    )


def not_read_by_any(name: str, models: Sequence[str], tasks: Sequence[str] = ()) -> UsageError:
    """The one-line refusal of a grid's --set that no point reads, naming the grid's parts
    (its models alone where it has no task, as stress) and the parts that do read it."""
    grid = ", ".join(models)
    if tasks:
        grid = f"the grid's models ({grid}) and tasks ({', '.join(tasks)})"
    return UsageError(
        f"`set` {name} is read by none of {grid}: leave it out (it is read by {readers(name)})"
    )


def check_read(model: str, task: str, values: Mapping[str, Any], base: str | None = None) -> None:
    """Refuse a field given for a model and task that do not read it, in one line naming
    the families or tasks that do."""
    bad = unread(model, task, values, base)
    if bad:
        name = bad[0]
        part = model if _is_model_field(name) else task
        if _is_model_field(name) and MODELS.get(model).wraps_base:
            part = f"{model} over {base or _base(model, values)}"
        raise UsageError(f"{name} is not read by {part}, so it would change nothing; "
                         f"leave it out (it is read by {readers(name)})")  # fmt: skip


def readable(model: str, task: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` without the fields `model` and `task` do not read: a grid's --set applied to
    each point where it means something (a kernel_size to the TCNs of a grid, not its GRU)."""
    drop = set(unread(model, task, values))
    return {k: v for k, v in values.items() if k not in drop}


def resolve(model: str, task: str, overrides: dict[str, Any], checked: Any = None) -> RunConfig:
    """Defaults < family < pair < `overrides` (already merged file + flags), validated. The
    fields a task's data fixes (tasks.pin: a data file's kind, T and content hash) and the
    plugins' provenance are derived here, never taken from `overrides`. A field in
    `overrides` that the model and task do not read is refused (check_read) unless it is at
    the value it would have anyway; `checked`: the names to check (default all: a stored
    run's own fields are what they were)."""
    spec = MODELS.get(model)
    if not tasks.is_file_task(task):
        TASKS.get(task)  # a plugin task declares its options as it loads, before they are read
    given = {k: coerce(k, v) for k, v in overrides.items()}
    given.pop("plugin", None)  # derived below, from the code that runs
    # the pair's own steps are the floor (below a cap given alone), the cap AUTO_CAP times them
    capped = given.get("max_steps") is not None
    auto = given.get("steps") == AUTO or (capped and "steps" not in given)
    if given.get("steps") == AUTO:
        given.pop("steps")
    task, fixed = tasks.pin(task, given)
    task_spec = TASKS.get(task)
    values: dict[str, Any] = {}
    values.update(spec.defaults)
    values.update(task_spec.defaults)
    values.update(spec.task_defaults.get(task, {}))
    # a field the model and task do not read, given at the value it has anyway (a config
    # printed by --dry-run holds every field), changes nothing and is let through
    default = {k: values.get(k, FIELDS[k].default if k in FIELDS else None) for k in given}
    values.update(given)
    values.update(fixed)
    asked = {k: v for k, v in given.items()
             if (checked is None or k in checked) and v != default[k]}  # fmt: skip
    check_read(model, task, asked, base=values.get("base"))
    if overrides.get("params") is not None and "hidden" not in overrides:
        values.pop("hidden", None)
    if overrides.get("k") is not None and "levels" not in overrides:
        values.pop("levels", None)  # a context k asked for sizes the depth, not a default
    if values.get("seq_len") is None:
        values["seq_len"] = task_spec.default_seq_len
    for name in ("hidden", "layers", "kernel_size"):
        if values.get(name) is None:  # unset, or "none" given: the default, not a None
            values[name] = FIELDS[name].default
    if values.get("epochs") is not None and "steps" not in overrides:
        values["steps"] = None
    if auto and values.get("steps") is not None:
        if values.get("max_steps") is None:
            values["max_steps"] = AUTO_CAP * values["steps"]
        if values["max_steps"] > 0:  # a cap below the floor lowers the floor
            values["steps"] = min(values["steps"], values["max_steps"])
    if task_spec.stream_test and values.get("test_stream") is None:
        values["test_stream"] = True
    cfg = tasks.condition(models.condition(RunConfig(model=model, task=task, **values)))
    validate(cfg)
    return replace(cfg, plugin=provenance(cfg))


def provenance(cfg: RunConfig) -> str | None:
    """Where the config's plugin code comes from ("model: dist 1.0; task: ..."), None when
    everything is built in: recorded and hashed with the run."""
    parts = [("model", MODELS.get(cfg.model).plugin), ("task", TASKS.get(cfg.task).plugin)]
    if MODELS.get(cfg.model).wraps_base:
        parts.append(("base", MODELS.get(cfg.base).plugin))
    shown = [f"{what}: {p}" for what, p in parts if p]
    return "; ".join(shown) or None


def make_config(
    model: str,
    task: str,
    overrides: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    checked: Any = None,
) -> RunConfig:
    """Resolve a RunConfig: defaults < family < paper pair < config file < overrides. A field
    given that the model and task do not read is refused; `checked`: the names to check
    (default all given: a stored run's fields, given back, are what they were)."""
    merged: dict[str, Any] = {}
    if config_file:
        merged.update(load_toml(config_file))
        check_shadowed(model, task, merged, overrides or {}, config_file)
    merged.update(overrides or {})
    for key, given in (("model", model), ("task", task)):
        # a config file may name the model and task too: it must agree with the command's
        named = merged.pop(key, None)
        if named is not None and named != given:
            where = f"the config file says {key} = {named!r}" if config_file else f"{key}={named!r}"
            raise UsageError(f"{where}, but the {key} asked for is {given!r}")
    tags = dict(merged.pop("tags", None) or {})
    cfg = resolve(model, task, merged, checked)
    return RunConfig(**{**cfg.to_dict(), "tags": tags})


def check_shadowed(
    model: str, task: str, file_values: Mapping[str, Any], overrides: Mapping[str, Any], path
) -> None:
    """A config file's values that a flag or --set overrides are checked all the same (a file
    with `steps = -5` is wrong whatever `--steps` says): each such value is resolved alone,
    on the pair's defaults, and a bad one raises UsageError naming the file."""
    for key in sorted(set(file_values) & set(overrides) - {"model", "task", "tags"}):
        try:
            resolve(model, task, {key: file_values[key]})
        except UsageError as e:
            raise UsageError(f"config file {str(path)!r}: {e} (overridden, but wrong)") from None


def stored_config(
    model: str, task: str, config: Mapping[str, Any] | None, **over: Any
) -> RunConfig:
    """A stored run's config resolved again by this seqbench (a field the run predates takes
    today's default), with `over` on top (e.g. device="cpu"); steps derived from epochs are
    derived again. The one loader of stored configs (`train --from-run`, `stress --run`)."""
    conf = {k: v for k, v in (config or {}).items() if k not in ("model", "task")}
    conf.update(over)
    if conf.get("epochs") is not None:
        conf["steps"] = None  # prepare() derives steps from epochs again
    return make_config(model, task, conf, checked=set(over))


def check_fits(cfg: RunConfig) -> None:
    """The part of the memory check that needs no torch, run before a store is opened or torch
    imported: one batch's activations and state (models.activation_bytes, a lower bound of what
    the run needs; the full check with the parameters follows in training.setup.check_ram).
    A config whose width a parameter budget sets is left to the full check."""
    if cfg.params is not None or not cfg.seq_len:
        return
    need = models.activation_bytes(
        cfg, cfg.batch_size, cfg.seq_len, cfg.hidden or 128, 0, cfg.layers or 1, 4
    )
    require_fits(cfg, need, f"its activations alone, batch {cfg.batch_size} × T={cfg.seq_len}",
                 "batch_size or seq_len")  # fmt: skip


def require_fits(cfg: RunConfig, need: int, detail: str, last: str) -> None:
    """The one refusal of a config too large for this machine's memory (environment.
    require_ram), naming what to lower: the width, depth, the state where the family has one,
    then `last` (what else the estimate counted)."""
    from seqbench.environment import require_ram

    state = "d_state, " if models.base_spec(cfg).state_units is not None else ""
    require_ram(need, f"{cfg.model} on {cfg.task}", f"hidden, layers, {state}{last}", detail)
