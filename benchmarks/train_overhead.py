"""`seqbench train` against a minimal hand-written PyTorch loop: the same model, data, batch,
optimiser, clipping and steps, time per step side by side (medians of interleaved rounds).

seqbench's time is the whole `api.train` call (building the task and model, the periodic
validation, the test evaluation and every store write included); the hand-written loop only
draws batches and steps the optimiser, so the ratio is all of seqbench's overhead.

Usage: python benchmarks/train_overhead.py [--models rnn lstm indrnn tcn] [--steps 1000]
Target (issue 17): seqbench within 1.1× of the hand-written loop.
"""

import argparse
import math
import statistics
import tempfile
import time

import torch

from seqbench import api
from seqbench.tasks.base import generator
from seqbench.training.setup import make_optimizer, prepare

p = argparse.ArgumentParser()
p.add_argument("--models", nargs="+", default=["rnn", "lstm", "indrnn", "tcn"])
p.add_argument("--task", default="adding")
p.add_argument("--seq-len", type=int, default=100)
p.add_argument("--steps", type=int, default=1000)
p.add_argument("--rounds", type=int, default=3)
a = p.parse_args()


def hand_written(model_name: str) -> float:
    """Seconds for a.steps plain training steps of the model seqbench would build."""
    cfg = api.make_config(model_name, a.task, {"seq_len": a.seq_len, "steps": a.steps})
    cfg, task, model, _device = prepare(cfg)
    opt = make_optimizer(cfg, model)
    gen = generator(cfg.seed, 3)
    tbptt = cfg.k if model.recurrent else None
    model.train()
    t = time.perf_counter()
    for _ in range(cfg.steps):
        x, y = task.train_batch(cfg.batch_size, gen)
        loss = task.loss(model(x, tbptt=tbptt), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        model.constrain_()
    return time.perf_counter() - t


def seqbench_train(model_name: str, db: str) -> float:
    t = time.perf_counter()
    out = api.train(model_name, a.task, db=db, seq_len=a.seq_len, steps=a.steps)
    assert out.status == "completed", out.status
    return time.perf_counter() - t


threads = torch.get_num_threads()
print(
    f"{a.task} T={a.seq_len}, {a.steps} steps, defaults otherwise; {threads} torch threads; "
    f"medians of {a.rounds} interleaved rounds"
)
print("| model | hand-written ms/step | seqbench ms/step | seqbench / hand-written |")
print("|---|---|---|---|")
with tempfile.TemporaryDirectory() as d:
    for m in a.models:
        hand, ours = [], []
        for _ in range(a.rounds):
            hand.append(hand_written(m))
            ours.append(seqbench_train(m, f"{d}/runs.db"))
        h, s = statistics.median(hand), statistics.median(ours)
        ms = 1e3 / a.steps
        print(f"| {m} | {h * ms:.2f} | {s * ms:.2f} | {s / h:.3f} |")
        assert math.isfinite(s / h)
