"""What a run needs before its first step, and what refuses it before a row is written: its
device and the checks on it (a backend there, fp16 only on CUDA), its precision (autocast and a
gradient scaler), the task and model built from the config with the values derived there (T,
a fitted width, steps from epochs), the memory check, and the optimiser. The training loop
(loop.py), a sweep's preflight, the time probe (probe.py) and stress build a run through here."""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import replace

import torch

from seqbench.config import RunConfig
from seqbench.configure import require_fits
from seqbench.errors import UsageError
from seqbench.models import (
    activation_bytes,
    build_model,
    count_on_meta,
    fit_size,
    param_groups,
    uses_indrnn_kernel,
)
from seqbench.parsing import MAX_STEPS
from seqbench.tasks import make_task


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("`device` cuda: no CUDA GPU is available here (use `device` cpu)")
    return torch.device(name)


def preflight(cfg: RunConfig) -> None:
    """What prepare() checks, without building the model: device, backend, task arguments and
    memory. A sweep runs it on every point before it writes a row."""
    check_device(cfg)
    task = make_task(cfg.task, cfg.task_args())
    if cfg.params is None:
        check_ram(replace(cfg, seq_len=task.seq_len), task)


def prepare(cfg: RunConfig):
    """Build task and model from a config (validating everything a user can get wrong), and
    return the config with the derived values filled in: T, the fitted width, the steps."""
    device = check_device(cfg)
    task = make_task(cfg.task, cfg.task_args())
    cfg = replace(cfg, seq_len=task.seq_len)
    if cfg.params is not None:
        cfg = replace(cfg, **fit_size(cfg.model, task, cfg.model_args(), cfg.params))
    if cfg.epochs is not None:
        n_train = getattr(task, "n_train", None)
        if n_train is None:
            raise UsageError(
                f"`epochs` needs a task with a fixed training set; {cfg.task} draws "
                "fresh data every batch: use `steps`"
            )
        steps = cfg.epochs * math.ceil(n_train / cfg.batch_size)
        if steps > MAX_STEPS:
            raise UsageError(
                f"`epochs` {cfg.epochs} is {steps:,} steps of {cfg.task} ({n_train:,} sequences, "
                f"batch {cfg.batch_size}); a run has at most {MAX_STEPS:,}"
            )
        cfg = replace(cfg, steps=steps)
    check_ram(cfg, task)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, task, cfg.model_args()).to(device)
    return cfg, task, model, device


def check_device(cfg: RunConfig) -> torch.device:
    """The run's device; an IndRNN backend that cannot run there fails before the run."""
    device = resolve_device(cfg.device)
    if cfg.precision == "fp16" and device.type != "cuda":
        raise UsageError(
            f"precision fp16 needs a CUDA GPU (it trains with a gradient scaler there); on "
            f"{device.type} use bf16 or fp32"
        )
    if uses_indrnn_kernel(cfg):
        from seqbench.ops.indrnn import resolve_backend

        resolve_backend(cfg.backend, device)
    return device


PRECISION_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def mixed_precision(precision: str, device: torch.device):
    """(a context factory for the forward and loss, a GradScaler or None). fp32: no autocast;
    bf16: autocast on CUDA or CPU; fp16: autocast with a gradient scaler, CUDA only (checked
    by check_device). Parameters, optimiser state and the IndRNN state stay fp32. On a CPU
    whose oneDNN builds no bf16 LSTM (AVX2 without AVX-512), oneDNN is off under autocast and
    torch's native RNN kernels run the recurrent layers, in fp32 (autocast's rule for ops it
    does not lower), the rest in bf16."""
    if precision == "fp32":
        return contextlib.nullcontext, None
    dtype = PRECISION_DTYPES[precision]

    def amp():
        if device.type == "cpu" and dtype == torch.bfloat16 and not _onednn_bf16_rnn():
            return _native_rnn_autocast()
        return torch.autocast(device.type, dtype=dtype)

    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    return amp, scaler


@functools.cache
def _onednn_bf16_rnn() -> bool:
    """Whether this CPU's oneDNN builds a bf16 LSTM (it does not on a CPU with AVX2 but no
    AVX-512: 'could not create a primitive descriptor for the LSTM forward propagation
    primitive', which failed every bf16 LSTM, GRU and window run there)."""
    lstm = torch.nn.LSTM(2, 2, batch_first=True)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lstm(torch.zeros(1, 2, 2))
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def _native_rnn_autocast():
    """bf16 autocast with oneDNN off, so torch's native RNN kernels run the recurrent layers
    (in fp32: autocast does not lower them); the backward pass follows the ops the forward
    recorded."""
    with torch.backends.mkldnn.flags(enabled=False), torch.autocast("cpu", dtype=torch.bfloat16):
        yield


def check_ram(cfg: RunConfig, task) -> None:
    """Refuse, before anything is allocated, a config that cannot fit in memory: parameters
    with their gradients and Adam moments (counted on the meta device, which allocates
    nothing), the activations of one batch, and the fixed evaluation sets."""
    # what build_model reads from the task, computed on the real device first: a task that
    # loads data lazily (a text file's vocabulary) must not cache meta tensors
    _ = (task.vocab, task.in_dim, task.out_dim, task.readout)
    try:
        n = count_on_meta(cfg.model, task, cfg.model_args())  # fit_size's, where it ran
    except (NotImplementedError, RuntimeError, OverflowError, ValueError, MemoryError):
        n = 0  # an init the meta device lacks: the activations alone must still fit
    hidden, layers = cfg.hidden or 128, cfg.layers or 1
    need = 16 * n + activation_bytes(
        cfg, cfg.batch_size, cfg.seq_len, hidden, task.in_dim, layers, 4
    )
    if getattr(task, "synthetic", False):
        need += 2 * cfg.eval_size * cfg.seq_len * (task.in_dim + task.out_dim) * 4
    require_fits(cfg, need, f"{n:,} parameters, batch {cfg.batch_size} × T={cfg.seq_len}",
                 "batch_size, seq_len or eval_size")  # fmt: skip


def make_optimizer(cfg: RunConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    """The config's optimiser over the model's parameter groups (weight decay where the
    family's reference code applies it)."""
    groups = param_groups(cfg, model)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr)
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(groups, lr=cfg.lr)
    return torch.optim.SGD(groups, lr=cfg.lr, momentum=0.9)
