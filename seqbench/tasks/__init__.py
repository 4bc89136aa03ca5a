"""Task registry: name -> TaskSpec, the task's facts without importing torch or its data;
the Task class is imported when a task is made (as the model registry does for models)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seqbench.errors import UsageError
from seqbench.registry import Registry
from seqbench.tasks import memory_functions as _mf  # torch-free, as this file


@dataclass(frozen=True)
class TaskSpec:
    """name; target: "module:Class" of the Task; metric (e.g. mse, acc, bpc) and whether
    higher is better; the default (or, with fixed_seq_len, the only) length T; min_seq_len;
    how the trivial baseline is defined (for `seqbench tasks`); check: the task's own config
    checks (a RunConfig or TaskArgs in, UsageError out); extra_steps: how many steps past T a
    sequence has (copy: T blanks between 10 symbols and 10 answers are T + 20 steps), so the
    model sees T + extra_steps. plugin: where a plugin's spec came from ("dist version"; None:
    built in), recorded in each run's config and hash. defaults: config fields the task sets
    (its training budget, say: {"steps": 500}; a built-in task's and a plugin's alike), over
    a model family's defaults and under the family's defaults for this task.
    stream_test: the test split is scored whole (a language model's)."""

    name: str
    target: str
    description: str
    metric: str
    default_seq_len: int
    higher_is_better: bool = False
    baseline_note: str = "-"
    min_seq_len: int = 1
    fixed_seq_len: bool = False
    check: Callable[[Any], None] | None = None
    extra_steps: int = 0
    plugin: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)  # the task's own (e.g. steps)
    # a language model's test split can be scored whole, as one stream (Task.evaluate_stream;
    # the config field test_stream): recurrent models carry their state across it
    stream_test: bool = False
    # config fields only this task reads: refused on every other task (check_owned)
    own_fields: tuple[str, ...] = ()
    # the task's own resolution of a config (a RunConfig in, one out), after the defaults and
    # before the checks: the values that follow from others (a memory function's parameters)
    condition: Callable[[Any], Any] | None = None

    def load(self) -> type:
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)


TASKS: Registry[TaskSpec] = Registry("task", "task", TaskSpec)


def _check_marker(c) -> None:
    if c.marker not in ("uniform", "halves"):
        raise UsageError(f"adding: marker must be uniform or halves, got {c.marker!r}")


def _check_symbols(c) -> None:
    if c.symbols not in (None, "float", "tokens"):
        raise UsageError(f"copy: symbols must be float or tokens, got {c.symbols!r}")


def _check_teacher(c) -> None:
    if c.teacher_kind not in (None, "tanh", "linear"):
        raise UsageError(f"teacher: teacher_kind must be tanh or linear, got {c.teacher_kind!r}")
    if c.teacher_kind == "linear" and not 0 < c.teacher_lam < 1:
        raise UsageError(
            "teacher: a linear teacher needs teacher_lam in (0, 1) (at λ ≥ 1 its state grows "
            f"without bound), got {c.teacher_lam:g}"
        )


# The memory tasks' vocabulary and pairs (mqar) or tokens (selective-copy) when the config
# leaves them unset: one place, read by the checks here and the tasks (tasks/recall.py)
RECALL_DEFAULTS = {
    "mqar": {"vocab_size": 256, "num_pairs": 4},
    "selective-copy": {"vocab_size": 16, "num_pairs": 4},
    "induction": {"vocab_size": 16, "num_pairs": None},
}
RECALL_T = 64  # their default length


def recall_sizes(task: str, c) -> tuple[int, int, int | None]:
    """(T, vocabulary, pairs) of a memory task's config, its defaults where unset."""
    d = RECALL_DEFAULTS[task]
    return c.seq_len or RECALL_T, c.vocab_size or d["vocab_size"], c.num_pairs or d["num_pairs"]


def _check_mqar(c) -> None:
    """Zoology's generator's own asserts: an even length, a vocabulary larger than it, room
    for the pairs and their queries."""
    T, V, p = recall_sizes("mqar", c)
    if T % 2:
        raise UsageError(f"mqar: seq_len must be even, got {T}")
    if V <= T:
        raise UsageError(f"mqar: vocab_size must exceed seq_len ({T}), got {V}")
    if 4 * p > T:
        raise UsageError(f"mqar: {p} pairs and their queries need seq_len >= {4 * p}, got {T}")


def _check_selective_copy(c) -> None:
    T, V, m = recall_sizes("selective-copy", c)
    if V < 4:
        raise UsageError(f"selective-copy: vocab_size must be at least 4, got {V}")
    if 2 * m > T:
        raise UsageError(f"selective-copy: {m} tokens need seq_len >= {2 * m}, got {T}")


def _check_induction(c) -> None:
    if recall_sizes("induction", c)[1] < 3:
        raise UsageError(f"induction: vocab_size must be at least 3, got {c.vocab_size}")
    if c.num_pairs is not None:
        raise UsageError("induction: num_pairs does not apply (one trigger and one answer)")


_S, _I, _M, _T = ("seqbench.tasks." + m for m in ("synthetic", "images", "music", "text"))
_R = "seqbench.tasks.recall"
_RECALL = {"metric": "acc", "higher_is_better": True}
_ACC = {
    "metric": "acc",
    "higher_is_better": True,
    "baseline_note": "chance: 10%",
    "fixed_seq_len": True,
}
for _spec in (
    TaskSpec(
        "adding",
        f"{_S}:Adding",
        "adding problem: sum the two marked values (MSE)",
        "mse",
        100,
        baseline_note="predict 1: 1/6 ≈ 0.1667",
        min_seq_len=2,
        check=_check_marker,
        defaults={"steps": 3000},
    ),
    TaskSpec(
        "copy",
        f"{_S}:CopyMemory",
        "copy memory: recall 10 symbols after T blanks (cross-entropy)",
        "ce",
        100,
        baseline_note="memoryless: 10·ln 8/(T+20)",
        extra_steps=20,
        check=_check_symbols,
        # the reference code (locuslab/TCN copy_memory) feeds each symbol's value as one
        # float channel; symbols=tokens embeds them (seqbench's variant)
        defaults={"steps": 2000, "symbols": "float"},
    ),
    TaskSpec(
        "digits",
        f"{_I}:Digits",
        "scikit-learn digits as 64-step pixel sequences (accuracy)",
        default_seq_len=64,
        defaults={"steps": 2000, "batch_size": 32},
        **_ACC,
    ),
    TaskSpec(
        "pdigits",
        f"{_I}:PermutedDigits",
        "digits with one fixed seeded pixel permutation (accuracy)",
        default_seq_len=64,
        defaults={"steps": 2000, "batch_size": 32},
        **_ACC,
    ),
    TaskSpec(
        "fashion",
        f"{_I}:Fashion",
        "Fashion-MNIST as 784-step pixel sequences (accuracy)",
        default_seq_len=784,
        defaults={"steps": 1000},
        **_ACC,
    ),
    TaskSpec(
        "pfashion",
        f"{_I}:PermutedFashion",
        "Fashion-MNIST with one fixed seeded pixel permutation (accuracy)",
        default_seq_len=784,
        defaults={"steps": 1000},
        **_ACC,
    ),
    # T = the training crop length; evaluation uses whole chorales
    TaskSpec(
        "chorales",
        f"{_M}:Chorales",
        "Bach chorales (music21), next-frame 88-pitch prediction (frame NLL)",
        "nll",
        64,
        baseline_note="per-pitch frequencies of train (no context)",
        # Adam 1e-2 (1e-3, the global default, left an RNN-64 and an LSTM-64 at the
        # context-free baseline after 1000 steps, 13.0 nats; 3e-3 reached 11.7-12.1, 1e-2
        # 10.3-10.5)
        defaults={"steps": 1000, "batch_size": 16, "lr": 1e-2},
    ),
    TaskSpec(
        "ptb-char",
        f"{_T}:PTBChar",
        "Penn Treebank characters (bits per character)",
        "bpc",
        100,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
    ),
    TaskSpec(
        "ptb-word",
        f"{_T}:PTBWord",
        "Penn Treebank words, 10k vocabulary (perplexity)",
        "ppl",
        35,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
    ),
    TaskSpec(
        "text",
        f"{_T}:TextFile",
        "character-level modelling of a text file given by path (bits per char)",
        "bpc",
        100,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
    ),
    TaskSpec(
        "teacher",
        f"{_S}:Teacher",
        "regress a random teacher RNN with spectral norm λ (MSE; teacher_kind=linear "
        "forgets at exactly λ per step)",
        "mse",
        100,
        baseline_note="predict the mean: Var(y)",
        check=_check_teacher,
        defaults={"steps": 1000},
    ),
    TaskSpec(
        "mqar",
        f"{_R}:MQAR",
        "multi-query associative recall (Zoology): recall each queried key's value (accuracy)",
        default_seq_len=RECALL_T,
        baseline_note="chance: 2/vocab_size",
        min_seq_len=8,
        check=_check_mqar,
        defaults={"steps": 2000, "batch_size": 64},
        **_RECALL,
    ),
    TaskSpec(
        "selective-copy",
        f"{_R}:SelectiveCopy",
        "selective copying (Mamba): recall the scattered tokens in order (accuracy)",
        default_seq_len=RECALL_T,
        baseline_note="chance: 1/(vocab_size − 2)",
        min_seq_len=4,
        check=_check_selective_copy,
        defaults={"steps": 2000, "batch_size": 64},
        **_RECALL,
    ),
    TaskSpec(
        "induction",
        f"{_R}:Induction",
        "induction heads: after the trigger, the token that followed it before (accuracy)",
        default_seq_len=RECALL_T,
        baseline_note="chance: 1/(vocab_size − 1)",
        min_seq_len=3,
        check=_check_induction,
        defaults={"steps": 2000, "batch_size": 64},
        **_RECALL,
    ),
    TaskSpec(
        _mf.NAME,
        f"{_S}:MemoryFunction",
        "regress a linear functional of white noise with memory function kernel=exp, power, "
        "impulse or osc (MSE; e*(k) in closed form)",
        "mse",
        100,
        baseline_note="predict the mean: Var(y) = e*(0)",
        check=_mf.check,
        defaults={"steps": 1000},
        own_fields=_mf.FIELDS,
        condition=_mf.condition,
    ),
    *(
        TaskSpec(
            f"file-{kind}",
            "seqbench.tasks.files:FileTask",
            "your own data (--path FILE.npz, DIR of .npy"
            + (", or a CSV/Parquet series" if kind == "regression" else "")
            + f"), {kind} ({metric})",
            metric,
            0,  # T is the file's (resolution reads it)
            higher_is_better=kind == "classification",
            baseline_note=note,
            check=lambda c: _check_file(c),
            defaults={"steps": 1000},
        )
        for kind, metric, note in (
            ("regression", "mse", "predict the train mean"),
            ("classification", "acc", "majority class of train"),
            ("next-token", "bpt", "unigram of train"),
        )
    ),
):
    TASKS.register(_spec.name, _spec)
TASKS.seal()
FILE_TASK = "file"  # --task file: the file-<kind> task its data is (pin)


def _check_file(c) -> None:
    if not c.path:
        raise UsageError(
            "the file tasks need a data file: --path FILE.npz (or a directory, or a table)"
        )
    if c.subset is not None:
        raise UsageError("subset does not apply to a data file: cut the arrays instead")


def is_file_task(name: str) -> bool:
    return name == FILE_TASK or (name.startswith("file-") and name in TASKS)


def pin(task: str, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The task a config really runs and the fields its data fixes, from the data itself
    (`values`: the config's fields so far). A file task: its kind (`--task file` becomes
    file-<kind>), T, the content hash and the split seed, read from the file (numpy only);
    the text task: its file's content hash. Other tasks: unchanged, nothing fixed."""
    from pathlib import Path

    if task == "text" and values.get("path"):
        from seqbench.tasks.filedata import content_hash

        if Path(values["path"]).is_file():
            where = str(Path(values["path"]).resolve())
            return task, {"path": where, "data_hash": content_hash(where)}
        return task, {}
    if not is_file_task(task):
        return task, {}
    if not values.get("path"):
        raise UsageError(
            "the file tasks need a data file: --path FILE.npz (or a directory of .npy files, "
            "or a CSV or Parquet table)"
        )
    from seqbench.tasks.filedata import describe

    target = values.get("target")
    if task != FILE_TASK:
        asked = task.removeprefix("file-")
        if target is not None and target != asked:
            raise UsageError(f"--task {task} asks for {asked}, but target is {target!r}")
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


def check_owned(task: str, given: dict[str, Any]) -> None:
    """Refuse a field that another task owns (TaskSpec.own_fields) given to `task`."""
    for other in TASKS:
        spec = TASKS.get(other)
        if other == task or not spec.own_fields:
            continue
        for name in spec.own_fields:
            if given.get(name) is not None and name not in TASKS.get(task).own_fields:
                raise UsageError(f"{name} is a field of the {other} task, not {task}")


def condition(cfg):
    """The task's own resolution of a config (TaskSpec.condition), if it has one."""
    spec = TASKS.get(cfg.task)
    return spec.condition(cfg) if spec.condition is not None else cfg


def validate(c) -> None:
    """The task checks of a config (torch-free): the length it allows, and its own checks."""
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
