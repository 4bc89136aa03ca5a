"""Model registry: name -> backbone builder, description and family defaults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seqbench.errors import UsageError
from seqbench.registry import Registry


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    recurrent: bool
    build: Callable[..., Any]  # (in_dim, ModelArgs) -> Backbone
    defaults: dict[str, Any] = field(default_factory=dict)


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


for _spec in (
    ModelSpec("rnn", "Elman RNN (tanh or relu), torch.nn fused", True, _torch_rnn("rnn")),
    ModelSpec("lstm", "LSTM, torch.nn fused (cuDNN / oneDNN)", True, _torch_rnn("lstm")),
    ModelSpec("gru", "GRU, torch.nn fused (cuDNN / oneDNN)", True, _torch_rnn("gru")),
    ModelSpec(
        "indrnn",
        "IndRNN (Li et al. 2018): h = relu(Wx + u ⊙ h), |u| ≤ M^(1/T)",
        True,
        _indrnn,
        {"layers": 2},
    ),
    ModelSpec(
        "tcn",
        "Temporal convolutional network (Bai et al. 2018), context k = receptive field",
        False,
        _tcn,
        {"hidden": 30, "kernel_size": 7},
    ),
    ModelSpec(
        "gcnn",
        "Gated convolutional network (Dauphin et al. 2017), context k",
        False,
        _gcnn,
        {"hidden": 64, "kernel_size": 5},
    ),
    ModelSpec(
        "window",
        "Truncated recurrent model (Miller & Hardt): base model on the last k inputs",
        False,
        _window,
    ),
    ModelSpec(
        "transformer",
        "Causal transformer with attention restricted to the last k positions",
        False,
        _transformer,
        {"hidden": 64, "layers": 2},
    ),
):
    MODELS.register(_spec.name, _spec)


def make_backbone(name: str, in_dim: int, args):
    """Build the backbone `name` with `args` (a ModelArgs) for inputs of width in_dim."""
    spec = MODELS.get(name)
    if args.hidden <= 0:
        raise UsageError(f"hidden must be positive, got {args.hidden}")
    if args.layers <= 0:
        raise UsageError(f"layers must be positive, got {args.layers}")
    if args.k is not None and args.k <= 0:
        raise UsageError(f"k must be positive, got {args.k}")
    if args.seq_len <= 0:
        raise UsageError(f"seq_len must be positive, got {args.seq_len}")
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

    def n_params(h: int) -> int:
        with torch.device("meta"):
            a = args.with_(hidden=h)
            if name == "transformer":
                a = a.with_(hidden=max(a.heads, h - h % a.heads))
            return count_params(build_model(name, task, a))

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
    if name == "transformer":
        best = max(args.heads, best - best % args.heads)
    got = n_params(best)
    if abs(got - target) > tol * target:
        raise UsageError(
            f"{name}: no width gives {target} parameters within {tol:.0%} (closest: {got} "
            f"at hidden={best})"
        )
    return best
