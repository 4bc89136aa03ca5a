"""`seqbench stress` as a library: analyse fresh initialisations or trained runs, store curves
and summaries as runs of kind "stress"."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from seqbench.config import digest, experiment_fields
from seqbench.errors import SeqbenchError, UsageError, first_line
from seqbench.store.store import Store
from seqbench.store.values import utcnow
from seqbench.stress.analysis import (
    VERDICT_CODES,
    decay_rate,
    grad_vs_lag,
    k_grid,
    rates,
    truncation_error,
)
from seqbench.stress.views import StressCurves, series_label, stress_figure


@dataclass
class StressResult:
    model: str
    seed: int
    source: str  # "init" or "run N"
    gain: float
    horizon: int
    verdict: str
    decay: float
    spectra: dict[str, float]
    lags: np.ndarray
    grad: np.ndarray
    ks: list[int]
    trunc: np.ndarray
    run_id: int | None = None


def analyse(
    backbone,
    *,
    model: str,
    seed: int,
    seq_len: int,
    batch: int,
    in_dim: int,
    dtype: torch.dtype,
    source: str = "init",
    rtol: float = 1e-6,
    eps: float = 1e-3,
) -> StressResult:
    g = torch.Generator().manual_seed(seed + 17)
    x = torch.randn(batch, seq_len, in_dim, generator=g, dtype=dtype)
    readout = torch.randn(backbone.out_dim, generator=g, dtype=dtype)
    readout = readout / readout.norm()
    backbone = backbone.to(dtype).eval()
    grad = grad_vs_lag(backbone, x, readout)
    r = rates(grad, rtol=rtol, eps=eps)
    ks = k_grid(seq_len)
    trunc, floor = truncation_error(backbone, x, ks)
    return StressResult(
        model,
        seed,
        source,
        r.gain,
        r.horizon,
        r.verdict,
        decay_rate(ks, trunc, floor, backbone.recurrent_depth),
        backbone.spectra(),
        np.arange(seq_len),
        grad,
        ks,
        trunc,
    )


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


def save(
    store: Store,
    res: StressResult,
    params: dict,
    threads_from: str | None = None,
    k: int | None = None,
) -> int:
    """Store one result as a run of kind 'stress'; `k` is the analysed model's context (its
    stored k, as a training run's)."""
    from seqbench import environment
    from seqbench.training.heap import heap_state

    cfg = {**params, "model": res.model, "seed": res.seed, "source": res.source}
    return store.recorder().finish(
        "completed",
        summaries={
            "gain": res.gain,
            "horizon": res.horizon,
            "verdict": VERDICT_CODES[res.verdict],
            "decay_rate": res.decay,
            **res.spectra,
        },
        curves={"grad_norm": (res.lags, res.grad), "truncation_error": (res.ks, res.trunc)},
        kind="stress",
        model=res.model,
        task="stress",
        k=k,
        seq_len=params["seq_len"],
        seed=res.seed,
        config=cfg,
        config_hash=digest(cfg),
        environment=environment.capture("cpu", threads_from, heap_state()),
        started_at=utcnow(),
    )


def stress(
    store: Store | Callable[[], Store],
    models: list[str],
    *,
    seq_len: int = 5000,
    hidden: int | None = 128,
    batch: int = 4,
    seeds: list[int] = (0,),
    runs: list[str] = (),
    dtype: str = "float32",
    rtol: float = 1e-6,
    eps: float = 1e-3,
    in_dim: int = 2,
    on_result=None,
    on_start=None,
    threads: int | None = None,
    k: int | None = None,
    overrides: dict | None = None,
) -> list[StressResult]:
    """Analyse each model × seed at init, and each trained run; store and return results.
    Everything a user can get wrong is checked before anything is written. `threads`: torch's
    CPU threads (default: seqbench's choice, training/threads.py). `k` and `overrides` (config
    fields by name, as `--set` gives them) configure the fresh models: a TCN at k = 16 is
    analysed as it would train at k = 16, without a training run. `store` may be a function
    that opens it: called only once the input has passed every check (or a trained run is to
    be read), so that a refusal leaves no store file behind."""
    from seqbench.training.heap import keep_freed_memory
    from seqbench.training.threads import apply_threads, choose_threads

    n_threads, threads_from = choose_threads(threads)
    apply_threads(n_threads)
    keep_freed_memory()

    _check_args(models, seq_len, batch, hidden, dtype, rtol, eps, seeds, k, overrides)
    tdtype = getattr(torch, dtype)
    from seqbench.configure import stored_k

    # built up front so bad input fails before any write
    jobs = _fresh_jobs(models, seeds, seq_len, hidden, in_dim, batch, tdtype, k, overrides)
    opened: list[Store] = []

    def the_store() -> Store:
        if not opened:
            opened.append(store() if callable(store) else store)
        return opened[0]

    for ref in runs:
        bb, d, run, cfg = trained_backbone(the_store(), ref)
        check_ram(cfg, batch, seq_len, bb.out_dim, d, cfg.layers, tdtype)
        context_k = stored_k(cfg, steps=seq_len)  # its context, fed this T
        # the run's own width, not --hidden's (which sizes only the fresh models)
        own = {"hidden": cfg.hidden}
        jobs.append((run.model, run.seed or 0, f"run {run.id}", bb, d, context_k, own))
    params = {
        "seq_len": seq_len,
        "batch": batch,
        "hidden": hidden,
        "dtype": dtype,
        "rtol": rtol,
        "eps": eps,
        **({"k": k} if k is not None else {}),
        **({"set": dict(overrides)} if overrides else {}),
    }
    results = []
    if on_start:
        on_start(len(jobs))
    measure = {"seq_len": seq_len, "batch": batch, "dtype": tdtype, "rtol": rtol, "eps": eps}
    for m, s, source, bb, d, context_k, own in jobs:
        res = analyse(bb, model=m, seed=s, in_dim=d, source=source, **measure)
        res.run_id = save(the_store(), res, {**params, **own}, threads_from, k=context_k)
        results.append(res)
        if on_result:
            on_result(res)
    return results


def _fresh_jobs(models, seeds, seq_len, hidden, in_dim, batch, tdtype, k, overrides) -> list:
    """(model, seed, source, backbone, in_dim, its k, own params) of each model × seed at
    init, each checked against the memory it needs."""
    from seqbench.configure import stored_k

    jobs = []
    for m in models:
        for s in seeds:
            bb, cfg = fresh_backbone(
                m,
                seq_len,
                hidden,
                s,
                in_dim,
                check=lambda c: check_ram(c, batch, seq_len, c.hidden, in_dim, c.layers, tdtype),
                k=k,
                overrides=overrides,
            )
            jobs.append((m, s, "init", bb, in_dim, stored_k(cfg), {}))
    return jobs


def _check_args(
    models: list[str],
    seq_len: int,
    batch: int,
    hidden: int | None,
    dtype: str,
    rtol: float,
    eps: float,
    seeds,
    k: int | None,
    overrides: dict | None,
) -> None:
    """stress's arguments, each refused in one line before anything is built or written."""
    from seqbench.models import MODELS

    if seq_len <= 0:
        raise UsageError(f"seq-len must be positive, got {seq_len}")
    if batch <= 0:
        raise UsageError(f"batch must be positive, got {batch}")
    if hidden is not None and hidden <= 0:
        raise UsageError(f"hidden must be positive, got {hidden}")
    if dtype not in ("float32", "float64"):
        raise UsageError(f"dtype must be float32 or float64, got {dtype!r}")
    if not (math.isfinite(rtol) and 0 < rtol < 1):
        raise UsageError(f"`rtol` must be a number in (0, 1), got {rtol:g}")
    if not (math.isfinite(eps) and 0 <= eps < 1):
        raise UsageError(f"`eps` must be a number in [0, 1), got {eps:g}")
    if k is not None and k < 1:
        raise UsageError(f"k must be at least 1, got {k}")
    from seqbench.parsing import MAX_SEED

    for s in seeds:
        if not 0 <= s <= MAX_SEED:
            raise UsageError(f"`seeds`: a seed must be in [0, 2^32), got {s}")
    for m in models:
        MODELS.get(m)
    flags = {"model": "`models`", "seq_len": "`seq_len`", "hidden": "`hidden`", "k": "`k`"}
    for key in overrides or {}:
        if key in flags:
            raise UsageError(f"`set` {key}: give it as {flags[key]}")
        if key == "task":
            raise UsageError("`set` task: stress analyses models on random inputs, not a task")
    from seqbench.configure import not_read_by_any, read_by_any

    base = (overrides or {}).get("base")
    for key in overrides or {}:  # each model takes a --set it reads; one none reads is refused
        if not read_by_any(key, models, ["adding"], [base]):  # stress's inputs read no task field
            raise not_read_by_any(key, models)
    if k is not None:
        recurrent = [m for m in models if MODELS.get(m).recurrent]
        if recurrent:
            raise UsageError(
                f"`k` sets a feedforward model's context; {', '.join(recurrent)} "
                "is measured through full backpropagation: stress it without `k`"
            )


def curves_of(r: StressResult) -> StressCurves:
    """A result's curves as the stress figure draws them (stress/views.py)."""
    label = series_label(r.model, r.source, r.seed, r.gain, r.verdict)
    return StressCurves(label, list(zip(r.lags.tolist(), r.grad.tolist(), strict=True)),
                        list(zip(list(r.ks), r.trunc.tolist(), strict=True)))  # fmt: skip


def plot_stress(results: list[StressResult], path: str) -> None:
    """The stress figure of all results (stress/views.stress_figure), saved to `path`."""
    import matplotlib.pyplot as plt

    fig = stress_figure([curves_of(r) for r in results])
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
