"""What a command costs before it does anything: process starts, interleaved, in one run.

Times `python -c pass`, `import seqbench.api` and `seqbench --help`, each the best and the
median of --rounds interleaved starts; with --before DIR, the same from another checkout (DIR
put first on PYTHONPATH: git worktree add DIR <commit>). Then all of it again beside a busy
neighbour (one process spinning on a core), since these machines are rarely quiet.

Usage: python benchmarks/cli_start.py [--rounds 15] [--before /tmp/before]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=15)
p.add_argument("--before", default=None, help="a checkout of an earlier commit")
a = p.parse_args()

PY = sys.executable
CASES = {
    "python -c pass": ([PY, "-c", "pass"], {}),
    "import seqbench.api": ([PY, "-c", "import seqbench.api"], {}),
    "seqbench --help": ([PY, "-m", "seqbench", "--help"], {}),
}


def cases() -> dict[str, tuple[list[str], dict]]:
    out = dict(CASES)
    if a.before:
        for name in ("import seqbench.api", "seqbench --help"):
            cmd, env = CASES[name]
            out[f"{name} (before)"] = (cmd, {**env, "PYTHONPATH": a.before})
    return out


# Outside the checkout: `python -m` puts the working directory first on sys.path, which would
# import the checkout's seqbench ahead of --before's PYTHONPATH (the before/after rows of
# 2026-12-03's first measurement were both this checkout's, for that reason).
WHERE = tempfile.gettempdir()


def once(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=True, cwd=WHERE)
    return time.perf_counter() - t


def spin() -> None:
    while True:
        pass


def measure(title: str) -> None:
    todo = cases()
    times: dict[str, list[float]] = {n: [] for n in todo}
    for _ in range(a.rounds):
        for name, (cmd, env) in todo.items():
            times[name].append(once(cmd, env))
    bare = min(times["python -c pass"])
    print(f"\n{title} ({a.rounds} interleaved rounds)")
    print("| what | best s | median s | best over `python -c pass` |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.3f} | {statistics.median(ts):.3f} | {min(ts) - bare:.3f} |")


measure("quiet")
neighbour = mp.Process(target=spin, daemon=True)
neighbour.start()
try:
    measure("beside a busy neighbour (one core spinning)")
finally:
    neighbour.terminate()
