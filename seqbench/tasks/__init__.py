"""Task registry: the built-in tasks, each declared in its own file (tasks/specs/, a TaskSpec from
tasks/spec.py), collected into TASKS; and what the rest of seqbench asks of a config's task:
the data a file fixes (pin), its own fields and resolution, its checks, and the Task itself
(make_task), whose class is imported only then (as the model registry does for models)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from seqbench.errors import UsageError
from seqbench.options import OPTIONS, SHARED, TASK
from seqbench.tasks import specs
from seqbench.tasks.spec import TASKS, TaskSpec

__all__ = [
    "FILE_TASK",
    "SCALES",
    "TASKS",
    "TaskSpec",
    "check_args",
    "condition",
    "is_file_task",
    "make_task",
    "pin",
    "validate",
]

# the order `seqbench tasks` lists the built-ins in; a task not named here comes after them,
# by name
_ORDER = (
    *("adding", "copy", "digits", "pdigits", "fashion", "pfashion", "chorales"),
    *("ptb-char", "ptb-word", "text", "teacher", "mqar", "selective-copy", "induction"),
    *("memory-function", "file-regression", "file-classification", "file-next-token"),
)


def _collect() -> None:
    """Register every TaskSpec of the modules in tasks/specs/ (SPEC, or SPECS for several;
    torch-free: a task's class is imported when it is made), then seal the registry."""
    found = []
    for m in pkgutil.iter_modules(specs.__path__):
        module = importlib.import_module(f"{specs.__name__}.{m.name}")
        found += [module.SPEC] if hasattr(module, "SPEC") else list(module.SPECS)
    rank = {name: i for i, name in enumerate(_ORDER)}
    for spec in sorted(found, key=lambda s: (rank.get(s.name, len(rank)), s.name)):
        TASKS.register(spec.name, spec)
    TASKS.seal()


_collect()
FILE_TASK = "file"  # --task file: the file-<kind> task its data is (pin)


def is_file_task(name: str) -> bool:
    return name == FILE_TASK or (name.startswith("file-") and name in TASKS)


def pin(task: str, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The task a config really runs and the fields its data fixes, from the data itself
    (`values`: the config's fields so far). A file task: its kind (`--task file` becomes
    file-<kind>), T, the content hash and the split seed, read from the file (numpy only);
    the text task: its file's content hash. Other tasks: unchanged, nothing fixed."""
    from pathlib import Path

    if task == "text" and values.get("path"):
        from seqbench.tasks.arrays import content_hash

        if Path(values["path"]).is_file():
            where = str(Path(values["path"]).resolve())
            return task, {"path": where, "data_hash": content_hash(where)}
        return task, {}
    if not is_file_task(task):
        return task, {}
    if not values.get("path"):
        raise UsageError(
            "the file tasks need a data file: `path` FILE.npz (or a directory of .npy files, "
            "or a CSV or Parquet table)"
        )
    from seqbench.tasks.filedata import describe

    target = values.get("target")
    if task != FILE_TASK:
        asked = task.removeprefix("file-")
        if target is not None and target != asked:
            raise UsageError(f"`task` {task} asks for {asked}, but target is {target!r}")
        target = asked
    from seqbench.tasks import series

    choice = series.choice_for(values["path"], values)
    facts = describe(values["path"], target, values.get("split_seed"), choice)
    scale = values.get("scale")
    if scale not in (None, *SCALES):
        raise UsageError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if choice is not None and scale is not None:
        raise UsageError(
            f"data file {values['path']!r} is a table: its columns are always standardised "
            "with the training rows' statistics; scale does not apply"
        )
    if choice is not None:
        fixed = {
            "path": str(Path(values["path"]).resolve()),
            "target": facts.kind,
            "data_hash": facts.data_hash,
            "split_seed": None,
            **choice.fields(),
        }
        return f"file-{facts.kind}", fixed
    given = values.get("seq_len")
    if given is not None and given != facts.seq_len:
        raise UsageError(
            f"data file {values['path']!r} has sequences of {facts.seq_len} steps the model "
            f"sees; got seq_len {given}"
        )
    fixed = {
        "path": str(Path(values["path"]).resolve()),
        "target": facts.kind,
        "seq_len": facts.seq_len,
        "data_hash": facts.data_hash,
        "split_seed": facts.split_seed,
        "scale": scale or SCALES[0],
    }
    return f"file-{facts.kind}", fixed


# how an array file is fed: standardised with the training split (the default) or as it is
SCALES = ("standard", "raw")


def condition(cfg):
    """The task's own resolution of a config (TaskSpec.condition), if it has one."""
    spec = TASKS.get(cfg.task)
    return spec.condition(cfg) if spec.condition is not None else cfg


def spec_name(task: str) -> str:
    """The spec that answers for `task` before its data is pinned: `file` reads what the
    file-regression task reads (the most of the file tasks: a table's options too)."""
    return "file-regression" if task == FILE_TASK else task


def reads(task: str) -> frozenset[str] | None:
    """The shared task fields (options.SHARED) a plugin task lists as read (TaskSpec.reads);
    None: not declared, every one read. Its options (TaskSpec.options) are its own besides."""
    spec = TASKS.get(spec_name(task))
    return None if spec.reads is None else frozenset(spec.reads)


def validate(c) -> None:
    """The task checks of a config (torch-free): the options it owns (TaskSpec.options) and
    no other task's (a shared one, options.SHARED, is checked at resolution, as RunConfig's
    fields were), the length it allows, and its own checks."""
    for name, _ in c.extra:
        option = OPTIONS.get(name)
        if option is None or name in SHARED:
            continue
        if option.group == TASK and c.task not in option.owners:
            whose = ", ".join(option.owners)
            raise UsageError(f"{name} is a field of {whose}, not of {c.task}")
    check_args(TASKS.get(c.task), c)


def check_args(spec: TaskSpec, c) -> None:
    if c.seq_len is not None:
        if spec.fixed_seq_len and c.seq_len != spec.default_seq_len:
            raise UsageError(
                f"{spec.name} has a fixed length of {spec.default_seq_len} steps; "
                f"got seq_len {c.seq_len}"
            )
        if c.seq_len < spec.min_seq_len:
            raise UsageError(f"{spec.name} needs seq_len >= {spec.min_seq_len}, got {c.seq_len}")
    if spec.check is not None:
        spec.check(c)


def make_task(name: str, args):
    """Instantiate task `name` with a TaskArgs (checked against the task's rules)."""
    spec = TASKS.get(name)
    check_args(spec, args)
    cls = spec.load()
    task = cls.__new__(cls)
    task.name = name  # the name it is registered under (a plugin's may differ from its class's)
    task.__init__(args)
    return task
