"""RunConfig: everything that defines a training run, its fields' types, limits and global
defaults (a family's and a task's own are on their registry specs), the checks that need no
model or task, and the one digest of a config. The ground of seqbench: it imports nothing of
seqbench but errors. configure.py resolves and hashes a config with the families and tasks in view.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from seqbench.errors import UsageError

OPTIMIZERS = ("adam", "sgd", "rmsprop")
DEVICES = ("auto", "cpu", "cuda")
BACKENDS = ("auto", "torch", "cpu", "numba", "triton")  # the IndRNN recurrence's (ops/indrnn)
INITS = ("reference", "paper")
PRECISIONS = ("fp32", "bf16", "fp16")


MODEL, TASK = "model", "task"


def _in(*groups: str, default: Any = None, **kw) -> Any:
    """A RunConfig field that ModelArgs and/or TaskArgs carry too (same name, same default)."""
    return field(default=default, metadata={"groups": groups}, **kw)


@dataclass(frozen=True)
class RunConfig:
    """Every field of a run, with its one default. The fields marked for the model or the task
    make up ModelArgs and TaskArgs (derived below), so a field is declared once."""

    model: str
    task: str
    seq_len: int | None = _in(MODEL, TASK)  # None: the task's default T
    k: int | None = _in(MODEL)  # truncation length (recurrent: TBPTT) or context (feedforward)
    hidden: int | None = _in(MODEL, default=128)  # the model's default, or fitted to `params`
    params: int | None = None  # a parameter budget; the width is chosen to land within 5%
    layers: int | None = _in(MODEL, default=1)
    steps: int | None = None
    epochs: int | None = None
    batch_size: int = 32
    lr: float = 1e-3
    optimizer: str = "adam"
    clip: float | None = None  # clip the gradient's norm to this
    clip_value: float | None = None  # clamp each gradient element to ±this (after `clip`)
    lr_decay_every: int | None = None  # multiply lr by lr_decay every this many steps
    lr_decay: float = 0.1
    weight_decay: float = 0.0
    seed: int = _in(TASK, default=0)
    device: str = "auto"
    precision: str = "fp32"  # fp32, bf16 (autocast) or fp16 (autocast + grad scaler, CUDA)
    stable: bool = False
    lam: float = 0.99  # stability bound for --stable
    eval_every: int | None = None  # None: 10 evaluations per run
    eval_size: int = _in(TASK, default=1000)
    eval_batch_size: int = 256
    # early stopping: stop once the validation metric has not improved on its best for
    # `patience` evaluations in a row and at least `min_steps` steps are done; `steps` is then
    # the most a run may train and the steps it did are its `steps` summary (None: every step)
    patience: int | None = None
    min_steps: int | None = None
    # model family options
    dropout: float = _in(MODEL, default=0.0)
    kernel_size: int | None = _in(MODEL, default=7)
    levels: int | None = _in(MODEL)
    nonlinearity: str = _in(MODEL, default="tanh")
    base: str = _in(MODEL, default="lstm")
    magnitude: float = _in(MODEL, default=2.0)
    deep: bool = _in(MODEL, default=False)
    heads: int = _in(MODEL, default=4)
    backend: str = _in(MODEL, default="auto")
    forget_bias: float = _in(MODEL, default=0.0)
    # --stable on an LSTM: the forget gate is f = forget_cap · σ(·) (set by resolution to λ/2
    # when not given), and the recurrent blocks share what is left, λ − forget_cap
    forget_cap: float | None = _in(MODEL)
    # "reference": what the paper's published code did (the default); "paper": its text
    init: str = _in(MODEL, default="reference")
    # the state per layer of a diagonal SSM (lru: N complex modes; s4d: N/2 complex modes per
    # channel, as its reference's N; mamba: d_state per channel); None: the family's default
    d_state: int | None = _in(MODEL)
    # task options
    marker: str = _in(TASK, default="uniform")
    subset: int | None = _in(TASK)
    path: str | None = _in(TASK)
    teacher_lam: float = _in(TASK, default=0.9)
    # the teacher's recurrence: "tanh" (h = tanh(W h + U x), the task as it was; unset on runs
    # from before) or "linear" (h = W h + U x, the output scaled by √(1 − λ²)): a linear
    # teacher forgets at exactly λ per step, where a tanh one driven at unit variance
    # saturates and forgets faster (0.61 per step at λ = 0.9 and 0.63 at 0.95, measured)
    teacher_kind: str | None = _in(TASK)
    # copy: how its symbols are fed, "float" (the symbol's value as one input channel, what the
    # reference code feeds: the default, set by resolution) or "tokens" (embedded, seqbench's
    # variant); unset (None) on runs from before, which were fed tokens
    symbols: str | None = _in(TASK)
    # a language model's test split scored whole, as streams (set by resolution for the tasks
    # that can, TaskSpec.stream_test): a recurrent model carries its state across the split, a
    # feedforward one sees its context; False: at most eval_size windows, each from a zero
    # state (how runs before it were scored)
    test_stream: bool | None = _in(TASK)
    # a dataset from a file (tasks/filedata.py), filled in by resolution from the file itself:
    # its kind (regression, classification, next-token), the sha256 of its content (which,
    # not `path`, is the experiment: the same file elsewhere pools, another file never does),
    # and the seed of the split it was cut into when it has no splits of its own
    target: str | None = _in(TASK)
    data_hash: str | None = _in(TASK)
    split_seed: int | None = _in(TASK)
    # what an array file's model sees: "standard" (inputs and regression targets standardised
    # with the training split's mean and sd; the metric in those units: set by resolution) or
    # "raw" (the values as they are, what runs before the field were fed)
    scale: str | None = _in(TASK)
    # a table (a CSV or Parquet time series, tasks/series.py): the columns it is cut from
    # (comma-separated names; x_cols unset: the targets' own past), the time column it is
    # sorted by and the series id, the forecast horizon (steps after the window's last row),
    # and how it was split ("time": 60/20/20 by the target's time, set by resolution)
    x_cols: str | None = _in(TASK)
    y_cols: str | None = _in(TASK)
    time_col: str | None = _in(TASK)
    series_col: str | None = _in(TASK)
    horizon: int | None = _in(TASK)
    split: str | None = _in(TASK)
    # the memory tasks (mqar, selective-copy, induction): the vocabulary, and the key–value
    # pairs to recall (mqar) or tokens to copy (selective-copy); None: the task's default
    vocab_size: int | None = _in(TASK)
    num_pairs: int | None = _in(TASK)
    # memory-function (tasks/memfn.py): y_t = Σ_s ρ(s)·x_{t−s} with the kernel ρ "exp"
    # (decay^s), "power" ((s + 1)^−alpha), "impulse" (1 at lag `delay`) or "osc"
    # (decay^s·cos(omega·s)), scaled to unit output variance, plus output noise of sd `noise`;
    # a kernel's parameters are set by resolution, the others stay unset
    kernel: str | None = _in(TASK)
    decay: float | None = _in(TASK)
    alpha: float | None = _in(TASK)
    delay: int | None = _in(TASK)
    omega: float | None = _in(TASK)
    noise: float | None = _in(TASK)
    # where a plugin model or task came from ("model: dist 1.2; task: ..."; plugins.py), set
    # by resolution: runs of different plugin versions are different experiments
    plugin: str | None = None
    # not part of the experiment's identity
    tags: dict[str, str] = field(default_factory=dict)
    save_checkpoint: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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
        return ModelArgs(**{k: v for k, v in values.items() if v is not None or k in _NULLABLE})

    def task_args(self) -> TaskArgs:
        return TaskArgs(**{n: getattr(self, n) for n in TASK_FIELDS})


def _group(name: str) -> list:
    return [f for f in fields(RunConfig) if name in f.metadata.get("groups", ())]


def check_positive(obj, names) -> None:
    for name in names:
        v = getattr(obj, name)
        if v is not None and not v > 0:
            raise UsageError(f"{name} must be positive, got {v}")


# Fields that must be positive when set (checked on RunConfig, ModelArgs and TaskArgs alike).
POSITIVE = (
    "lr",
    "batch_size",
    "steps",
    "epochs",
    "clip",
    "clip_value",
    "hidden",
    "params",
    "layers",
    "seq_len",
    "k",
    "eval_every",
    "eval_size",
    "lam",
    "teacher_lam",
    "magnitude",
    "kernel_size",
    "levels",
    "lr_decay_every",
    "eval_batch_size",
    "heads",
    "d_state",
    "vocab_size",
    "num_pairs",
    "lr_decay",
    "subset",
    "patience",
    "min_steps",
    "decay",
    "alpha",
    "omega",
)


class _Part:
    """What ModelArgs and TaskArgs share: the positive-field check and a copy with changes."""

    def __post_init__(self):
        check_positive(self, [f.name for f in fields(self) if f.name in POSITIVE])

    def with_(self, **kw):
        return replace(self, **kw)


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
    dropout: float = 0.0
    kernel_size: int | None = 7
    levels: int | None = None
    nonlinearity: str = "tanh"
    base: str = "lstm"
    magnitude: float = 2.0
    deep: bool = False
    heads: int = 4
    backend: str = "auto"
    forget_bias: float = 0.0
    forget_cap: float | None = None
    init: str = "reference"
    d_state: int | None = None


@dataclass(frozen=True)
class TaskArgs(_Part):
    """The task's options: RunConfig's task fields, with the same defaults (seq_len None: the
    task's default T)."""

    seq_len: int | None = None
    seed: int = 0
    eval_size: int = 1000
    marker: str = "uniform"
    subset: int | None = None
    path: str | None = None
    teacher_lam: float = 0.9
    teacher_kind: str | None = None
    symbols: str | None = None
    test_stream: bool | None = None
    target: str | None = None
    data_hash: str | None = None
    split_seed: int | None = None
    scale: str | None = None
    x_cols: str | None = None
    y_cols: str | None = None
    time_col: str | None = None
    series_col: str | None = None
    horizon: int | None = None
    split: str | None = None
    vocab_size: int | None = None
    num_pairs: int | None = None
    kernel: str | None = None
    decay: float | None = None
    alpha: float | None = None
    delay: int | None = None
    omega: float | None = None
    noise: float | None = None


MODEL_FIELDS = tuple(f.name for f in _group(MODEL))
TASK_FIELDS = tuple(f.name for f in _group(TASK))
# None is a value for these (no context given, no depth given, no forget-gate cap)
_NULLABLE = {"k", "levels", "forget_cap"}


# Where and how a run executes, not what it computes.
NOT_HASHED = {"tags", "save_checkpoint", "device", "backend"}
# Labels and outputs: what no run's computation reads (a diff of two runs shows the rest).
NOT_COMPUTED = {"tags", "save_checkpoint"}
# Fields that never make two runs different experiments: where and how they ran, and the seed
# (what a report cell averages over); model and task are the cell's own keys.
NOT_EXPERIMENT = {"model", "task", "seed", *NOT_HASHED}
# Fields added after stores had runs: unset (None) they are left out of the hash, so that
# every run from before keeps its hash (a resumed sweep does not re-run it).
ADDED_LATER = (
    "target",
    "data_hash",
    "split_seed",
    "plugin",
    "forget_cap",
    "test_stream",
    "symbols",
    "teacher_kind",
    "x_cols",
    "y_cols",
    "time_col",
    "series_col",
    "horizon",
    "split",
    "d_state",
    "vocab_size",
    "num_pairs",
    "scale",
    "patience",
    "min_steps",
    "kernel",
    "decay",
    "alpha",
    "delay",
    "omega",
    "noise",
)
# Later fields whose value is what every run before the field computed: it hashes as unset,
# so an explicit symbols=tokens copy run is the same experiment as one stored before (and a
# teacher_kind=tanh teacher run as one from before the field)
AS_BEFORE = {"symbols": "tokens", "teacher_kind": "tanh", "scale": "raw"}
FIELDS = {f.name: f for f in fields(RunConfig)}


def experiment_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a config (a dict, as stored) that make its experiment: all but
    NOT_HASHED, the ADDED_LATER ones left unset, and `path` where the data's content hash is
    recorded (the file's place is not the experiment; its content is), and a later field at
    the value that runs before it had (AS_BEFORE). The one rule behind
    config hashes and a report's "do these runs differ" (report/frames.differing_fields)."""
    out = {k: v for k, v in config.items() if k not in NOT_HASHED}
    for name in ADDED_LATER:
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
