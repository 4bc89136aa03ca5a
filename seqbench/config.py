"""RunConfig: everything that defines a training run, its fields' types, limits and defaults
(the global ones, PAIR_DEFAULTS and TASK_DEFAULTS), the checks that need no model or task, and
the one digest of a config. The ground of seqbench: it imports nothing of seqbench but errors.
configure.py resolves and hashes a config with the families and tasks in view.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from seqbench.errors import SeqbenchError, UsageError

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
    # a table (a CSV or Parquet time series, tasks/tables.py): the columns it is cut from
    # (comma-separated names; x_cols unset: the targets' own past), the time column it is
    # sorted by and the series id, the forecast horizon (steps after the window's last row),
    # and how it was split ("time": 60/20/20 by the target's time, set by resolution)
    x_cols: str | None = _in(TASK)
    y_cols: str | None = _in(TASK)
    time_col: str | None = _in(TASK)
    series_col: str | None = _in(TASK)
    horizon: int | None = _in(TASK)
    split: str | None = _in(TASK)
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


def _positive_fields(obj, names) -> None:
    for name in names:
        v = getattr(obj, name)
        if v is not None and not v > 0:
            raise UsageError(f"{name} must be positive, got {v}")


def _derived(name: str, group: str, doc: str, **defaults: Any) -> type:
    """A frozen dataclass of RunConfig's `group` fields, with their types and defaults (or
    `defaults` where the part needs a value the config leaves to resolution)."""
    from dataclasses import make_dataclass, replace

    specs = []
    for f in _group(group):
        specs.append((f.name, f.type, field(default=defaults.get(f.name, f.default))))
    positive = [n for n, *_ in specs if n in POSITIVE]

    def post_init(self):
        _positive_fields(self, positive)

    def with_(self, **kw):
        return replace(self, **kw)

    ns = {"__doc__": doc, "__post_init__": post_init, "with_": with_}
    cls = make_dataclass(name, specs, frozen=True, namespace=ns)
    cls.__module__ = __name__  # pickled by name (sweep workers receive them)
    return cls


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
    "lr_decay",
    "subset",
)
# A model is built for a concrete length: the config's None (the task's T) is resolved first.
ModelArgs = _derived(
    "ModelArgs",
    MODEL,
    "The model's hyperparameters: RunConfig's model fields (each family reads the ones it "
    "needs). seq_len is the task's T (IndRNN's bound M^(1/T) and a TCN's depth depend on it).",
    seq_len=100,
)
TaskArgs = _derived(
    "TaskArgs",
    TASK,
    "The task's options: RunConfig's task fields (seq_len None: the task's default T).",
)
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
)
# Later fields whose value is what every run before the field computed: it hashes as unset,
# so an explicit symbols=tokens copy run is the same experiment as one stored before (and a
# teacher_kind=tanh teacher run as one from before the field)
AS_BEFORE = {"symbols": "tokens", "teacher_kind": "tanh"}
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


_HINTS = typing.get_type_hints(RunConfig)

# Where a family or a paper gives a default (the papers' setups, Li et al., Bai et al., Miller
# & Hardt), sized so that `seqbench train` with
# no other flag finishes in minutes on a 2-core CPU. `steps` and `lr` are tuned per pair.
PAIR_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    # IndRNN adding, as the authors' adding script (IndRNN_Theano_Lasagne adding/adding.py)
    # trains it: 2×128, Adam 2e-4, batch 32, an element-wise clip at 10 and no norm clip, lr
    # ÷10 after every 20,100 steps (its `count > 200` evaluations of 100). Its clip is on each
    # step's pre-activation gradient, ours on each parameter's; neither fires on this task.
    # Its markers, one in each half, are a task field (`marker=halves`), not a model's
    # default: the task stays the task whatever model runs it. seqbench's earlier variant (a
    # norm clip at 10, batch 50 as in the uRNN setup) is `--batch-size 50 --set clip=10
    # --set clip_value=none`.
    ("indrnn", "adding"): {
        "layers": 2,
        "hidden": 128,
        "lr": 2e-4,
        "clip_value": 10.0,
        "lr_decay_every": 20100,
    },
    # IRNN adding: the same script's settings for its IRNN baseline (`--model irnn`)
    ("irnn", "adding"): {"lr": 2e-4, "clip_value": 10.0, "lr_decay_every": 20100},
    # RNN/LSTM/GRU adding: width 64 rather than the paper's 128, which is ~7x slower per step
    # with oneDNN on a 2-core CPU; an LSTM-64 leaves the 1/6 plateau after ~2500 steps.
    ("lstm", "adding"): {"hidden": 64, "lr": 2e-3, "clip": 10.0, "batch_size": 50, "steps": 5000},
    ("rnn", "adding"): {"hidden": 64, "lr": 2e-3, "clip": 10.0, "batch_size": 50, "steps": 5000},
    ("gru", "adding"): {"hidden": 64, "lr": 2e-3, "clip": 10.0, "batch_size": 50, "steps": 5000},
    # IndRNN on pixel sequences: the batch-normalised network of the authors' sequential-MNIST
    # script (M = 5, Adam 2e-4, dropout 0.1, weight decay 1e-4 off u and the biases, gradients
    # clamped to ±10), 2 layers rather than its 6. Without batch norm the N(0, 0.001) input
    # weights leave the features too small to learn from (7.5% test accuracy on digits).
    **{
        ("indrnn", t): {
            "deep": True,
            "lr": 2e-4,
            "magnitude": 5.0,
            "dropout": 0.1,
            "weight_decay": 1e-4,
            "clip_value": 10.0,
        }
        for t in ("digits", "pdigits", "fashion", "pfashion")
    },
    # TCN (Bai et al.): adding K=7, 30 channels, Adam 4e-3; copy K=8, 10 channels, RMSprop 5e-4;
    # sequential MNIST K=7, 25 channels, Adam 2e-3; music K=5, 150 ch, clip 0.2.
    # Adding: from the reference init the TCN left the 1/6 plateau by step 1600 at T=200 (the
    # paper-text init had kept it there past 6500); 8000 steps leave a margin for the seeds.
    ("tcn", "adding"): {"hidden": 30, "kernel_size": 7, "lr": 4e-3, "steps": 8000},
    # copy: 8 levels as in the reference script (receptive field 3571), not the fewest that
    # cover T: with 4 levels (211 ≥ T = 200) it stays at the memoryless baseline for 4000
    # steps (benchmarks/tcn_reference.py --task copy). No clip: the script's --clip 1 is
    # applied before loss.backward(), to cleared gradients, so it never clips; --clip 1 is
    # the clip its text implies.
    ("tcn", "copy"): {
        "hidden": 10,
        "kernel_size": 8,
        "levels": 8,
        "optimizer": "rmsprop",
        "lr": 5e-4,
    },
    ("tcn", "digits"): {"hidden": 25, "kernel_size": 7, "lr": 2e-3},
    ("tcn", "pdigits"): {"hidden": 25, "kernel_size": 7, "lr": 2e-3},
    ("tcn", "fashion"): {"hidden": 25, "kernel_size": 7, "lr": 2e-3},
    ("tcn", "pfashion"): {"hidden": 25, "kernel_size": 7, "lr": 2e-3},
    ("tcn", "chorales"): {
        "lr": 1e-3,
        "hidden": 150,
        "kernel_size": 5,
        "levels": 4,
        "clip": 0.2,
        "dropout": 0.25,
    },
    ("tcn", "ptb-char"): {"hidden": 450, "kernel_size": 3, "levels": 3},
    # Miller & Hardt: polyphonic music with 256 hidden units.
    ("lstm", "chorales"): {"hidden": 256},
}
TASK_DEFAULTS: dict[str, dict[str, Any]] = {
    "adding": {"steps": 3000},
    # copy: the reference code (locuslab/TCN copy_memory) feeds each symbol's value as one
    # float channel; symbols=tokens embeds them (seqbench's variant)
    "copy": {"steps": 2000, "symbols": "float"},
    "teacher": {"steps": 1000},
    "digits": {"steps": 2000, "batch_size": 32},
    "pdigits": {"steps": 2000, "batch_size": 32},
    "fashion": {"steps": 1000},
    "pfashion": {"steps": 1000},
    # chorales: Adam 1e-2 (1e-3, the global default, left an RNN-64 and an LSTM-64 at the
    # context-free baseline after 1000 steps, 13.0 nats; 3e-3 reached 11.7-12.1, 1e-2 10.3-10.5)
    "chorales": {"steps": 1000, "batch_size": 16, "lr": 1e-2},
    "ptb-char": {"steps": 1000},
    "ptb-word": {"steps": 1000},
    "text": {"steps": 1000},
    **{f"file-{kind}": {"steps": 1000} for kind in ("regression", "classification", "next-token")},
}


def field_type(name: str) -> tuple[type, bool]:
    """(the base type, whether None is allowed) of RunConfig field `name`, read from its
    annotation (`int | None` -> (int, True))."""
    hint = _HINTS[name]
    args = typing.get_args(hint)
    if args and type(None) in args:
        (base,) = [a for a in args if a is not type(None)]
        return typing.get_origin(base) or base, True
    return typing.get_origin(hint) or hint, False


def coerce(name: str, raw: Any) -> Any:
    """Convert a --set / TOML value to the type of RunConfig field `name`."""
    if name not in FIELDS:
        from seqbench.errors import UnknownNameError

        raise UnknownNameError("config field", name, [n for n in FIELDS if n != "tags"])
    base, nullable = field_type(name)
    if not isinstance(raw, str) or base in (str, dict):
        return _typed(name, base, nullable, raw)
    if raw.lower() in ("none", "null", "") and nullable:
        return None
    try:
        if base is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        return base(raw)
    except ValueError:
        raise UsageError(f"{name} must be {_KINDS[base]}, got {raw!r}") from None


_KINDS = {
    int: "an integer",
    float: "a number",
    bool: "true or false",
    str: "a string",
    dict: "a table",
}


def _typed(name: str, base: type, nullable: bool, raw: Any) -> Any:
    """A value that already has a type (TOML, the Python API): check it against the field's
    type, widening an integer to a float field. The message names the kind expected."""
    if name == "tags":
        if not isinstance(raw, dict):
            raise UsageError("tags must be a table of key = value")
        return {str(k): str(v) for k, v in raw.items()}
    if raw is None and nullable:
        return None
    ok = isinstance(raw, base) and not (isinstance(raw, bool) and base is not bool)
    if base is float:
        ok = isinstance(raw, (int, float)) and not isinstance(raw, bool)
    if not ok:
        shown = repr(raw) if len(repr(raw)) <= 40 else repr(raw)[:37] + "..."
        kind = _KINDS[base] + (" or none" if nullable else "")
        raise UsageError(f"{name} must be {kind}, got {type(raw).__name__} {shown}")
    return float(raw) if base is float else raw


def to_toml(cfg: RunConfig) -> str:
    """The config as a TOML file that `train --config` reads back to the same config: every
    field at top level (an unset one, None, is left out: it is the default), tags in [tags]."""
    lines = []
    for name, value in cfg.to_dict().items():
        if name == "tags" or value is None:
            continue
        lines.append(f"{name} = {_toml_value(value)}")
    if cfg.tags:
        lines += [
            "",
            "[tags]",
            *(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in cfg.tags.items()),
        ]
    return "\n".join(lines) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # finite (validated): a TOML float
    if isinstance(v, int):
        return str(v)
    return json.dumps(str(v))  # a TOML basic string


def split_list(values: str | list[str] | None) -> list[str]:
    """The one list rule of seqbench's flags: comma-separated, or the flag repeated, or both
    ('rnn,lstm' = ['rnn', 'lstm'] = ['rnn', 'lstm,']); items stripped, empty ones dropped."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else values
    return [v.strip() for item in items for v in str(item).split(",") if v.strip()]


def split_assignment(item: str, what: str = "--set", form: str = "key=value") -> tuple[str, str]:
    """'key=value' -> ('key', 'value'), both stripped; a one-line UsageError naming the flag
    without an '=' or a key."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{what} expects {form}, got {item!r}")
    return key.strip(), value.strip()


def parse_assignments(items: list[str] | None, what: str = "--set") -> dict[str, Any]:
    return dict(split_assignment(item, what) for item in items or [])


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a config file: top-level keys are RunConfig fields; [tags] is a table."""
    p = Path(path)
    if not p.is_file():
        raise SeqbenchError(f"config file {str(p)!r} not found")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"config file {str(p)!r} does not parse: {e}") from None
    return {k: coerce(k, v) for k, v in data.items()}


# Float fields: every one must be finite (json has no Infinity, and an inf lr is no experiment).
FLOAT_FIELDS = (
    "lr",
    "clip",
    "clip_value",
    "lr_decay",
    "weight_decay",
    "lam",
    "dropout",
    "magnitude",
    "forget_bias",
    "forget_cap",
    "teacher_lam",
)
MAX_SEED = 2**32 - 1  # numpy's seeds (the tasks' data) are 32-bit
# past this Adam's first step, lr / (1 - beta1), leaves float32 and torch raises instead of
# the run diverging (1e12 still diverges, as a result should)
MAX_LR = 1e30
MAX_INT = 2**63 - 1  # what the store's integer columns and torch's int64 hold
# Structural sizes past any experiment's (deep IndRNN: 21 layers; a TCN with 40 levels sees
# 2^40 steps): a larger value is a typo, and building it would hang before any estimate.
LIMITS = {
    "layers": 1000,
    "levels": 40,
    "kernel_size": 10_000,
    "heads": 4096,
    # widths and lengths past any that fits in memory: refused before a model is built (a
    # smaller but still too large one meets the memory estimate)
    "hidden": 2**31,
    "batch_size": 2**31,
    "seq_len": 2**31,
    "eval_size": 2**31,
    "params": 2**48,
}
FLOAT32_MAX = 3.4028234663852886e38


def check_label(what: str, name: str) -> str:
    """A name people give (a run, a sweep, a baseline): 1-200 printable characters, not all
    spaces; else a one-line UsageError."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or not name.isprintable():
        raise UsageError(f"a {what} name is 1-200 printable characters, got {name!r}")
    return name


def check_fields(cfg: RunConfig) -> None:
    """The checks of a config's fields that need no model or task (finite, in range, one of
    the choices); configure.validate adds the family's and the task's."""
    import math

    for name in FLOAT_FIELDS:
        v = getattr(cfg, name)
        if v is not None and not math.isfinite(v):
            raise UsageError(f"{name} must be a finite number, got {v}")
        if v is not None and abs(v) > FLOAT32_MAX:  # the optimiser works in float32
            raise UsageError(f"{name} = {v} is beyond float32's range (±{FLOAT32_MAX:.3g})")

    from dataclasses import fields

    for f in fields(cfg):
        v = getattr(cfg, f.name)
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
            raise UsageError(f"{f.name} = {v} does not fit in a 64-bit integer")
    _positive_fields(cfg, POSITIVE)
    if cfg.lr is not None and cfg.lr > MAX_LR:
        raise UsageError(f"lr must be at most {MAX_LR:g}, got {cfg.lr:g}")
    for name, most in LIMITS.items():
        v = getattr(cfg, name)
        if v is not None and v > most:
            raise UsageError(f"{name} must be at most {most}, got {v}")
    if cfg.weight_decay < 0:
        raise UsageError(f"weight_decay must be ≥ 0, got {cfg.weight_decay}")
    if not 0 <= cfg.seed <= MAX_SEED:
        raise UsageError(f"seed must be in [0, 2^32), got {cfg.seed}")
    if cfg.split_seed is not None and not 0 <= cfg.split_seed <= MAX_SEED:
        raise UsageError(f"split_seed must be in [0, 2^32), got {cfg.split_seed}")
    if cfg.steps is None and cfg.epochs is None:
        raise UsageError("give --steps or --epochs")
    if cfg.steps is not None and cfg.epochs is not None:
        raise UsageError("give --steps or --epochs, not both")
    if cfg.optimizer not in OPTIMIZERS:
        raise UsageError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {cfg.optimizer!r}")
    if cfg.device not in DEVICES:
        raise UsageError(f"device must be one of {', '.join(DEVICES)}, got {cfg.device!r}")
    if cfg.backend not in BACKENDS:
        raise UsageError(f"backend must be one of {', '.join(BACKENDS)}, got {cfg.backend!r}")
    if cfg.precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}, got {cfg.precision!r}")
    if cfg.init not in INITS:
        raise UsageError(f"init must be one of {', '.join(INITS)}, got {cfg.init!r}")
    if not 0 <= cfg.dropout < 1:
        raise UsageError(f"dropout must be in [0, 1), got {cfg.dropout}")
    if cfg.stable and not 0 < cfg.lam < 1:
        raise UsageError(
            f"--stable needs lam in (0, 1): a λ-contraction with λ ≥ 1 is no stability bound; "
            f"got {cfg.lam:g}"
        )


def digest(d: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of `d`: the one hash of seqbench's configs (a run's, and
    the plain dicts of stress and bench runs)."""
    blob = json.dumps(dict(d), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
