"""What seqbench knows of a model family without importing torch: the ModelSpec each family
declares in its own file (models/families/), the MODELS registry they are collected into
(models/__init__.py), and what several families share: the lazy builder, the convolutional
and multi-head checks, and torch's fused RNNs' setup on adding."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seqbench.errors import UsageError
from seqbench.options import MODEL, Option
from seqbench.registry import Registry

# the state per layer of a diagonal SSM, an option of each family that has one, which its
# state_units declares (lru: N complex modes; s4d: N/2 complex modes per channel, as its
# reference's N; mamba: d_state per channel); unset: the family's default
D_STATE = Option(
    "d_state",
    int,
    MODEL,
    "a diagonal SSM's state per layer (lru: N complex modes; s4d: N/2 complex modes per "
    "channel; mamba: per channel); unset: the family's default",
    positive=True,
)
# The shared model fields several families read (options.SHARED: each at the value every run
# was stored with); a family's own (magnitude, forget_bias, init, base) is in its file.
DROPOUT = Option("dropout", float, MODEL, "dropout probability, in [0, 1) (0)",
                 nullable=False)  # fmt: skip
KERNEL_SIZE = Option("kernel_size", int, MODEL, "a convolution's kernel size (7)",
                     positive=True)  # fmt: skip
LEVELS = Option("levels", int, MODEL, "a convolutional stack's depth (unset: from k or T)",
                positive=True)  # fmt: skip
HEADS = Option("heads", int, MODEL, "attention heads, which divide hidden (4)", positive=True,
               nullable=False)  # fmt: skip
BACKEND = Option("backend", str, MODEL, "the recurrence's kernel: auto, torch, cpu, numba or "
                 "triton (auto)", nullable=False)  # fmt: skip
NONLINEARITY = Option("nonlinearity", str, MODEL, "the recurrence's nonlinearity: tanh or "
                      "relu (tanh)", nullable=False)  # fmt: skip


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
    options: config fields of the family's own (options.Option, group MODEL), declared here
        rather than in RunConfig: its network reads them off its ModelArgs, its `defaults`
        may set them, and every other family refuses them. The shared ones (options.SHARED:
        dropout, kernel_size, heads …, declared above) were RunConfig's when stores had runs.
    reads: the shared fields (options.SHARED) a plugin's network reads without declaring them
        as options (e.g. ("dropout",)); any other given to the family is refused, naming the
        families that read it (configure.check_read). None: not declared, every shared field
        accepted; a built-in declares () and its options. tests/models/test_reads.py
        measures each built-in's from the outside: an option it reads changes the network
        built, one it does not leaves it bit for bit the same.
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
    options: tuple[Any, ...] = ()
    reads: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.state_units is not None and D_STATE not in self.options:  # a state it sizes
            object.__setattr__(self, "options", (*self.options, D_STATE))


MODELS: Registry[ModelSpec] = Registry("model", "model", ModelSpec)


def builder(module: str, cls: str, *leading: Any) -> Callable[..., Any]:
    """A ModelSpec.build that imports the family's network (and torch) only when a model is
    built: `cls` of `module`, called with `leading`, the input width and the ModelArgs."""

    def build(in_dim, args):
        return getattr(importlib.import_module(module), cls)(*leading, in_dim, args)

    return build


def make_backbone(name: str, in_dim: int, args):
    """Build the backbone `name` with `args` (a ModelArgs) for inputs of width in_dim."""
    spec = MODELS.get(name)
    if spec.check is not None:
        spec.check(args)
    return spec.build(in_dim, args)


def check_heads(name: str) -> Callable[[Any], None]:
    """The check of a multi-head family: its width divides by its heads."""

    def check(c) -> None:
        if c.hidden % c.heads:
            raise UsageError(f"{name}: hidden ({c.hidden}) must divide by heads ({c.heads})")

    return check


def check_conv(name: str) -> Callable[[Any], None]:
    """The check of a convolutional family: a kernel that reaches back, and its context given
    as k or as levels, not both."""

    def check(c) -> None:
        if c.kernel_size < 2:  # kernel 1 is a per-step network: it has no context to size
            raise UsageError(f"{name}: kernel_size must be at least 2, got {c.kernel_size}")
        if c.levels is not None and c.k is not None:
            raise UsageError(f"{name}: give k (context) or levels, not both")
        if c.levels is not None and c.levels < 1:
            raise UsageError(f"{name}: levels must be at least 1, got {c.levels}")

    return check


# torch's fused RNN, LSTM and GRU on adding: width 64 rather than the paper's 128, which is ~7x
# slower per step with oneDNN on a 2-core CPU; an LSTM-64 leaves the 1/6 plateau after ~2500
# steps.
TORCH_RNN_ON_ADDING = {"hidden": 64, "lr": 2e-3, "clip": 10.0, "batch_size": 50, "steps": 5000}
