"""What seqbench knows of a task without importing torch or its data: the TaskSpec each built-in
task declares in its own file (tasks/specs/), and the TASKS registry they are collected into
(tasks/__init__.py). The Task class is imported when a task is made."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seqbench.options import TASK, Option
from seqbench.registry import Registry

# a language model's test split scored whole, as streams (set by resolution for the tasks that
# can, TaskSpec.stream_test): a recurrent model carries its state across the split, a
# feedforward one sees its context; False: at most eval_size windows, each from a zero state
# (how runs before it were scored). An option of every task whose spec says stream_test.
TEST_STREAM = Option(
    "test_stream",
    bool,
    TASK,
    "score the test split whole, as streams (a language model's; true where it can)",
)
# The shared task fields several tasks read (options.SHARED: each at the value every run was
# stored with); a task's own (marker, teacher_lam) is in its file.
SUBSET = Option("subset", int, TASK, "train on the first this many sequences of the split",
                positive=True)  # fmt: skip
PATH = Option("path", str, TASK, "the data file (its content hash, data_hash, is the experiment)")


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
    # the task's own resolution of a config (a RunConfig in, one out), after the defaults and
    # before the checks: the values that follow from others (a memory function's parameters)
    condition: Callable[[Any], Any] | None = None
    # config fields of the task's own declared here rather than in RunConfig (options.Option,
    # group TASK): the task reads them off its TaskArgs, its defaults may set them, and every
    # other task refuses them
    options: tuple[Any, ...] = ()
    # the shared task fields (options.SHARED: marker, subset, path, teacher_lam) a plugin task
    # reads without declaring them as options; a config that gives another is refused, naming
    # the tasks that read it. None: not declared, every shared field accepted; a built-in
    # declares () and its options
    reads: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.stream_test and TEST_STREAM not in self.options:  # a stream has the option
            object.__setattr__(self, "options", (*self.options, TEST_STREAM))

    def load(self) -> type:
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)


TASKS: Registry[TaskSpec] = Registry("task", "task", TaskSpec)
