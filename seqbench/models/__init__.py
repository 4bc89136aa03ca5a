"""Model registry: name -> backbone builder, description and family defaults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seqbench.errors import UsageError
from seqbench.registry import Registry


@dataclass(frozen=True)
class ModelSpec:
    """What the rest of seqbench may know about a model family, without importing torch.

    stable: it has a stability projection (Backbone.project_), so --stable applies.
    wraps_base: it runs another registered model, named by the `base` field (window).
    indrnn_kernel: it runs the IndRNN recurrence, whose `backend` must exist on the device.
    activation_units: activations kept per hidden unit and step for the backward (a rough
        upper estimate, for the memory check before a run).
    width_multiple_of: the config field the width must be a multiple of (transformer: heads).
    check: the family's own config checks (a RunConfig or ModelArgs in, UsageError out).
    no_decay: parameter names (the last dotted part) that the family's reference code keeps
        out of weight decay (IndRNN: u and every bias).
    small_steps: its work is a chain of one small matmul per time step (torch's fused RNN,
        LSTM, GRU), which a second CPU thread does not speed up at small batch × width
        (benchmarks/threads.py): the thread policy gives such steps one thread.
    """

    name: str
    description: str
    recurrent: bool
    build: Callable[..., Any]  # (in_dim, ModelArgs) -> Backbone
    defaults: dict[str, Any] = field(default_factory=dict)
    stable: bool = False
    wraps_base: bool = False
    indrnn_kernel: bool = False
    activation_units: int = 12
    width_multiple_of: str | None = None
    check: Callable[[Any], None] | None = None
    no_decay: tuple[str, ...] = ()
    small_steps: bool = False


MODELS: Registry[ModelSpec] = Registry("model")


def _torch_rnn(kind):
    def build(in_dim, args):
        from seqbench.models.recurrent import TorchRecurrent

        return TorchRecurrent(kind, in_dim, args)

    return build


def _indrnn(in_dim, args):
    from seqbench.models.recurrent import IndRNN

    return IndRNN(in_dim, args)


def _tcn(in_dim, args):
    from seqbench.models.conv import TCN

    return TCN(in_dim, args)


def _gcnn(in_dim, args):
    from seqbench.models.conv import GatedCNN

    return GatedCNN(in_dim, args)


def _window(in_dim, args):
    from seqbench.models.window import Window

    return Window(in_dim, args, make_backbone)


def _transformer(in_dim, args):
    from seqbench.models.transformer import WindowTransformer

    return WindowTransformer(in_dim, args)


def _check_rnn(c) -> None:
    if c.nonlinearity not in ("tanh", "relu"):
        raise UsageError(f"rnn nonlinearity must be tanh or relu, got {c.nonlinearity!r}")


def _check_conv(name: str, min_kernel: int):
    def check(c) -> None:
        if c.kernel_size < min_kernel:
            raise UsageError(f"{name}: kernel_size must be at least {min_kernel}")
        if c.levels is not None and c.k is not None:
            raise UsageError(f"{name}: give k (context) or levels, not both")

    return check


def _check_window(c) -> None:
    base = MODELS.get(c.base)
    if not base.recurrent:
        raise UsageError(
            f"window: base must be a recurrent model (rnn, lstm, gru, indrnn), got {c.base!r}"
        )
    if base.check is not None:
        base.check(c)


def _check_transformer(c) -> None:
    if c.hidden % c.heads:
        raise UsageError(f"transformer: hidden ({c.hidden}) must divide by heads ({c.heads})")


for _spec in (
    ModelSpec(
        "rnn",
        "Elman RNN (tanh or relu), torch.nn fused",
        True,
        _torch_rnn("rnn"),
        stable=True,
        activation_units=3,
        check=_check_rnn,
        small_steps=True,
    ),
    ModelSpec(
        "lstm",
        "LSTM, torch.nn fused (cuDNN / oneDNN)",
        True,
        _torch_rnn("lstm"),
        stable=True,
        small_steps=True,
    ),
    ModelSpec(
        "gru",
        "GRU, torch.nn fused (cuDNN / oneDNN)",
        True,
        _torch_rnn("gru"),
        activation_units=10,
        small_steps=True,
    ),
    ModelSpec(
        "indrnn",
        "IndRNN (Li et al. 2018): h = relu(Wx + u ⊙ h), |u| ≤ M^(1/T)",
        True,
        _indrnn,
        {"layers": 2},
        stable=True,
        indrnn_kernel=True,
        activation_units=4,
        no_decay=("u", "bias"),  # the authors' scripts: no decay on weight_hh or any bias
    ),
    ModelSpec(
        "tcn",
        "Temporal convolutional network (Bai et al. 2018), context k = receptive field",
        False,
        _tcn,
        {"hidden": 30, "kernel_size": 7},
        activation_units=8,
        check=_check_conv("tcn", 1),
    ),
    ModelSpec(
        "gcnn",
        "Gated convolutional network (Dauphin et al. 2017), context k",
        False,
        _gcnn,
        {"hidden": 64, "kernel_size": 5},
        activation_units=6,
        check=_check_conv("gcnn", 2),
    ),
    ModelSpec(
        "window",
        "Truncated recurrent model (Miller & Hardt): base model on the last k inputs",
        False,
        _window,
        wraps_base=True,
        check=_check_window,
    ),
    ModelSpec(
        "transformer",
        "Causal transformer with attention restricted to the last k positions",
        False,
        _transformer,
        {"hidden": 64, "layers": 2},
        width_multiple_of="heads",
        check=_check_transformer,
    ),
):
    MODELS.register(_spec.name, _spec)


def base_spec(c) -> ModelSpec:
    """The spec of the family that does the recurrent work: the window's base, else the
    model's own."""
    spec = MODELS.get(c.model)
    return MODELS.get(c.base) if spec.wraps_base else spec


def validate(c) -> None:
    """The model checks of a config (torch-free): the family's own, and --stable only where
    the family (or a window's base) has a stability projection."""
    spec = MODELS.get(c.model)
    if spec.check is not None:
        spec.check(c)
    if c.stable and not base_spec(c).stable:
        stable = [m for m in MODELS if MODELS.get(m).stable]
        wrappers = [m for m in MODELS if MODELS.get(m).wraps_base]
        if spec.wraps_base:
            raise UsageError(
                f"--stable on a {c.model} model needs a base with a stability condition "
                f"({', '.join(stable)}), not {c.base}"
            )
        raise UsageError(
            f"--stable is defined for {', '.join(stable)} (and {', '.join(wrappers)} over "
            f"them), not {c.model}"
        )


def uses_indrnn_kernel(c) -> bool:
    """Whether the config's model runs the IndRNN recurrence (its `backend` then matters)."""
    return base_spec(c).indrnn_kernel


def param_groups(c, model) -> list[dict[str, Any]]:
    """The optimiser's parameter groups for a config's model: `weight_decay` on every parameter
    but those its family exempts (ModelSpec.no_decay; a window's base decides)."""
    exempt = base_spec(c).no_decay
    decay, free = [], []
    for name, p in model.named_parameters():
        (free if name.rsplit(".", 1)[-1] in exempt else decay).append(p)
    groups = [{"params": decay, "weight_decay": c.weight_decay}]
    return groups + ([{"params": free, "weight_decay": 0.0}] if free else [])


def activation_bytes(c, B: int, T: int, H: int, D: int, layers: int, itemsize: int) -> int:
    """A rough upper estimate of the memory one forward + backward of length T needs."""
    units = base_spec(c).activation_units
    return B * T * (H * units * max(layers, 1) + D) * itemsize * 2


def make_backbone(name: str, in_dim: int, args):
    """Build the backbone `name` with `args` (a ModelArgs) for inputs of width in_dim."""
    spec = MODELS.get(name)
    if spec.check is not None:
        spec.check(args)
    return spec.build(in_dim, args)


def build_model(name: str, task, args):
    """The full SequenceModel of `name` for `task` (a Task): embedding, backbone and head."""
    from torch import nn

    from seqbench.models.base import SequenceModel

    embed = nn.Embedding(task.vocab, task.in_dim) if task.vocab else None
    backbone = make_backbone(name, task.in_dim, args)
    return SequenceModel(backbone, task.out_dim, task.readout, embed)


def fit_hidden(name: str, task, args, target: int, tol: float = 0.05) -> int:
    """The width whose parameter count is closest to `target` (within tol, else an error)."""
    import torch

    from seqbench.models.base import count_params

    spec = MODELS.get(name)

    def n_params(h: int) -> int:
        with torch.device("meta"):
            return count_params(build_model(name, task, args.with_(hidden=rounded(h))))

    def rounded(h: int) -> int:  # the width rule of the family, if any
        if spec.width_multiple_of is None:
            return h
        m = getattr(args, spec.width_multiple_of)
        return max(m, h - h % m)

    lo, hi = 1, 8192
    if n_params(lo) > target:
        raise UsageError(f"{name}: even width 1 has more than {target} parameters")
    while lo < hi:  # smallest h with n_params(h) >= target
        mid = (lo + hi) // 2
        if n_params(mid) < target:
            lo = mid + 1
        else:
            hi = mid
    best = min((h for h in (lo - 1, lo) if h >= 1), key=lambda h: abs(n_params(h) - target))
    best = rounded(best)
    got = n_params(best)
    if abs(got - target) > tol * target:
        raise UsageError(
            f"{name}: no width gives {target} parameters within {tol:.0%} (closest: {got} "
            f"at hidden={best})"
        )
    return best
