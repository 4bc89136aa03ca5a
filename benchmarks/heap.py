"""Keeping freed memory between steps (training/heap.py) against glibc's defaults, for long
sequences, idle and beside a busy neighbour.

Each cell is the median wall time of a training step (forward, backward, clip, optimiser) over
`--steps` steps after warm-up, and the user and system CPU seconds per step (getrusage), in a
fresh process on one torch thread (mallopt is per process) with SEQBENCH_KEEP_FREED=0 (glibc's
defaults) or 1 (seqbench's default). The "loaded" rows run beside a process this script starts
that burns one core, as on a shared machine. The ratio column is default time / kept time,
read side by side from one run.

    .venv/bin/python benchmarks/heap.py              # ~3 minutes on 2 cores
    .venv/bin/python benchmarks/heap.py --steps 5 --cases indrnn-5000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    # the T = 5000 reproduction's two models (scripts/reproduce-t5000.sh)
    "indrnn-5000": {"model": "indrnn", "seq_len": 5000, "batch_size": 32},
    "lstm-5000": {"model": "lstm", "seq_len": 5000, "batch_size": 32, "hidden": 64},
    "indrnn-5000 2x64 b50": {"model": "indrnn", "seq_len": 5000, "hidden": 64},
    # the indrnn-adding preset's longest, and the paper's T = 5000 batch of 50
    "indrnn-1000 2x64 b50": {"model": "indrnn", "seq_len": 1000, "hidden": 64},
    "indrnn-5000 b50": {"model": "indrnn", "seq_len": 5000, "batch_size": 50},
}


def worker(name: str, steps: int) -> None:
    import torch

    from seqbench.configure import make_config
    from seqbench.training.heap import keep_freed_memory
    from seqbench.training.setup import make_optimizer, prepare
    from seqbench.training.threads import apply_threads

    over = dict(CASES[name])
    cfg = make_config(over.pop("model"), "adding", over)
    apply_threads(1)
    state = keep_freed_memory()  # as train() does
    cfg, task, model, _ = prepare(cfg)
    opt = make_optimizer(cfg, model)
    gen = torch.Generator().manual_seed(0)
    times = []
    for i in range(steps + 2):
        if i == 2:  # warm-up: numba compiles, the first step faults its pages in either way
            r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        x, y = task.train_batch(cfg.batch_size, gen)
        loss = task.loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip or 1e9)
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "state": state,
                "median_s": statistics.median(times),
                "user_s": (r1.ru_utime - r0.ru_utime) / steps,
                "sys_s": (r1.ru_stime - r0.ru_stime) / steps,
            }
        )
    )


def measure(name: str, keep: bool, steps: int) -> dict:
    env = {**os.environ, "SEQBENCH_KEEP_FREED": "1" if keep else "0"}
    cmd = [sys.executable, __file__, "--worker", name, "--steps", str(steps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--worker")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.steps)
        return
    print(f"# heap benchmark: median step time over {a.steps} steps, one torch thread")
    head = ["case", "machine", "glibc default: s/step (user, sys)", "kept: s/step (user, sys)"]
    print("| " + " | ".join([*head, "default / kept"]) + " |")
    print("|" + "---|" * (len(head) + 1))
    for name in [c for c in a.cases.split(",") if c]:
        for loaded in (False, True):
            hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
            try:
                off, on = measure(name, False, a.steps), measure(name, True, a.steps)
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
            cells = [
                f"{r['median_s']:.3f} ({r['user_s']:.3f}, {r['sys_s']:.3f})" for r in (off, on)
            ]
            ratio = off["median_s"] / on["median_s"]
            row = [name, "loaded" if loaded else "idle", *cells, f"{ratio:.2f}×"]
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
