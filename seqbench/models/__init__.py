"""Model registry: name -> backbone builder, description and family defaults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from seqbench.errors import UsageError
from seqbench.models import context as ctx
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
    own_lr: (parameter names, their learning rate as a function of the run's `lr`): the
        parameters the family's reference code trains at a learning rate of their own
        (minimal-LRU: half of it on ν, θ, γ, B; state-spaces/s4's S4D: min(0.001, lr) on A
        and Δ). The rest train at `lr`; a learning-rate decay scales both alike.
    small_steps: its work is a chain of one small matmul per time step (torch's fused RNN,
        LSTM, GRU), which a second CPU thread does not speed up at small batch × width
        (benchmarks/threads.py): the thread policy gives such steps one thread.
    context: a feedforward family's exact context (models/context.py) for a config and the
        steps it is fed, before the cap at those steps; None for a recurrent family, whose
        stored k is its truncation length.
    context_rule: that rule in words, for `seqbench models` and the docs.
    plugin: where a plugin's spec came from ("dist version"), set by seqbench/plugins.py
        when it loads one (None: built in); recorded in each run's config and hash.
    defaults: config fields the family sets on every task (its width, say).
    task_defaults: task name -> config fields the family sets on that task, over the task's
        own defaults (the papers' setups: Li et al.'s IndRNN on adding, Bai et al.'s TCN on
        each of its tasks), sized so that `seqbench train` with no other flag finishes in
        minutes on a 2-core CPU.
    condition: the family's own resolution of a config (a RunConfig in, one out), after the
        defaults and before the checks: the values that follow from others (the LSTM's forget
        cap under --stable).
    state_units: a diagonal SSM's state in the memory estimate: the numbers one sequence
        keeps per time step and layer for its state and the state's gradient (args in: its
        d_state and width) beyond what activation_units × hidden counts at the family's
        default d_state. A family that declares it takes `d_state`; every other family
        refuses the field.
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
    own_lr: tuple[tuple[str, ...], Callable[[float], float]] | None = None
    small_steps: bool = False
    context: Callable[[Any, int], int] | None = None
    context_rule: str = "full backpropagation; k: truncated BPTT of k steps"
    plugin: str | None = None
    task_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    condition: Callable[[Any], Any] | None = None
    state_units: Callable[[Any], int] | None = None


MODELS: Registry[ModelSpec] = Registry("model", "model", ModelSpec)


def _torch_rnn(kind):
    def build(in_dim, args):
        from seqbench.models.recurrent import TorchRecurrent

        return TorchRecurrent(kind, in_dim, args)

    return build


def _irnn(in_dim, args):
    from seqbench.models.recurrent import IRNN

    return IRNN(in_dim, args)


def _check_irnn(c) -> None:
    # a config asking for another nonlinearity is refused; ModelArgs built by hand (without
    # the family's defaults) get the ReLU that IRNN is
    if hasattr(c, "model") and c.nonlinearity != "relu":
        raise UsageError(f"irnn is a ReLU RNN by definition; nonlinearity {c.nonlinearity!r}")


def _indrnn(in_dim, args):
    from seqbench.models.indrnn import IndRNN

    return IndRNN(in_dim, args)


def _tcn(in_dim, args):
    from seqbench.models.tcn import TCN

    return TCN(in_dim, args)


def _gcnn(in_dim, args):
    from seqbench.models.gated_cnn import GatedCNN

    return GatedCNN(in_dim, args)


def _window(in_dim, args):
    from seqbench.models.window import Window

    return Window(in_dim, args, make_backbone)


def _transformer(in_dim, args):
    from seqbench.models.transformer import WindowTransformer

    return WindowTransformer(in_dim, args)


_LRU_SSM = ("nu_log", "theta_log", "gamma_log", "B_re", "B_im")
_S4D_SSM = ("log_dt", "log_A_real", "A_imag")


def _half(lr: float) -> float:
    return 0.5 * lr


def _at_most_1e3(lr: float) -> float:
    return min(1e-3, lr)


def _ssm(cls_name: str):
    """The builder of a family whose class `cls_name` lives in its own file (models/lru.py,
    s4d.py, mamba.py, linear_attention.py)."""
    module = {"LinearAttention": "linear_attention"}.get(cls_name, cls_name.lower())

    def build(in_dim, args):
        import importlib

        return getattr(importlib.import_module(f"seqbench.models.{module}"), cls_name)(in_dim, args)

    return build


def _check_s4d(c) -> None:
    if c.d_state is not None and (c.d_state < 2 or c.d_state % 2):
        raise UsageError(f"s4d: d_state (N, its N/2 complex modes) must be even, got {c.d_state}")


def _check_heads(name: str):
    def check(c) -> None:
        if c.hidden % c.heads:
            raise UsageError(f"{name}: hidden ({c.hidden}) must divide by heads ({c.heads})")

    return check


def lstm_condition(cfg):
    """--stable on an LSTM (or a window over one) caps its forget gate: forget_cap defaults to
    λ/2 (the recurrent blocks get the other half, models/recurrent.lstm_gain), and must lie
    in (0, λ); without --stable it is refused."""
    if not cfg.stable:
        if cfg.forget_cap is not None:
            raise UsageError("forget_cap is the forget-gate cap of --stable on an lstm")
        return cfg
    cap = cfg.lam / 2 if cfg.forget_cap is None else cfg.forget_cap
    if not 0 < cap < cfg.lam:
        raise UsageError(f"forget_cap must be in (0, lam = {cfg.lam:g}), got {cap:g}")
    return replace(cfg, forget_cap=cap)


# RNN/LSTM/GRU on adding: width 64 rather than the paper's 128, which is ~7x slower per step
# with oneDNN on a 2-core CPU; an LSTM-64 leaves the 1/6 plateau after ~2500 steps.
_ADDING_64 = {"hidden": 64, "lr": 2e-3, "clip": 10.0, "batch_size": 50, "steps": 5000}


def _check_rnn(c) -> None:
    if c.nonlinearity not in ("tanh", "relu"):
        raise UsageError(f"rnn nonlinearity must be tanh or relu, got {c.nonlinearity!r}")


def _check_conv(name: str):
    def check(c) -> None:
        if c.kernel_size < 2:  # kernel 1 is a per-step network: it has no context to size
            raise UsageError(f"{name}: kernel_size must be at least 2, got {c.kernel_size}")
        if c.levels is not None and c.k is not None:
            raise UsageError(f"{name}: give k (context) or levels, not both")
        if c.levels is not None and c.levels < 1:
            raise UsageError(f"{name}: levels must be at least 1, got {c.levels}")

    return check


def _check_window(c) -> None:
    base = MODELS.get(c.base)
    if not base.recurrent:
        recurrent = ", ".join(m for m in MODELS if MODELS.get(m).recurrent)
        raise UsageError(f"window: base must be a recurrent model ({recurrent}), got {c.base!r}")
    if base.check is not None:
        base.check(c)


def _check_transformer(c) -> None:
    if c.layers is None or c.layers < 1:
        raise UsageError(f"transformer: layers must be at least 1, got {c.layers}")
    _check_heads("transformer")(c)


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
        task_defaults={"adding": _ADDING_64},
    ),
    ModelSpec(
        "lstm",
        "LSTM, torch.nn fused (cuDNN / oneDNN)",
        True,
        _torch_rnn("lstm"),
        stable=True,
        small_steps=True,
        # Miller & Hardt: polyphonic music with 256 hidden units
        task_defaults={"adding": _ADDING_64, "chorales": {"hidden": 256}},
        condition=lstm_condition,
    ),
    ModelSpec(
        "gru",
        "GRU, torch.nn fused (cuDNN / oneDNN)",
        True,
        _torch_rnn("gru"),
        activation_units=10,
        small_steps=True,
        task_defaults={"adding": _ADDING_64},
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
        task_defaults={
            # adding, as the authors' adding script (IndRNN_Theano_Lasagne adding/adding.py)
            # trains it: 2×128, Adam 2e-4, batch 32, an element-wise clip at 10 and no norm
            # clip, lr ÷10 after every 20,100 steps (its `count > 200` evaluations of 100).
            # Its clip is on each step's pre-activation gradient, ours on each parameter's;
            # neither fires on this task. Its markers, one in each half, are a task field
            # (`marker=halves`), not a model's default: the task stays the task whatever model
            # runs it. seqbench's earlier variant (a norm clip at 10, batch 50 as in the uRNN
            # setup) is `--batch-size 50 --set clip=10 --set clip_value=none`.
            "adding": {
                "layers": 2,
                "hidden": 128,
                "lr": 2e-4,
                "clip_value": 10.0,
                "lr_decay_every": 20100,
            },
            # pixel sequences: the batch-normalised network of the authors' sequential-MNIST
            # script (M = 5, Adam 2e-4, dropout 0.1, weight decay 1e-4 off u and the biases,
            # gradients clamped to ±10), 2 layers rather than its 6. Without batch norm the
            # N(0, 0.001) input weights leave the features too small to learn from (7.5% test
            # accuracy on digits).
            **{
                t: {
                    "deep": True,
                    "lr": 2e-4,
                    "magnitude": 5.0,
                    "dropout": 0.1,
                    "weight_decay": 1e-4,
                    "clip_value": 10.0,
                }
                for t in ("digits", "pdigits", "fashion", "pfashion")
            },
        },
    ),
    ModelSpec(
        "irnn",
        "IRNN (Le et al. 2015): ReLU RNN, identity recurrent init, zero biases",
        True,
        _irnn,
        {"nonlinearity": "relu"},
        stable=True,
        activation_units=3,
        check=_check_irnn,
        small_steps=True,
        # adding: the IndRNN adding script's settings for its IRNN baseline
        task_defaults={"adding": {"lr": 2e-4, "clip_value": 10.0, "lr_decay_every": 20100}},
    ),
    ModelSpec(
        "tcn",
        "Temporal convolutional network (Bai et al. 2018), dilated residual blocks",
        False,
        _tcn,
        {"hidden": 30, "kernel_size": 7},
        activation_units=8,
        check=_check_conv("tcn"),
        context=ctx.tcn_context,
        context_rule="exactly k (last level resized); levels L: 1 + 2(K−1)(2^L − 1); neither: T",
        # Bai et al.: adding K=7, 30 channels, Adam 4e-3; copy K=8, 10 channels, RMSprop 5e-4;
        # sequential MNIST K=7, 25 channels, Adam 2e-3; music K=5, 150 ch, clip 0.2.
        task_defaults={
            # from the reference init the TCN left the 1/6 plateau by step 1600 at T=200 (the
            # paper-text init had kept it there past 6500); 8000 steps leave a margin
            "adding": {"hidden": 30, "kernel_size": 7, "lr": 4e-3, "steps": 8000},
            # 8 levels as in the reference script (receptive field 3571), not the fewest that
            # cover T: with 4 levels (211 ≥ T = 200) it stays at the memoryless baseline for
            # 4000 steps (benchmarks/tcn_reference.py --task copy). No clip: the script's
            # --clip 1 is applied before loss.backward(), to cleared gradients, so it never
            # clips; --clip 1 is the clip its text implies.
            "copy": {
                "hidden": 10,
                "kernel_size": 8,
                "levels": 8,
                "optimizer": "rmsprop",
                "lr": 5e-4,
            },
            **{
                t: {"hidden": 25, "kernel_size": 7, "lr": 2e-3}
                for t in ("digits", "pdigits", "fashion", "pfashion")
            },
            "chorales": {
                "lr": 1e-3,
                "hidden": 150,
                "kernel_size": 5,
                "levels": 4,
                "clip": 0.2,
                "dropout": 0.25,
            },
            "ptb-char": {"hidden": 450, "kernel_size": 3, "levels": 3},
        },
    ),
    ModelSpec(
        "gcnn",
        "Gated convolutional network (Dauphin et al. 2017), context k",
        False,
        _gcnn,
        {"hidden": 64, "kernel_size": 5},
        activation_units=6,
        check=_check_conv("gcnn"),
        context=ctx.gcnn_context,
        context_rule="exactly k (last kernel cropped); levels L: 1 + L(K−1); neither: min(T, 32)",
    ),
    ModelSpec(
        "window",
        "Truncated recurrent model (Miller & Hardt): base model on the last k inputs",
        False,
        _window,
        wraps_base=True,
        check=_check_window,
        context=ctx.window_context,
        context_rule="exactly k (the base run on the last k inputs); no k: min(T, 32)",
    ),
    ModelSpec(
        "transformer",
        "Causal pre-norm transformer, sliding-window attention",
        False,
        _transformer,
        {"hidden": 64, "layers": 2},
        width_multiple_of="heads",
        check=_check_transformer,
        context=ctx.transformer_context,
        context_rule="exactly k (k − 1 split over the layers' windows); no k: T",
    ),
    ModelSpec(
        "lru",
        "Linear Recurrent Unit (Orvieto et al. 2023): complex diagonal, |λ| < 1 by construction",
        True,
        _ssm("LRU"),
        {"hidden": 64, "d_state": 64, "layers": 2},
        stable=True,
        activation_units=16,
        # complex h, its input b and their gradients: 2 × 2 × 2 reals per mode and step,
        # past the default 64 modes that activation_units already covers
        state_units=lambda c, H: 8 * max(0, (c.d_state or 64) - 64),
        # minimal-LRU's optimiser (train_helpers.create_train_state, run_train.py's
        # lr_factor 0.5): Adam without weight decay at half the learning rate on these
        no_decay=_LRU_SSM,
        own_lr=(_LRU_SSM, _half),
    ),
    ModelSpec(
        "s4d",
        "S4D-Lin (Gu et al. 2022): diagonal SSM, trained as an FFT convolution, run as a scan",
        True,
        _ssm("S4D"),
        {"hidden": 64, "d_state": 64, "layers": 2},
        activation_units=8,
        # the kernel's N/2 complex modes per channel (FFT path) or the scan's state (eval):
        # H·N reals a step, with gradients, past the default N = 64
        state_units=lambda c, H: 2 * H * max(0, (c.d_state or 64) - 64),
        check=_check_s4d,
        # s4d.py registers these with weight decay 0 and lr = min(0.001, lr) (example.py)
        no_decay=_S4D_SSM,
        own_lr=(_S4D_SSM, _at_most_1e3),
    ),
    ModelSpec(
        "mamba",
        "Selective SSM (Gu & Dao 2023), plain PyTorch: input-dependent decay exp(Δ·A)",
        True,
        _ssm("Mamba"),
        {"hidden": 64, "d_state": 16, "layers": 2},
        activation_units=110,
        # exp(Δ·A), Δ·B·x and h over (d_inner = 2H) × d_state, with gradients, past the
        # default 16 that activation_units (110 per unit of width) already covers
        state_units=lambda c, H: 12 * H * max(0, (c.d_state or 16) - 16),
        no_decay=("A_log", "D"),  # mamba_simple: _no_weight_decay
    ),
    ModelSpec(
        "linear-attention",
        "Causal linear attention (Katharopoulos et al. 2020): a running sum, elu + 1 features",
        True,
        _ssm("LinearAttention"),
        {"hidden": 64, "layers": 2},
        activation_units=40,
        width_multiple_of="heads",
        check=_check_heads("linear-attention"),
    ),
):
    MODELS.register(_spec.name, _spec)
MODELS.seal()


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
    its base's); forget_cap, the LSTM's, is refused on every other family."""
    spec = base_spec(cfg)
    if spec.condition is not None:
        return spec.condition(cfg)
    if cfg.forget_cap is not None:
        raise UsageError("forget_cap is the forget-gate cap of --stable on an lstm")
    return cfg


def base_spec(c) -> ModelSpec:
    """The spec of the family that does the recurrent work: the window's base, else the
    model's own."""
    spec = MODELS.get(c.model)
    return MODELS.get(c.base) if spec.wraps_base else spec


def validate(c) -> None:
    """The model checks of a config (torch-free): the family's own, d_state only where the
    family (or a window's base) has a state it sizes, and --stable only where the family (or
    a window's base) has a stability projection."""
    spec = MODELS.get(c.model)
    if getattr(c, "d_state", None) is not None and base_spec(c).state_units is None:
        takes = ", ".join(m for m in MODELS if MODELS.get(m).state_units is not None)
        raise UsageError(
            f"d_state sizes a diagonal SSM's state ({takes}); {c.model} has none to size"
        )
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
