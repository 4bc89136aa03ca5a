"""What `seqbench memory` costs on the CI-sized task (tests/memory/test_memory_command.py's
regression: a target that needs exactly the last 3 of T = 8 inputs; a TCN swept over k beside
a GRU, 3 seeds, 300 steps, 3,000 parameters), idle and beside a busy neighbour, side by side.

Per condition, in a fresh store: the first invocation (trains the grid, then the search's
k = 3), and the same command again (every run reused: it re-derives and stores the answer).
The rows print the wall seconds, runs trained, and the ratio of each to the idle first run.

    .venv/bin/python benchmarks/memory_cost.py        # ~2 minutes on 2 cores
"""

from __future__ import annotations

import json
import multiprocessing as mp
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ARGS = ["--set", "steps=300", "--families", "tcn", "--references", "gru", "--params", "3000",
        "--workers", "2", "--quiet", "--format", "json"]  # fmt: skip


def _spin() -> None:
    while True:
        pass


def _memory(work: Path, data: Path) -> tuple[float, dict, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "seqbench", "--db", str(work / "m.db"), "memory", "--task", "file",
         "--path", str(data), *ARGS],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return time.perf_counter() - t0, json.loads(out.stdout), out.stderr


def main() -> None:
    rows = []
    for busy in (0, 1):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            rng = np.random.default_rng(3)
            x = rng.standard_normal((2000, 8, 1)).astype("float32")
            np.savez(work / "lag.npz", x=x, y=x[:, 5, 0].copy())
            spinners = [mp.Process(target=_spin, daemon=True) for _ in range(busy)]
            for s in spinners:
                s.start()
            try:
                for what in ("first", "again"):
                    secs, doc, err = _memory(work, work / "lag.npz")
                    trained = err.split("trained ")[1].split(" run")[0]
                    rows.append((busy, what, secs, trained, doc["k_star"]))
            finally:
                for s in spinners:
                    s.terminate()
    ref = rows[0][2]
    print("| neighbour | invocation | wall s | runs trained | k* | × idle first |")
    print("|---|---|---|---|---|---|")
    for busy, what, secs, trained, k in rows:
        who = "busy core" if busy else "idle"
        print(f"| {who} | {what} | {secs:.1f} | {trained} | {k} | {secs / ref:.2f} |")


if __name__ == "__main__":
    main()
