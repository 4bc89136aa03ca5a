"""Windowed transformer: time per token of forward + backward at T = 100 and T = 1000 (context
k = 32: layer windows 17 and 16), seqbench's model (one dense SDPA call up to T = 8·window,
blocks beyond) beside torch's encoder layers with a dense T×T band mask of each layer's window
(what it ran before), side by side in one process.

Usage: python benchmarks/transformer_window.py [--k 32] [--seq-len 100 1000] [--batch 32]
Target (issue 17): seqbench's µs/token at T=1000 within 2× of T=100.
"""

import argparse
import time

import torch

from seqbench.models import make_backbone
from seqbench.models.base import ModelArgs
from seqbench.models.transformer import band_mask, sinusoidal_positions

p = argparse.ArgumentParser()
p.add_argument("--k", type=int, default=32)
p.add_argument("--seq-len", type=int, nargs="+", default=[100, 1000])
p.add_argument("--batch", type=int, default=32)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--repeat", type=int, default=5)
a = p.parse_args()


def median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


torch.manual_seed(0)
args = ModelArgs(seq_len=max(a.seq_len), hidden=a.hidden, heads=4, layers=a.layers, k=a.k)
bb = make_backbone("transformer", 2, args).train()
print(
    f"B={a.batch}, hidden={a.hidden}, layers={a.layers}, k={a.k}, forward+backward, "
    f"{torch.get_num_threads()} threads"
)
print("| T | seqbench µs/token | torch encoder, dense mask µs/token | dense / seqbench |")
print("|---|---|---|---|")
per_token = {}
for T in a.seq_len:
    x = torch.randn(a.batch, T, 2)

    def ours(x=x):
        bb.zero_grad()
        bb(x)[0].pow(2).mean().backward()

    def dense(x=x, T=T):
        bb.zero_grad()
        h = bb.inp(x) + sinusoidal_positions(T, a.hidden, x.device)
        for layer, w in zip(bb.encoder.layers, bb.windows, strict=True):  # each layer's band
            h = layer(h, src_mask=band_mask(T, w))
        h.pow(2).mean().backward()

    tokens = a.batch * T
    b_us = median_ms(ours, a.repeat) * 1e3 / tokens
    d_us = median_ms(dense, a.repeat) * 1e3 / tokens
    per_token[T] = b_us
    print(f"| {T} | {b_us:.2f} | {d_us:.2f} | {d_us / b_us:.1f} |")
lo, hi = min(a.seq_len), max(a.seq_len)
print(f"seqbench µs/token at T={hi} / at T={lo}: {per_token[hi] / per_token[lo]:.2f} (target ≤ 2)")
