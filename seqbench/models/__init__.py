"""Model registry: the built-in families, each declared in its own file (models/families/,
a ModelSpec from models/spec.py), collected into MODELS; and what the rest of seqbench asks
of a config's family: its context, its resolution and checks, its optimiser groups, its
memory estimate, its network and its size for a parameter budget."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from seqbench.errors import UsageError
from seqbench.models import families
from seqbench.models.spec import MODELS, ModelSpec, make_backbone
from seqbench.options import MODEL, OPTIONS, SHARED

__all__ = [
    "MODELS",
    "ModelSpec",
    "activation_bytes",
    "base_spec",
    "build_model",
    "condition",
    "context",
    "count_on_meta",
    "fit_size",
    "make_backbone",
    "param_groups",
    "uses_indrnn_kernel",
    "validate",
]

# the order `seqbench models` lists the built-ins in (their papers' order); a family file not
# named here comes after them, by name
_ORDER = (
    *("rnn", "lstm", "gru", "indrnn", "irnn"),
    *("tcn", "gcnn", "window", "transformer"),
    *("lru", "s4d", "mamba", "linear_attention"),
)


def _collect() -> None:
    """Register the SPEC of every module in models/families/ (torch-free: a family's network
    is imported when a model is built), then seal the registry (what is built in)."""
    found = [m.name for m in pkgutil.iter_modules(families.__path__) if not m.name.startswith("_")]
    rank = {name: i for i, name in enumerate(_ORDER)}
    for name in sorted(found, key=lambda n: (rank.get(n, len(rank)), n)):
        spec = importlib.import_module(f"{families.__name__}.{name}").SPEC
        MODELS.register(spec.name, spec)
    MODELS.seal()


_collect()


def context(c, steps: int) -> int | None:
    """The context a config's model has on sequences of `steps` steps (T, or T + 20 for copy:
    configure.fed_steps): what its run stores as k.

    Feedforward models (built for the config's T): their exact context (ModelSpec.context),
    capped at the steps they are fed, so a model given no k, or a k ≥ T, records its receptive
    field capped there. Recurrent models: the truncation length of backpropagation (None: full
    backpropagation through time)."""
    rule = MODELS.get(c.model).context
    if rule is None:
        return c.k
    return min(rule(c, c.seq_len), steps)


def condition(cfg):
    """The family's own resolution of a resolved config (ModelSpec.condition; a window's is
    its base's). forget_cap, the LSTM's option, is refused on every other family by
    validate, as every option is."""
    spec = base_spec(cfg)
    return spec.condition(cfg) if spec.condition is not None else cfg


def base_spec(c) -> ModelSpec:
    """The spec of the family that does the recurrent work: the window's base, else the
    model's own."""
    spec = MODELS.get(c.model)
    return MODELS.get(c.base) if spec.wraps_base else spec


def reads(model: str, base: str | None = None) -> frozenset[str] | None:
    """The shared model fields (options.SHARED) a plugin family lists as read (ModelSpec.reads;
    a window: its base's too, `base` the base family). None: not declared, every one read.
    Its options (ModelSpec.options) are its own besides."""
    spec = MODELS.get(model)
    if spec.reads is None:
        return None
    out = set(spec.reads)
    if spec.wraps_base and base is not None:
        inner = MODELS.get(base).reads if base in MODELS else ()
        if inner is None:
            return None
        out |= set(inner)
    return frozenset(out)


def validate(c) -> None:
    """The model checks of a config (torch-free): options only on their families (or a
    window over one: d_state where a state is sized), the family's own, and --stable only
    where the family (or a window's base) has a stability projection."""
    spec = MODELS.get(c.model)
    _check_options(c)
    if spec.check is not None:
        spec.check(c)
    if c.stable and not base_spec(c).stable:
        stable = [m for m in MODELS if MODELS.get(m).stable]
        wrappers = [m for m in MODELS if MODELS.get(m).wraps_base]
        if spec.wraps_base:
            raise UsageError(
                f"`stable` on a {c.model} model needs a base with a stability condition "
                f"({', '.join(stable)}), not {c.base}"
            )
        raise UsageError(
            f"`stable` is defined for {', '.join(stable)} (and {', '.join(wrappers)} over "
            f"them), not {c.model}"
        )


def _check_options(c) -> None:
    """A family's options (ModelSpec.options) only on that family, or a window over it. A
    shared one (options.SHARED) is checked where RunConfig's fields were, at resolution
    (configure.check_read): a stored run's own fields are what they were."""
    owners = {c.model, base_spec(c).name}
    for name, _ in getattr(c, "extra", ()):
        option = OPTIONS.get(name)
        if option is None or name in SHARED:
            continue
        if option.group == MODEL and not owners & set(option.owners):
            whose = ", ".join(option.owners)
            raise UsageError(f"{name} is a field of {whose}, not of {c.model}")


def uses_indrnn_kernel(c) -> bool:
    """Whether the config's model runs the IndRNN recurrence (its `backend` then matters)."""
    return base_spec(c).indrnn_kernel


def param_groups(c, model) -> list[dict[str, Any]]:
    """The optimiser's parameter groups for a config's model: `weight_decay` on every parameter
    but those its family exempts (ModelSpec.no_decay), and `lr` on every parameter but those
    its family trains at their own rate (ModelSpec.own_lr); a window's base decides."""
    spec = base_spec(c)
    own_names, own_rate = spec.own_lr or ((), None)
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        last = name.rsplit(".", 1)[-1]
        groups.setdefault((last in spec.no_decay, last in own_names), []).append(p)
    out = []
    for (free, own), params in sorted(groups.items()):
        group: dict[str, Any] = {"params": params, "weight_decay": 0.0 if free else c.weight_decay}
        if own:
            group["lr"] = own_rate(c.lr)
        out.append(group)
    return out


def activation_bytes(c, B: int, T: int, H: int, D: int, layers: int, itemsize: int) -> int:
    """A rough upper estimate of the memory one forward + backward of length T needs: the
    family's activation_units per unit of width, and its state (state_units) where it has
    one, per layer."""
    spec = base_spec(c)
    per_layer = H * spec.activation_units
    if spec.state_units is not None:
        per_layer += spec.state_units(c, H)
    return B * T * (per_layer * max(layers, 1) + D) * itemsize * 2


def build_model(name: str, task, args):
    """The full SequenceModel of `name` for `task` (a Task): embedding, backbone and head."""
    from torch import nn

    from seqbench.models.base import SequenceModel

    embed = nn.Embedding(task.vocab, task.in_dim) if task.vocab else None
    backbone = make_backbone(name, task.in_dim, args)
    return SequenceModel(backbone, task.out_dim, task.readout, embed)


_COUNTS: dict[tuple, int] = {}


def count_on_meta(name: str, task, args) -> int:
    """The parameter count of family `name` built for `task` with ModelArgs `args`, built on
    the meta device (nothing allocated) once per process for each distinct network: what a
    build reads of the task and the arguments are the key, so fit_size's search and the
    memory check before a run share their builds. Raises what the build raises."""
    import torch

    from seqbench.models.base import count_params

    key = (name, task.vocab, task.in_dim, task.out_dim, task.readout, args)
    if key not in _COUNTS:
        if len(_COUNTS) > 4096:
            _COUNTS.clear()
        with torch.device("meta"):
            _COUNTS[key] = count_params(build_model(name, task, args))
    return _COUNTS[key]


def fit_size(name: str, task, args, target: int, tol: float = 0.05) -> dict[str, int]:
    """The size fields that bring the model's parameter count within `tol` of `target`: the
    width, and for a family whose width must be a multiple of another field (transformer:
    heads), that field too when no multiple of its given value lands (fewer heads, down to
    one: a transformer's parameter count does not depend on its heads). The depth is never
    changed: for the convolutional families it is their context k. Refuses, naming the
    budgets that are reachable around the target, when nothing lands.

    Returns {"hidden": H} or {"hidden": H, "heads": h}: the run records what it trained."""
    spec = MODELS.get(name)
    # what build_model reads of the task, read here: a task that loads its data on first use
    # (the text tasks) must not load it under the meta device, or its tensors hold no data
    _ = (task.vocab, task.in_dim, task.out_dim, task.readout)

    def n_params(h: int, extra: dict) -> int:
        return count_on_meta(name, task, args.with_(hidden=h, **extra))

    def bracket(multiple: int, extra: dict) -> list[tuple[int, int]]:
        """(width, count) of the widths (multiples of `multiple`) just below and at-or-above
        the target."""
        lo, hi = 1, 8192 // multiple + 1
        while lo < hi:  # smallest i with n_params(multiple·i) >= target
            mid = (lo + hi) // 2
            if n_params(multiple * mid, extra) < target:
                lo = mid + 1
            else:
                hi = mid
        return [(multiple * i, n_params(multiple * i, extra)) for i in (lo - 1, lo) if i >= 1]

    field_name = spec.width_multiple_of
    given = getattr(args, field_name) if field_name else 1
    options = [d for d in range(given, 0, -1) if given % d == 0] if field_name else [1]
    reachable: set[int] = set()
    for m in options:  # the given heads first, then fewer
        extra = {field_name: m} if field_name else {}
        near = bracket(m, extra)
        reachable |= {n for _, n in near}
        h, got = min(near, key=lambda hn: abs(hn[1] - target))
        if abs(got - target) <= tol * target:
            return {"hidden": h, **extra}
    shown = ", ".join(str(n) for n in sorted(reachable))
    raise UsageError(
        f"{name}: no width gives {target} parameters within {tol:.0%} (the depth is kept: "
        f"it sets the context); the nearest reachable budgets are {shown}"
    )
