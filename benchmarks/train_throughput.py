"""Training throughput (samples/s) of every model on the adding task at T = 100 and T = 1000,
each for a fixed number of steps at its default width, measured in one process.

Usage: python benchmarks/train_throughput.py [--steps 20] [--seq-len 100 1000]
"""

import argparse
import tempfile

from seqbench import api
from seqbench.models import MODELS

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--seq-len", type=int, nargs="+", default=[100, 1000])
p.add_argument("--models", nargs="+", default=MODELS.names())
a = p.parse_args()

with tempfile.TemporaryDirectory() as d:
    db = f"{d}/bench.db"
    print("| model | T | k | params | samples/s | s/step |")
    print("|---|---|---|---|---|---|")
    for T in a.seq_len:
        for m in a.models:
            k = 32 if m in ("window", "gcnn", "transformer") else None
            out = api.train(
                m, "adding", db=db, seq_len=T, steps=a.steps, k=k, eval_size=64, eval_every=a.steps
            )
            s = out.summaries
            print(
                f"| {m} | {T} | {k or '-'} | {int(s['n_params'])} | {s['throughput']:.0f} | "
                f"{32 / s['throughput']:.3f} |"
            )
