"""IndRNN recurrence: forward+backward of each backend, side by side in one process.

Usage: python benchmarks/indrnn_kernels.py [--device cpu|cuda] [--seq-len 1000] ...
Prints ms, GB/s, fraction of measured copy bandwidth, and the speed-up over the autograd loop.
"""

import argparse

from seqbench.bench import bench_kernels

p = argparse.ArgumentParser()
p.add_argument("--device", default="cpu")
p.add_argument("--seq-len", type=int, nargs="+", default=[100, 1000])
p.add_argument("--batch", type=int, default=32)
p.add_argument("--hidden", type=int, default=128)
p.add_argument("--repeat", type=int, default=3)
a = p.parse_args()

print("| T | B | N | backend | ms | GB/s | of copy BW | × torch loop |")
print("|---|---|---|---|---|---|---|---|")
for T in a.seq_len:
    rows, copy, _ = bench_kernels(
        seq_len=T, batch=a.batch, hidden=a.hidden, device=a.device, repeat=a.repeat
    )
    for r in rows:
        gb = f"{r.gbps:.2f}" if r.gbps is not None else "-"
        fr = f"{r.copy_fraction:.1%}" if r.copy_fraction is not None else "-"
        sp = f"{r.speedup_vs_torch:.1f}" if r.speedup_vs_torch is not None else "-"
        print(f"| {T} | {a.batch} | {a.hidden} | {r.name} | {r.ms:.1f} | {gb} | {fr} | {sp} |")
    print(f"(copy bandwidth measured at {copy:.1f} GB/s)")
