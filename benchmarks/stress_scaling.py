"""`seqbench stress` cost: each model at hidden 128, batch 4, for T = 500, 5000, 20000 —
one forward+backward for the gradient curve plus the truncation-error forwards — in one
process, with the growth ratios (linear would be ×10 and ×4).

Usage: python benchmarks/stress_scaling.py [--seq-len 500 5000 20000] [--models ...]
"""

import argparse
import time

import torch

from seqbench.stress.backbones import fresh_backbone
from seqbench.stress.runner import analyse

p = argparse.ArgumentParser()
p.add_argument("--seq-len", type=int, nargs="+", default=[500, 5000, 20000])
p.add_argument("--models", nargs="+", default=["rnn", "lstm", "gru", "indrnn", "tcn"])
p.add_argument("--hidden", type=int, default=128)
p.add_argument("--batch", type=int, default=4)
a = p.parse_args()

times: dict[str, dict[int, float]] = {m: {} for m in a.models}
for T in a.seq_len:
    for m in a.models:
        bb, _ = fresh_backbone(m, T, a.hidden, 0, 2)
        t = time.perf_counter()
        analyse(bb, model=m, seed=0, seq_len=T, batch=a.batch, in_dim=2, dtype=torch.float32)
        times[m][T] = time.perf_counter() - t

Ts = a.seq_len
head = " | ".join(f"T={T} s" for T in Ts)
growth = " | ".join(f"×{Ts[i + 1] // Ts[i]} → ×" for i in range(len(Ts) - 1))
print(f"| model | {head} | {growth} |")
print("|---|" + "---|" * (2 * len(Ts) - 1))
for m in a.models:
    cells = " | ".join(f"{times[m][T]:.2f}" for T in Ts)
    ratios = " | ".join(f"{times[m][Ts[i + 1]] / times[m][Ts[i]]:.1f}" for i in range(len(Ts) - 1))
    print(f"| {m} | {cells} | {ratios} |")
for T in Ts:
    print(f"all {len(a.models)} models at T={T}: {sum(times[m][T] for m in a.models):.1f} s")
print(f"torch threads: {torch.get_num_threads()}")
