"""The backbones `seqbench stress` analyses: a fresh initialisation of a family at a length
(its memory checked before anything is allocated), or a trained run's, from its checkpoint
(checked to be seqbench's weights of that run's config, finite)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch

from seqbench.config import experiment_fields
from seqbench.errors import SeqbenchError, first_line

if TYPE_CHECKING:
    from seqbench.store.store import Store


def check_ram(
    cfg, batch: int, seq_len: int, hidden: int, in_dim: int, layers: int, dtype: torch.dtype
) -> None:
    from seqbench.environment import require_ram
    from seqbench.models import activation_bytes, base_spec, make_backbone
    from seqbench.models.base import count_params

    need = activation_bytes(cfg, batch, seq_len, hidden, in_dim, layers, dtype.itemsize)
    try:  # the weights and their gradients, counted on the meta device (nothing allocated)
        with torch.device("meta"):
            n = count_params(make_backbone(cfg.model, in_dim, cfg.model_args()))
    except (NotImplementedError, RuntimeError, OverflowError, ValueError, MemoryError):
        n = 4 * hidden * (hidden + in_dim) * max(layers, 1)  # an init the meta device lacks
    need += n * dtype.itemsize * 2
    state = ", `set` d_state" if base_spec(cfg).state_units is not None else ""
    require_ram(
        need,
        f"stress {cfg.model} at T={seq_len}, B={batch}, H={hidden}",
        f"`seq_len`, `batch`, `hidden`{state}",
    )


def fresh_backbone(
    model: str,
    seq_len: int,
    hidden: int | None,
    seed: int,
    in_dim: int,
    check=None,
    k: int | None = None,
    overrides: dict | None = None,
):
    """A freshly initialised backbone and its config (the model's defaults on the adding task,
    T = seq_len, then `hidden`, `k` and `overrides`, any config fields as --set gives them);
    `check(cfg)` runs before anything is allocated (the memory estimate)."""
    from seqbench.configure import readable, resolve
    from seqbench.models import make_backbone

    over = {**readable(model, "adding", overrides or {}), "seq_len": seq_len}
    if hidden:
        over["hidden"] = hidden
    if k is not None:
        over["k"] = k
    cfg = resolve(model, "adding", over)
    if check is not None:
        check(cfg)
    torch.manual_seed(seed)
    return make_backbone(model, in_dim, cfg.model_args()), cfg


def trained_backbone(store: Store, run_ref: str):
    """The backbone of a trained run, from its checkpoint (weights only)."""
    from seqbench.configure import stored_config
    from seqbench.training.setup import prepare

    run = store.require_run(run_ref)
    if not run.checkpoint:
        raise SeqbenchError(
            f"run {run.id} has no checkpoint: train it with `save_checkpoint` to stress it"
        )
    if not os.path.exists(run.checkpoint):
        raise SeqbenchError(f"run {run.id}: checkpoint {run.checkpoint} is missing")

    ck = _read_checkpoint(run.id, run.checkpoint)
    if experiment_fields(ck.get("config") or {}) != experiment_fields(run.config or {}):
        raise SeqbenchError(
            f"run {run.id}: the checkpoint {run.checkpoint} holds the weights of another "
            "config (another run's, or another store's run of that id); retrain it"
        )
    cfg = stored_config(run.model, run.task, run.config, device="cpu")
    if cfg.forget_cap is not None and (run.config or {}).get("forget_cap") is None:
        # a --stable LSTM trained before the forget-gate cap: today's resolution caps f,
        # so its weights would run in a model they were not trained in
        raise SeqbenchError(
            f"run {run.id} is a `stable` LSTM trained before the forget-gate cap (no "
            "forget_cap): today's stable LSTM caps f, so its weights are not analysable as "
            "it ran; retrain it"
        )
    _, task, model, _ = prepare(cfg)
    try:
        model.load_state_dict(ck["state_dict"])
    except (RuntimeError, KeyError, TypeError, ValueError) as e:
        raise SeqbenchError(
            f"run {run.id}: the checkpoint {run.checkpoint} does not fit the run's model "
            f"({first_line(e)}); retrain it"
        ) from None
    bad = [
        n for n, t in ck["state_dict"].items() if t.is_floating_point() and not t.isfinite().all()
    ]
    if bad:
        raise SeqbenchError(
            f"run {run.id}: the checkpoint {run.checkpoint} holds non-finite weights "
            f"({bad[0]}{', ...' if len(bad) > 1 else ''}): nothing to analyse"
        )
    return model.backbone, task.in_dim, run, cfg


def _read_checkpoint(run_id: int, path: str) -> dict:
    """A run's checkpoint as train() writes it (a dict with a config and a state_dict of
    tensors), else a one-line SeqbenchError: a file that is not one (truncated, a directory,
    a pickle that would run code, which weights_only refuses, a list)."""
    import pickle
    import zipfile

    from seqbench.training.checkpoint import load_checkpoint

    if os.path.isdir(path):
        raise SeqbenchError(f"run {run_id}: its checkpoint {path} is a directory, not a file")
    try:
        ck = load_checkpoint(path)
    except (pickle.UnpicklingError, zipfile.BadZipFile, RuntimeError, EOFError, OSError,
            ValueError, TypeError, AttributeError) as e:  # fmt: skip
        raise SeqbenchError(
            f"run {run_id}: its checkpoint {path} cannot be read as seqbench's weights "
            f"({first_line(e)[:200]})"
        ) from None
    state = ck.get("state_dict") if isinstance(ck, dict) else None
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise SeqbenchError(
            f"run {run_id}: its checkpoint {path} is not seqbench's (a dict with a config and "
            "a state_dict of tensors)"
        )
    return ck
