"""Torch threads against speed, idle and beside a busy neighbour, for every family's default
config (what `seqbench train --model M --task adding` trains) and a few larger ones.

Each cell is the median time of a training step (forward, backward, clip, optimiser) over
`--steps` steps after warm-up, measured in a fresh subprocess pinned to N threads; the
"loaded" columns run beside a process this script starts that burns one core (`while True`),
as on a shared lab server or CI runner. The last column is what seqbench's default thread
policy picks, and its time as a ratio of the best of the row's measured counts (target ≤ 1.3
beside the neighbour). Ratios are read side by side, from one run.

    .venv/bin/python benchmarks/threads.py            # ~4 minutes on 2 cores
    .venv/bin/python benchmarks/threads.py --steps 10 --models rnn,tcn
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = {
    # family default configs on the adding problem (T = 100), as `train` runs them
    "rnn": {},
    "lstm": {},
    "gru": {},
    "indrnn": {},
    "tcn": {},
    "gcnn": {},
    "window": {},
    "transformer": {},
    # larger work per step, where more threads can pay
    "lstm h512 b256": {"model": "lstm", "hidden": 512, "batch_size": 256},
    "tcn h128 b256": {"model": "tcn", "hidden": 128, "batch_size": 256},
}


def worker(name: str, threads: int, steps: int) -> None:
    """One case on `threads` torch threads: print the median step time (s) as JSON."""
    import torch

    from seqbench.configure import make_config
    from seqbench.training.setup import make_optimizer, prepare
    from seqbench.training.threads import apply_threads, choose_threads, one_thread_for

    over = dict(CASES[name])
    model_name = over.pop("model", name)
    cfg = make_config(model_name, "adding", {**over, "steps": steps})
    apply_threads(choose_threads(threads or None, one_thread_for(cfg))[0])  # as train() does
    cfg, task, model, _device = prepare(cfg)
    opt = make_optimizer(cfg, model)
    gen = torch.Generator().manual_seed(0)
    tbptt = cfg.k if model.recurrent else None
    times = []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        x, y = task.train_batch(cfg.batch_size, gen)
        loss = task.loss(model(x, tbptt=tbptt), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip or 1e9)
        opt.step()
        if i >= 3:  # warm-up: numba compiles, allocators settle
            times.append(time.perf_counter() - t0)
    print(json.dumps({"median_s": statistics.median(times), "threads": torch.get_num_threads()}))


def measure(name: str, threads: int | None, steps: int) -> tuple[float, int]:
    """(median step time, the thread count used) in a fresh process; None: the default."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "SEQBENCH_THREADS")}
    cmd = [sys.executable, __file__, "--worker", name, "--threads", str(threads or 0)]
    cmd += ["--steps", str(steps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return data["median_s"], data["threads"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default=",".join(CASES))
    ap.add_argument("--worker")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.threads, a.steps)
        return
    cores = len(os.sched_getaffinity(0))
    counts = sorted({1, cores})
    names = [n for n in a.models.split(",") if n]
    print(f"# threads benchmark: {cores} cores, median step time (ms) over {a.steps} steps")
    head = ["case"] + [f"idle {c}t" for c in counts] + [f"loaded {c}t" for c in counts]
    head += ["default idle (t, ×best)", "default loaded (t, ×best)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in names:
        row, cells = [name], {}
        for loaded in (False, True):
            hog = None
            if loaded:
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                time.sleep(0.5)
            try:
                for c in counts:
                    cells[(loaded, c)] = measure(name, c, a.steps)[0]
                cells[(loaded, "default")] = measure(name, None, a.steps)
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
        for loaded in (False, True):
            row += [f"{1000 * cells[(loaded, c)]:.1f}" for c in counts]
        for loaded in (False, True):
            t, n = cells[(loaded, "default")]
            best = min(cells[(loaded, c)] for c in counts)
            row.append(f"{n}t, {t / best:.2f}×")
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
