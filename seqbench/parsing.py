"""Config values from text and back, and the limits every field is held to: `--set` and TOML
values converted by each RunConfig field's annotation, the TOML a config is written as, the
list and key=value rules of the flags, and check_fields (the checks that need no family or
task: positive, finite, in range). The ground beside config.py (the schema); configure.py
resolves a config with these."""

from __future__ import annotations

import json
import tomllib
import typing
from pathlib import Path
from typing import Any

from seqbench.config import (
    BACKENDS,
    DEVICES,
    FIELDS,
    INITS,
    OPTIMIZERS,
    POSITIVE,
    PRECISIONS,
    RunConfig,
    TrainArgs,
    check_positive,
)
from seqbench.errors import SeqbenchError, UnknownNameError, UsageError
from seqbench.options import OPTIONS

# every field's annotation, its train part's (TrainArgs) among them
_HINTS = {
    name: hint
    for name, hint in {
        **typing.get_type_hints(RunConfig),
        **typing.get_type_hints(TrainArgs),
    }.items()
    if name not in ("train", "extra")
}


def field_type(name: str) -> tuple[type, bool]:
    """(the base type, whether None is allowed) of RunConfig field `name`, read from its
    annotation (`int | None` -> (int, True)), or of a declared option (nullable unless it is
    a shared one that never was: options.SHARED)."""
    if name in OPTIONS:
        return OPTIONS[name].kind, OPTIONS[name].nullable
    hint = _HINTS[name]
    args = typing.get_args(hint)
    if args and type(None) in args:
        (base,) = [a for a in args if a is not type(None)]
        return typing.get_origin(base) or base, True
    return typing.get_origin(hint) or hint, False


def coerce(name: str, raw: Any) -> Any:
    """Convert a --set / TOML value to the type of RunConfig field `name`."""
    if name not in FIELDS:
        raise UnknownNameError("config field", name, [n for n in FIELDS if n != "tags"])
    base, nullable = field_type(name)
    if not isinstance(raw, str) or base in (str, dict):
        return _typed(name, base, nullable, raw)
    if raw.lower() in ("none", "null", "") and nullable:
        return None
    if name == "steps" and raw.lower() == AUTO:
        return AUTO  # train until converged: configure.resolve makes it a cap (max_steps)
    try:
        if base is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        return base(raw)
    except ValueError:
        kind = _KINDS[base] + (" or auto" if name == "steps" else "")
        raise UsageError(f"{name} must be {kind}, got {raw!r}") from None


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


def split_assignment(item: str, what: str = "`set`", form: str = "key=value") -> tuple[str, str]:
    """'key=value' -> ('key', 'value'), both stripped; a one-line UsageError naming the flag
    without an '=' or a key."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{what} expects {form}, got {item!r}")
    return key.strip(), value.strip()


def parse_assignments(items: list[str] | None, what: str = "`set`") -> dict[str, Any]:
    return dict(split_assignment(item, what) for item in items or [])


def flags_and_sets(flags: dict[str, Any], sets: list[str] | None) -> dict[str, Any]:
    """A command's config fields: its flags (None: not given) and its --set items, one
    dict; a field given both ways is refused rather than one silently winning."""
    overrides = parse_assignments(sets)
    given = {k: v for k, v in flags.items() if v is not None}
    both = sorted(set(given) & set(overrides))
    if both:
        flag = "--" + both[0].replace("_", "-")
        raise UsageError(
            f"{both[0]} is given twice, as {flag} {given[both[0]]} and as `set` "
            f"{both[0]}={overrides[both[0]]}: give one"
        )
    return {**overrides, **given}


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


# Float fields (by annotation): every one must be finite (json has no Infinity, and an inf
# lr is no experiment).
FLOAT_FIELDS = tuple(name for name in _HINTS if field_type(name)[0] is float)
AUTO = "auto"  # `--steps auto`: train until converged (max_steps)
AUTO_CAP = 10  # its cap (max_steps), unless given: this many times the pair's own steps
MAX_SEED = 2**32 - 1  # numpy's seeds (the tasks' data) are 32-bit
# past this Adam's first step, lr / (1 - beta1), leaves float32 and torch raises instead of
# the run diverging (1e12 still diverges, as a result should)
MAX_LR = 1e30
MAX_STEPS = 10**9  # optimiser steps of one run
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
    "eval_batch_size": 2**31,  # past the evaluation set, one batch of the whole set
    # a billion optimiser steps: weeks at the fastest step of any model here (0.2-5 ms)
    "steps": MAX_STEPS,
    "max_steps": MAX_STEPS,
    "eval_every": MAX_STEPS,
    "params": 2**48,
}
FLOAT32_MAX = 3.4028234663852886e38


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

    for name in _HINTS:
        v = getattr(cfg, name)
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
            raise UsageError(f"{name} = {v} does not fit in a 64-bit integer")
    check_positive(cfg, POSITIVE)
    _check_options(cfg)
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
        raise UsageError("give `steps` or `epochs`")
    if cfg.steps is not None and cfg.epochs is not None:
        raise UsageError("give `steps` or `epochs`, not both")
    if cfg.max_steps is not None and cfg.epochs is not None:
        raise UsageError("max_steps (`steps` auto) trains past `steps` until converged; give "
                         "`steps`, not `epochs`, with it")  # fmt: skip
    if cfg.max_steps is not None and cfg.steps is not None and cfg.max_steps < cfg.steps:
        raise UsageError(
            f"max_steps = {cfg.max_steps} is below steps = {cfg.steps}: `steps` auto trains at "
            f"least steps and at most max_steps"
        )
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
    if cfg.lr_plateau is not None and not 0 < cfg.lr_plateau < 1:
        raise UsageError(f"lr_plateau must be in (0, 1): it multiplies lr; got {cfg.lr_plateau:g}")
    if cfg.lr_plateau is not None and cfg.lr_decay_every:
        raise UsageError("give lr_decay_every or lr_plateau, not both: one learning-rate schedule")
    if not 0 <= cfg.dropout < 1:
        raise UsageError(f"dropout must be in [0, 1), got {cfg.dropout}")
    if cfg.stable and not 0 < cfg.lam < 1:
        raise UsageError(
            f"`stable` needs lam in (0, 1): a λ-contraction with λ ≥ 1 is no stability bound; "
            f"got {cfg.lam:g}"
        )


def _check_options(cfg: RunConfig) -> None:
    """A config's options: each declared by a family or task (options.OPTIONS), of its kind,
    positive where it says so, finite where it is a number."""
    import math

    for name, v in cfg.extra:
        if name not in OPTIONS:
            raise UnknownNameError("config field", name, [n for n in FIELDS if n != "tags"])
        option = OPTIONS[name]
        v = _typed(name, option.kind, True, v)
        if option.kind is float and not math.isfinite(v):
            raise UsageError(f"{name} must be a finite number, got {v}")
        if option.kind is float and abs(v) > FLOAT32_MAX:
            raise UsageError(f"{name} = {v} is beyond float32's range (±{FLOAT32_MAX:.3g})")
        if option.kind is int and abs(v) > MAX_INT:
            raise UsageError(f"{name} = {v} does not fit in a 64-bit integer")
        if option.positive and not v > 0:
            raise UsageError(f"{name} must be positive, got {v}")
