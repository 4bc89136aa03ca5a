"""What an answer costs, counted in runs: the CPU time of `seqbench memory` on fixed tasks
against the CPU time of one full-length run of the same TCN (the answer's largest context, its
parameter budget, the same steps and data) — "the answer costs N runs" — for this checkout and,
with --before DIR, another one, side by side in one run (issue 49's measure).

The tasks:

- readme: the README's example (the linear teacher at λ = 0.5, T = 16, up to 3,000 steps with
  patience 3, a TCN beside a GRU);
- delay: the calibration's delay 3 (scripts/calibrate_memory.py: a file task whose target is
  the input 3 steps back, T = 8, 300 steps, 3,000 parameters, a TCN alone);
- teacher95: the linear teacher at λ = 0.95, T = 100 (its default 1,000 steps), a TCN beside a
  GRU.

Beside each answer, its **oracle**: the least CPU time a race told the answer beforehand could
spend to state it by the answer's own rules (`oracle_share`: the floor, and the share of the
training in the runs it cannot do without, by their recorded run times). `--with=--no-race`
adds an answer with every cell at every seed, issue 49's "before": its oracle / CPU is the
least fraction of before that any racing or search could reach.

Each `memory` runs in a fresh store; CPU time is user + system of the command and every
process under it (its workers: read from /proc, see `timed`), so a busy neighbour changes it
less than the wall time, which is printed beside it. The k* and interval of each
answer are printed too: a cheaper answer must state the same.

    .venv/bin/python benchmarks/answer_cost.py                       # ~25 min on 2 cores
    .venv/bin/python benchmarks/answer_cost.py --tasks readme,delay  # ~5 min
    .venv/bin/python benchmarks/answer_cost.py --before /tmp/before  # git worktree add ...
    .venv/bin/python benchmarks/answer_cost.py --with=--no-race      # the oracle's bound
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# each task: what names the data (train takes it too), its --set fields, and memory's own flags
TEACHER = ["--task", "teacher"]
TASKS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "readme": (TEACHER, ["teacher_kind=linear", "teacher_lam=0.5", "seq_len=16", "steps=3000",
                "patience=3"],
               ["--families", "tcn", "--references", "gru"]),
    "delay": (["--task", "file", "--path", "{data}"], ["steps=300"],
              ["--params", "3000", "--families", "tcn", "--references", "none"]),
    "teacher95": (TEACHER, ["teacher_kind=linear", "teacher_lam=0.95", "seq_len=100"],
                  ["--families", "tcn", "--references", "gru"]),
}  # fmt: skip


def delay_data(path: Path, m: int = 3, T: int = 8, n: int = 2000) -> None:
    """The calibration's delay m (data seed 0): y = x[T − m]."""
    rng = np.random.default_rng(100)
    x = rng.standard_normal((n, T, 1)).astype("float32")
    np.savez(path, x=x, y=x[:, T - m, 0].copy())


TICK = os.sysconf("SC_CLK_TCK")


def _stats() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, start time, own user + system seconds) of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # fields after the name: state ppid … utime (14th field) stime … starttime (22nd)
        out[int(d)] = (int(rest[1]), int(rest[19]), (int(rest[11]) + int(rest[12])) / TICK)
    return out


def timed(cmd: list[str], env: dict) -> tuple[float, float, str, str]:
    """CPU seconds of the command and every process under it, and its wall seconds. The
    sweep's workers are children of multiprocessing's fork server, whose exit nobody waits
    for, so getrusage(RUSAGE_CHILDREN) misses them: the process tree is read from /proc
    every 50 ms instead, each process's own time at its last sighting (a process's last
    50 ms can be missed)."""
    t = time.perf_counter()
    # outside the checkout: `python -m` puts the working directory first on sys.path, ahead
    # of --before's PYTHONPATH
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env,
                                cwd=tempfile.gettempdir())  # fmt: skip
        seen: dict[tuple[int, int], float] = {}
        tree = {proc.pid}
        while proc.poll() is None:
            stats = _stats()
            for pid, (ppid, _, _) in stats.items():
                if ppid in tree:
                    tree.add(pid)
            for pid in tree & stats.keys():
                _, start, cpu = stats[pid]
                seen[(pid, start)] = cpu
            time.sleep(0.05)
        wall = time.perf_counter() - t
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-2000:]}")
    return sum(seen.values()), wall, stdout, stderr


def one(task: str, where: str | None, work: Path, workers: int, extra: list[str]) -> dict:
    """The memory answer of `task` and one full-length run of its TCN, from checkout `where`
    (None: this one); `extra`: --set fields for memory alone (the reference run stays the
    full-length one). The same memory command is then run again on its own store, where it
    trains nothing: its CPU time is the answer's floor (start-up, plan, the answer from the
    stored runs), what no racing or stopping can take away."""
    env = dict(os.environ)
    if where:
        env["PYTHONPATH"] = where
    data, sets, own = TASKS[task]
    data = [a.replace("{data}", str(work / "delay.npz")) for a in data]
    sets = [x for s in sets for x in ("--set", s)]
    db = work / f"{task}-{'before' if where else 'now'}-{len(extra)}.db"
    sets += [x for s in extra if not s.startswith("--") for x in ("--set", s)]
    own = own + [s for s in extra if s.startswith("--")]
    seqbench = [sys.executable, "-m", "seqbench", "--db", str(db)]
    memory = [*seqbench, "memory", *data, *sets, *own, "--workers", str(workers)]
    cpu, wall, stdout, stderr = timed([*memory, "--format", "json"], env)
    answer = json.loads(stdout)
    floor = timed([*memory, "--format", "json"], env)[0]
    ids = ",".join(str(i) for i in answer["run_ids"])
    runs = json.loads(timed([*seqbench, "query", "--format", "json",
                             f"SELECT model, k, seed, wall_seconds FROM runs WHERE id IN ({ids})"],
                            env)[2])  # fmt: skip
    share, kept = oracle_share(answer, runs)
    ran = re.search(r"trained (\d+) run\(s\), (\d+) search round", stderr)
    # one full-length run of the same TCN: the largest context, the answer's budget, seed 0
    run_sets = [x for s in TASKS[task][1] for x in ("--set", s)]
    # at a memory worker's threads (the sweep's share of the cores): left to choose, the run
    # took one or two threads by how busy the cores looked, and its CPU time moved from 17 to
    # 38 s between rows of one benchmark
    from seqbench.sweep.executors import threads_per_worker

    threads = threads_per_worker(workers)
    run_cmd = [*seqbench, "train", "--model", "tcn", *data, *run_sets, "--k", str(answer["max_k"]),
               "--params", str(answer["params"]), "--seed", "0", "--quiet",
               "--threads", str(threads)]  # fmt: skip
    # the median of three
    run_cpu = float(np.median([timed(run_cmd, env)[0] for _ in range(3)]))
    return {
        "task": task,
        "checkout": where or "this",
        "cpu": cpu,
        "wall": wall,
        "runs": int(ran.group(1)) if ran else None,
        "rounds": int(ran.group(2)) if ran else None,
        "run_cpu": run_cpu,
        "n": cpu / run_cpu,
        "floor": floor,
        # the least this command could have spent had its race known the answer beforehand
        "oracle": None if share is None else floor + (cpu - floor) * share,
        "oracle_runs": kept,
        "with": " ".join(extra) or "-",
        "k_star": answer["k_star"],
        "interval": f"{answer['k_low']}–{answer['k_high']}",
        "verdict": answer["verdict"],
    }


def oracle_share(answer: dict, runs: list[dict]) -> tuple[float | None, str]:
    """The share of an answer's training that even a race told the answer beforehand must
    spend to state it, by the answer's own rules (docs/science.md, "How much context: k*"):
    the references and the best cell at every seed (the ceiling and the best are never
    settled); two seeds (the fewest a paired test takes) for every other context the answer
    tried (no context is left untrained on monotonicity: the sequence from the longest context
    down must pass each one above k*, and the one from the shortest up each one below the
    interval); nothing else. Measured in the runs' own recorded wall seconds (None where the
    answer states no k*), and the runs it keeps, cell by cell. (Before 2026-12-04's error-rate
    rules the oracle trained only k*, k* − 1 and k_low − 1 at two seeds: those rules took the
    contexts below one shown outside as too short without training them.)"""
    if answer["k_star"] is None:
        return None, "-"
    best = answer["best_cell"]
    by_cell: dict[tuple[str, int | None], list[dict]] = {}
    for r in runs:
        by_cell.setdefault((r["model"], r["k"]), []).append(r)
    keep = []
    for (model, k), rs in by_cell.items():
        label = model if k is None else f"{model} at k={k}"
        if k is None or label == best:
            keep += rs
        else:
            keep += sorted(rs, key=lambda r: r["seed"])[:2]
    total = sum(r["wall_seconds"] for r in runs)
    cells: dict[str, int] = {}
    for r in keep:
        label = r["model"] if r["k"] is None else f"{r['model']} k={r['k']}"
        cells[label] = cells.get(label, 0) + 1
    kept = f"{len(keep)}: " + ", ".join(f"{c} ×{n}" for c, n in cells.items())
    return sum(r["wall_seconds"] for r in keep) / total, kept


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--before", default=None, help="a checkout of an earlier commit")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--with", dest="extra", action="append", default=[], metavar="FIELD=VALUE",
        help="a --set for memory alone, or one of its flags (--with=--no-race), measured beside "
        "the plain answer (repeat)",
    )  # fmt: skip
    a = p.parse_args()
    variants = [[]] + ([a.extra] if a.extra else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        delay_data(work / "delay.npz")
        for task in a.tasks.split(","):
            for where in ([a.before] if a.before else []) + [None]:
                for extra in variants if where is None else [[]]:
                    rows.append(one(task, where, work, a.workers, extra))
                    r = rows[-1]
                    print(f"{task} ({r['checkout']}, {r['with']}): {r['cpu']:.0f} CPU s, "
                          f"{r['runs']} runs", file=sys.stderr)  # fmt: skip
    print("| task | checkout | with | verdict | k* | interval | runs | rounds | CPU s | wall s "
          "| one run CPU s | N = CPU / one run | floor CPU s | floor N | oracle CPU s "
          "| oracle / CPU | oracle's runs |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['checkout']} | {r['with']} | {r['verdict']} | {r['k_star']} | "
              f"{r['interval']} | {r['runs']} | {r['rounds']} | {r['cpu']:.0f} | "
              f"{r['wall']:.0f} | {r['run_cpu']:.1f} | {r['n']:.1f} | {r['floor']:.1f} | "
              f"{r['floor'] / r['run_cpu']:.2f} | {_num(r['oracle'], '.0f')} | "
              f"{_num(r['oracle'] and r['oracle'] / r['cpu'], '.2f')} | "
              f"{r['oracle_runs']} |")  # fmt: skip
    if a.before:
        print("\n| task | with | N before | N now | N now / before | CPU now / before |")
        print("|---|---|---|---|---|---|")
        for task in a.tasks.split(","):
            b, *now = (r for r in rows if r["task"] == task)
            for n in now:
                print(f"| {task} | {n['with']} | {b['n']:.1f} | {n['n']:.1f} | "
                      f"{n['n'] / b['n']:.2f} | {n['cpu'] / b['cpu']:.2f} |")  # fmt: skip


def _num(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


if __name__ == "__main__":
    main()
