"""The options a model family or a task declares in its own file (ModelSpec.options,
TaskSpec.options) rather than in RunConfig: what one is (Option), those declared so far
(OPTIONS, filled by config.declare as the specs register), the shared ones that were
RunConfig's fields when stores had runs (SHARED), and how a config holds their values (its
`extra`). Ground, as config.py: it imports nothing of seqbench."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MODEL, TASK = "model", "task"


@dataclass(frozen=True)
class Option:
    """A config field that a family or a task declares in its own file (ModelSpec.options,
    TaskSpec.options) rather than RunConfig: `kind` int, float, str or bool, for the model
    (MODEL: ModelArgs carries it) or the task (TASK: TaskArgs). Its value is None unless given
    or set by its owner's defaults, and unset it stays out of the hash, as every field added
    after stores had runs (ADDED_LATER); set, it is stored and hashed flat beside RunConfig's
    own. Resolution refuses it on a config whose family (or task) is not its owner.

    A SHARED option was RunConfig's when stores had runs: its `default` is the value every
    run was stored and hashed with whatever its model and task read (SHARED holds them, frozen),
    and it still is; unset, it reads as that default, and `nullable` says whether None is a
    value of it (`levels`: no depth given)."""

    name: str
    kind: type
    group: str
    doc: str = ""
    positive: bool = False
    # the families or tasks that declare it, filled as they are registered (declare): one
    # option may be several's (d_state: lru, s4d and mamba), declared alike by each
    owners: tuple[str, ...] = ()
    nullable: bool = True

    @property
    def default(self) -> Any:
        """Its value where unset: a shared option's SHARED value (the one place it is
        written), None for every other (unset, it stays out of the hash)."""
        return SHARED.get(self.name)

    @property
    def type(self) -> str:
        return f"{self.kind.__name__} | None" if self.nullable else self.kind.__name__

    @property
    def metadata(self) -> dict[str, Any]:
        return {"groups": (self.group,), "positive": self.positive,
                "later": self.name not in SHARED}  # fmt: skip


# The options that were RunConfig's fields when stores had runs, at the value each run was
# stored and hashed with whatever its model and task read: frozen, so that every run keeps
# its hash. A config is written (to_dict) with each of them, given or at this value; the
# families and tasks that read one declare it (models/spec.py, tasks/spec.py), at this default.
SHARED_MODEL: dict[str, Any] = {
    "dropout": 0.0,
    "kernel_size": 7,
    "levels": None,
    "nonlinearity": "tanh",
    "base": "lstm",
    "magnitude": 2.0,
    "deep": False,
    "heads": 4,
    "backend": "auto",
    "forget_bias": 0.0,
    "init": "reference",
}
SHARED_TASK: dict[str, Any] = {
    "marker": "uniform",
    "subset": None,
    "path": None,
    "teacher_lam": 0.9,
}
SHARED = {**SHARED_MODEL, **SHARED_TASK}


# The declared options by name, filled as families and tasks are registered (declare).
OPTIONS: dict[str, Option] = {}


def option_attr(obj, name: str) -> Any:
    """An option's value on a config or its parts (unset: a shared one's SHARED value, any
    other's None), else AttributeError."""
    extra = dict(obj.__dict__.get("extra", ()))
    if name in extra:
        return extra[name]
    if name in SHARED:
        return SHARED[name]
    if name in OPTIONS:
        return None
    raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")


def held_options(values: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The options given, as `extra` holds them: sorted, without the unset (None) ones and the
    shared ones at their SHARED value (of its type: an int 0 given for a float stays, as it
    was stored), so that a config is one value however it was built."""
    return tuple(
        sorted(
            (k, v)
            for k, v in values.items()
            if v is not None and not (k in SHARED and type(v) is type(SHARED[k]) and v == SHARED[k])
        )
    )
