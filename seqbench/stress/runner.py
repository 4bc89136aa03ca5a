"""`seqbench stress` as a library: analyse fresh initialisations or trained runs, store curves
and summaries as runs of kind "stress"."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from seqbench.config import digest
from seqbench.errors import UsageError
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
from seqbench.stress.backbones import check_ram, fresh_backbone, trained_backbone
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
