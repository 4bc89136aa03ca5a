"""The seconds a run would take on this machine, from a short probe that records nothing: what
a sweep's time estimate and budget are made of (sweep/cost.py)."""

from __future__ import annotations

import math
import time

import torch

from seqbench.config import RunConfig
from seqbench.tasks.base import generator, to_device
from seqbench.training.setup import make_optimizer, prepare
from seqbench.training.threads import apply_threads, choose_threads, one_thread_for

PROBE_STEPS = 4  # optimiser steps timed by probe_seconds, after one untimed warm-up step


def probe_seconds(cfg: RunConfig, threads: int | None = None) -> float:
    """The seconds a full run of `cfg` would take on this machine, from a short probe that
    records nothing: the task and model built as train() builds them (timed), PROBE_STEPS
    optimiser steps after a warm-up (timed), one forward pass over an evaluation batch (timed,
    times the batches of an evaluation), scaled to the run: build + steps × step +
    (evaluations + the test) × evaluation. `threads`: torch's threads
    while probing (a sweep worker's share; default: train()'s own choice)."""
    n_threads, _ = choose_threads(threads, one_thread_for(cfg))
    apply_threads(n_threads)
    t0 = time.perf_counter()
    cfg, task, model, device = prepare(cfg)
    opt = make_optimizer(cfg, model)
    build = time.perf_counter() - t0
    gen = generator(cfg.seed, 3)
    tbptt = cfg.k if model.recurrent else None
    model.train()
    times = []
    for _ in range(PROBE_STEPS + 1):
        t = time.perf_counter()
        x, y = task.train_batch(cfg.batch_size, gen)
        loss = task.loss(model(x.to(device), tbptt=tbptt), to_device(y, device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
    step = sorted(times[1:])[len(times[1:]) // 2]  # the median step, past the warm-up
    model.eval()
    with torch.no_grad():  # one evaluation batch, scaled to the evaluation set
        batch = min(cfg.eval_batch_size, cfg.eval_size)  # an evaluation's batches are no larger
        x, _ = task.train_batch(batch, gen)
        t = time.perf_counter()
        model(x.to(device))
        valid = (time.perf_counter() - t) * math.ceil(cfg.eval_size / batch)
    evaluations = min(cfg.steps, cfg.steps // (cfg.eval_every or max(cfg.steps // 10, 1)))
    return build + cfg.steps * step + (evaluations + 1) * valid
