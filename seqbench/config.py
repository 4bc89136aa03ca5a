"""RunConfig: everything that defines a training run, its fields' types, limits and global
defaults (a family's and a task's own are on their registry specs), the checks that need no
model or task, and the one digest of a config. The ground of seqbench: it imports nothing of
seqbench but errors. configure.py resolves and hashes a config with the families and tasks in view.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

from seqbench.errors import UsageError
from seqbench.options import (
    MODEL,
    OPTIONS,
    SHARED,
    SHARED_MODEL,
    SHARED_TASK,
    TASK,
    Option,
    held_options,
    option_attr,
)

OPTIMIZERS = ("adam", "sgd", "rmsprop")
DEVICES = ("auto", "cpu", "cuda")
BACKENDS = ("auto", "torch", "cpu", "numba", "triton")  # the IndRNN recurrence's (ops/indrnn)
INITS = ("reference", "paper")
PRECISIONS = ("fp32", "bf16", "fp16")


def _field(*groups: str, default: Any = None, positive: bool = False, later: bool = False) -> Any:
    """A RunConfig field with what the rest of seqbench reads off it, declared where the field
    is: the parts that carry it too (MODEL, TASK: ModelArgs and TaskArgs, same name, same
    default), whether a value must be positive (POSITIVE), and whether it was added after
    stores had runs (ADDED_LATER: unset, it stays out of the hash). A float field is held
    finite by its annotation (parsing.FLOAT_FIELDS)."""
    return field(default=default, metadata={"groups": groups, "positive": positive, "later": later})


def declare(options: Iterable[Option], owner: str) -> None:
    """Record the options of family or task `owner` (registry.Registry.register calls this).
    A name RunConfig has, or one another owner declares otherwise (another kind, group or
    limit), is a programming error; declared alike, it is both owners'."""
    for option in options:
        if option.name in _FLAT or option.name == "extra":
            raise ValueError(f"{owner}: option {option.name!r} is a field of RunConfig")
        if option.kind not in (int, float, str, bool) or option.group not in (MODEL, TASK):
            raise ValueError(f"{owner}: option {option.name!r} needs a kind and a group")
        shared = SHARED_MODEL if option.group == MODEL else SHARED_TASK
        if option.name in SHARED and option.name not in shared:
            raise ValueError(
                f"{owner}: option {option.name!r} is a shared field of the other group"
            )
        if option.name not in shared and not option.nullable:
            raise ValueError(
                f"{owner}: option {option.name!r} may be not nullable only as a shared field "
                f"(options.SHARED), whose value there is its default"
            )
        known = OPTIONS.get(option.name)
        owners = (owner,)
        if known is not None:
            if (known.kind, known.group, known.positive, known.nullable) != (
                option.kind,
                option.group,
                option.positive,
                option.nullable,
            ):
                who = ", ".join(known.owners)
                raise ValueError(f"{owner}: option {option.name!r} is declared otherwise by {who}")
            owners = tuple(dict.fromkeys((*known.owners, owner)))
            option = replace(option, doc=known.doc or option.doc)
        OPTIONS[option.name] = replace(option, owners=owners)


@dataclass(frozen=True)
class TrainArgs:
    """How a run is trained: the optimiser and its learning-rate schedule, the batches, the
    evaluations and when to stop. A part of RunConfig (its `train`), whose fields a config
    takes, reads (cfg.lr), stores and hashes flat, as RunConfig's own; the training loop
    reads them."""

    # train until converged (`--steps auto`): past `steps`, on while the validation curve is
    # still improving by the under-trained rule (training/convergence.py), at most this many
    # steps; the steps it did are its `steps` summary, `converged` whether the rule ended it
    max_steps: int | None = _field(default=None, positive=True, later=True)
    epochs: int | None = _field(default=None, positive=True)
    batch_size: int = _field(default=32, positive=True)
    lr: float = _field(default=1e-3, positive=True)
    optimizer: str = "adam"
    clip: float | None = _field(default=None, positive=True)  # clip the gradient's norm to this
    # clamp each gradient element to ±this (after `clip`)
    clip_value: float | None = _field(default=None, positive=True)
    # multiply lr by lr_decay every this many steps
    lr_decay_every: int | None = _field(default=None, positive=True)
    lr_decay: float = _field(default=0.1, positive=True)
    # reduce on plateau: multiply lr by this after every evaluation that does not beat the best
    # validation metric so far (None: never); with patience, convergence's schedule
    lr_plateau: float | None = _field(default=None, positive=True, later=True)
    weight_decay: float = 0.0
    eval_every: int | None = _field(default=None, positive=True)  # None: 10 evaluations per run
    eval_batch_size: int = _field(default=256, positive=True)
    # early stopping: stop once the validation metric has not improved on its best for
    # `patience` evaluations in a row and at least `min_steps` steps are done; `steps` is then
    # the most a run may train and the steps it did are its `steps` summary (None: every step)
    patience: int | None = _field(default=None, positive=True, later=True)
    min_steps: int | None = _field(default=None, positive=True, later=True)


@dataclass(frozen=True, init=False)
class RunConfig:
    """The fields every run has, each with its one default; the options of its family and task
    (OPTIONS: the shared ones, SHARED, among them) are in `extra`, read as attributes. The
    fields marked for the model or the task make up ModelArgs and TaskArgs (written out below,
    held in step by tests/test_config_parts.py); a field's limits are declared with it
    (_field)."""

    model: str
    task: str
    seq_len: int | None = _field(MODEL, TASK, positive=True)  # None: the task's default T
    # truncation length (recurrent: TBPTT) or context (feedforward)
    k: int | None = _field(MODEL, positive=True)
    # the model's default, or fitted to `params`
    hidden: int | None = _field(MODEL, default=128, positive=True)
    # a parameter budget; the width is chosen to land within 5%
    params: int | None = _field(default=None, positive=True)
    layers: int | None = _field(MODEL, default=1, positive=True)
    steps: int | None = _field(default=None, positive=True)
    # how it is trained: the optimiser, its schedule, evaluation and stopping (TrainArgs)
    train: TrainArgs = field(default_factory=TrainArgs)
    seed: int = _field(TASK, default=0)
    device: str = "auto"
    precision: str = "fp32"  # fp32, bf16 (autocast) or fp16 (autocast + grad scaler, CUDA)
    stable: bool = False
    lam: float = _field(default=0.99, positive=True)  # stability bound for --stable
    eval_size: int = _field(TASK, default=1000, positive=True)
    # where a plugin model or task came from ("model: dist 1.2; task: ..."; plugins.py), set
    # by resolution: runs of different plugin versions are different experiments
    plugin: str | None = _field(default=None, later=True)
    # not part of the experiment's identity
    tags: dict[str, str] = field(default_factory=dict)
    save_checkpoint: bool = False
    # the declared options (OPTIONS) that are set, as sorted (name, value) pairs: read as
    # attributes (cfg.name), written flat by to_dict, so stored and hashed as the fields above
    extra: tuple[tuple[str, Any], ...] = ()

    def __init__(self, model: str, task: str, **values: Any) -> None:
        """Every field by name, as a dataclass's, TrainArgs' among them (or `train` whole, with
        any of its fields by name over it); a name that is neither is an option (OPTIONS),
        kept in `extra` (resolution refuses one that nobody declared)."""
        put = object.__setattr__
        put(self, "model", model)
        put(self, "task", task)
        extra = dict(values.pop("extra", ()))
        train = values.pop("train", None) or TrainArgs()
        trained = {n: values.pop(n) for n in list(values) if n in _TRAIN}
        put(self, "train", replace(train, **trained) if trained else train)
        for f in _CORE.values():
            if f.name in ("model", "task", "train"):
                continue
            if f.name in values:
                put(self, f.name, values.pop(f.name))
            else:
                put(self, f.name, f.default_factory() if f.default is MISSING else f.default)
        extra.update(values)
        put(self, "extra", held_options(extra))

    def __getattr__(self, name: str) -> Any:
        if name in _TRAIN:  # a TrainArgs field, read as the config's
            return getattr(self.__dict__["train"], name)
        return option_attr(self, name)

    def to_dict(self) -> dict[str, Any]:
        """Every field by name, as stored: RunConfig's, each shared option (SHARED: given or
        at its value, where stores have always had it, before `plugin`), the options set."""
        fields_ = asdict(self)
        options = dict(fields_.pop("extra"))
        out: dict[str, Any] = {}
        for name, value in fields_.items():
            if name == "plugin":
                out.update({n: options.pop(n, v) for n, v in SHARED.items()})
            if name == "train":
                out.update(value)
            else:
                out[name] = value
        out.update(options)
        return out

    def hashed(self) -> dict[str, Any]:
        """The fields that make the experiment (all but where and how it runs, NOT_HASHED):
        what configure.config_hash hashes (experiment_fields)."""
        return experiment_fields(self.to_dict())

    def overrides(self) -> dict[str, Any]:
        """Every field but model and task, as make_config takes them (resolving these gives
        this config back)."""
        return {k: v for k, v in self.to_dict().items() if k not in ("model", "task")}

    def model_args(self, seq_len: int | None = None) -> ModelArgs:
        """The model's hyperparameters, built for length `seq_len` (default: the config's T)."""
        values = {n: getattr(self, n) for n in MODEL_FIELDS}
        values["seq_len"] = seq_len if seq_len is not None else self.seq_len
        values = {k: v for k, v in values.items() if v is not None or k in _NULLABLE}
        return ModelArgs(**values, extra=self._options(MODEL))

    def task_args(self) -> TaskArgs:
        return TaskArgs(**{n: getattr(self, n) for n in TASK_FIELDS}, extra=self._options(TASK))

    def _options(self, group: str) -> tuple[tuple[str, Any], ...]:
        shared = SHARED_MODEL if group == MODEL else SHARED_TASK
        return tuple(
            (k, v)
            for k, v in self.extra
            if k in shared or (k in OPTIONS and OPTIONS[k].group == group)
        )


# RunConfig's own fields (not `extra`, which holds the options; `train` is its part's, _TRAIN)
_CORE = {f.name: f for f in fields(RunConfig) if f.name != "extra"}
_TRAIN = {f.name: f for f in fields(TrainArgs)}
# every field a config takes by name, in the order it is written (to_dict): the train part's
# where it stands
_FLAT = {
    n: g for name, f in _CORE.items() for n, g in (_TRAIN if name == "train" else {name: f}).items()
}


def _group(name: str) -> list:
    return [f for f in fields(RunConfig) if name in f.metadata.get("groups", ())]


def check_positive(obj, names) -> None:
    for name in names:
        v = getattr(obj, name)
        if v is not None and not v > 0:
            raise UsageError(f"{name} must be positive, got {v}")


# Fields that must be positive when set (checked on RunConfig, ModelArgs and TaskArgs alike).
POSITIVE = tuple(n for n, f in _FLAT.items() if f.metadata.get("positive"))


class _Part:
    """What ModelArgs and TaskArgs share: the positive-field check (their options' too) and a
    copy with changes."""

    def __post_init__(self):
        check_positive(self, [f.name for f in fields(self) if f.name in POSITIVE])
        check_positive(self, [n for n, _ in self.extra if n in OPTIONS and OPTIONS[n].positive])

    def __getattr__(self, name: str) -> Any:  # an option (RunConfig.extra)
        return option_attr(self, name)

    def with_(self, **kw):
        """A copy with changes, options among them (__init__ routes them: _options_by_name)."""
        return replace(self, **kw)


def _options_by_name(cls):
    """Let a part be built with its options by name, as RunConfig is: ModelArgs(…, leak=0.5)
    puts a declared option (OPTIONS) into `extra`; any other unknown name is the TypeError
    the dataclass gives."""
    init = cls.__init__
    own = {f.name for f in fields(cls)}

    def __init__(self, *args: Any, **kw: Any) -> None:
        named = {k: kw.pop(k) for k in list(kw) if k not in own and (k in OPTIONS or k in SHARED)}
        if named:
            kw["extra"] = held_options({**dict(kw.pop("extra", ())), **named})
        init(self, *args, **kw)

    __init__.__doc__ = init.__doc__
    cls.__init__ = __init__
    return cls


@_options_by_name
@dataclass(frozen=True)
class ModelArgs(_Part):
    """The model's hyperparameters: RunConfig's model fields, with the same defaults (each
    family reads the ones it needs; tests/test_config_parts.py holds the two in step). A model
    is built for a concrete length: seq_len is the task's T (IndRNN's bound M^(1/T) and a
    TCN's depth depend on it), 100 where none is given."""

    seq_len: int | None = 100
    k: int | None = None
    hidden: int | None = 128
    layers: int | None = 1
    extra: tuple[tuple[str, Any], ...] = ()  # the family's options (RunConfig.extra)


@_options_by_name
@dataclass(frozen=True)
class TaskArgs(_Part):
    """The task's options: RunConfig's task fields, with the same defaults (seq_len None: the
    task's default T)."""

    seq_len: int | None = None
    seed: int = 0
    eval_size: int = 1000
    extra: tuple[tuple[str, Any], ...] = ()  # the task's options (RunConfig.extra)


MODEL_FIELDS = tuple(f.name for f in _group(MODEL))
TASK_FIELDS = tuple(f.name for f in _group(TASK))
# None is a value for k (no context given)
_NULLABLE = {"k"}


# Where and how a run executes, not what it computes.
NOT_HASHED = {"tags", "save_checkpoint", "device", "backend"}
# Labels and outputs: what no run's computation reads (a diff of two runs shows the rest).
NOT_COMPUTED = {"tags", "save_checkpoint"}
# Fields that never make two runs different experiments: where and how they ran, and the seed
# (what a report cell averages over); model and task are the cell's own keys.
NOT_EXPERIMENT = {"model", "task", "seed", *NOT_HASHED}
# Fields added after stores had runs: unset (None) they are left out of the hash, so that
# every run from before keeps its hash (a resumed sweep does not re-run it).
ADDED_LATER = tuple(n for n, f in _FLAT.items() if f.metadata.get("later"))
# Later fields whose value is what every run before the field computed: it hashes as unset,
# so an explicit symbols=tokens copy run is the same experiment as one stored before (and a
# teacher_kind=tanh teacher run as one from before the field)
AS_BEFORE = {"symbols": "tokens", "teacher_kind": "tanh", "scale": "raw"}


class _Fields(Mapping):
    """RunConfig's fields by name (its train part's among them), then the declared options
    (OPTIONS): every name a config takes, each with what is read off a field (type, default,
    metadata)."""

    def __getitem__(self, name: str):
        return _FLAT[name] if name in _FLAT else OPTIONS[name]

    def __iter__(self) -> Iterator[str]:
        yield from _FLAT
        yield from OPTIONS

    def __len__(self) -> int:
        return len(_FLAT) + len(OPTIONS)


FIELDS: Mapping[str, Any] = _Fields()


def experiment_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a config (a dict, as stored) that make its experiment: all but
    NOT_HASHED, the ADDED_LATER ones left unset, and `path` where the data's content hash is
    recorded (the file's place is not the experiment; its content is), and a later field at
    the value that runs before it had (AS_BEFORE). The one rule behind
    config hashes and a report's "do these runs differ" (report/frames.differing_fields)."""
    # an option is unset when None (stores from before a field became an option hold it so)
    out = {
        k: v
        for k, v in config.items()
        if k not in NOT_HASHED and not (v is None and k not in _FLAT and k not in SHARED)
    }
    for name in (*ADDED_LATER, *AS_BEFORE):
        if out.get(name) is None or (name in AS_BEFORE and out[name] == AS_BEFORE[name]):
            out.pop(name, None)
    if out.get("data_hash") is not None:
        out.pop("path", None)
    return out


def digest(d: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of `d`: the one hash of seqbench's configs (a run's, and
    the plain dicts of stress and bench runs)."""
    blob = json.dumps(dict(d), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
