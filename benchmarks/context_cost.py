"""What exact context costs: forward + backward time per step of each feedforward family with
context exactly k (seqbench's networks) beside the network the same k gave before contexts
were exact (the fewest whole TCN levels / gated-CNN layers covering k, every transformer layer
attending to k positions), interleaved in one process, against k and T. The window model has
one form (its base on every window); its cost against k is shown beside the TCN's.

Usage: python benchmarks/context_cost.py [--seq-len 64 256] [--k 4 16 50] [--batch 32]
       [--repeat 7] [--busy N]  (N busy-loop processes beside it: a shared machine)
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import time

import torch

from seqbench.models import make_backbone
from seqbench.models.base import ModelArgs
from seqbench.models.context import tcn_levels_for

p = argparse.ArgumentParser()
p.add_argument("--seq-len", type=int, nargs="+", default=[64, 256])
p.add_argument("--k", type=int, nargs="+", default=[4, 16, 50])
p.add_argument("--batch", type=int, default=32)
p.add_argument("--repeat", type=int, default=7)
p.add_argument("--busy", type=int, default=0)
a = p.parse_args()


def _spin():
    while True:
        pass


def step_ms(bb, x, repeat):
    def once():
        y, _ = bb(x)
        y.pow(2).mean().backward()

    once()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        once()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def pair(model: str, T: int, k: int):
    """(exact backbone, the pre-exact backbone of the same k) for `model`."""
    torch.manual_seed(0)
    if model == "tcn":
        args = ModelArgs(seq_len=T, hidden=30, kernel_size=7, k=k)
        old = args.with_(k=None, levels=tcn_levels_for(k, 7))
    elif model == "gcnn":
        args = ModelArgs(seq_len=T, hidden=64, kernel_size=5, k=k)
        old = args.with_(k=None, levels=max(1, math.ceil((k - 1) / 4)))
    elif model == "transformer":
        args = ModelArgs(seq_len=T, hidden=64, heads=4, layers=2, k=k)
        old = args
    else:
        args = ModelArgs(seq_len=T, hidden=64, base="lstm", k=k)
        return make_backbone(model, 2, args).train(), None
    exact = make_backbone(model, 2, args).train()
    before = make_backbone(model, 2, old).train()
    if model == "transformer":
        before.windows = [k] * len(before.windows)  # each layer k positions: L(k−1)+1
    return exact, before


if __name__ == "__main__":
    busy = [mp.Process(target=_spin, daemon=True) for _ in range(a.busy)]
    for b in busy:
        b.start()
    print(
        f"forward+backward per step, B={a.batch}, {torch.get_num_threads()} threads, "
        f"{a.busy} busy neighbour process(es); median of {a.repeat}"
    )
    print("| model | T | k | context exact / before | exact ms | before ms | exact / before |")
    print("|---|---|---|---|---|---|---|")
    for model in ("tcn", "gcnn", "transformer", "window"):
        for T in a.seq_len:
            for k in a.k:
                if k > T:
                    continue
                exact, before = pair(model, T, k)
                x = torch.randn(a.batch, T, 2)
                if before is None:
                    ms = step_ms(exact, x, a.repeat)
                    print(f"| {model} | {T} | {k} | {k} | {ms:.2f} | – | – |")
                    continue
                # interleaved: each measured twice, alternating, the medians' ratio reported
                e1 = step_ms(exact, x, a.repeat)
                b1 = step_ms(before, x, a.repeat)
                e2 = step_ms(exact, x, a.repeat)
                b2 = step_ms(before, x, a.repeat)
                e, b = min(e1, e2), min(b1, b2)
                ctx = f"{k} / {min(int(before.receptive_field), T)}"
                print(f"| {model} | {T} | {k} | {ctx} | {e:.2f} | {b:.2f} | {e / b:.2f} |")
    for b in busy:
        b.terminate()
