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
training in the runs it cannot do without, by their recorded run times), and beside it the
**fewest** (`fewest_share`): the fewest of the answer's own runs from which the answer's
derivation states the same answer, found by trying every cell's seed count. The oracle's
"two seeds for every other context" is a bound the rules may not reach (two seeds may not
show a context within); the fewest is what they do reach on these runs. `--with=--no-race`
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
    # every run the command trained (the store is this command's alone): the answer's own,
    # one a (model, k, seed), and those of the learning-rate search that lost on validation
    sql = "SELECT id, model, k, seed, wall_seconds FROM runs"
    every = json.loads(timed([*seqbench, "query", "--format", "json", sql], env)[2])
    mine = {int(i) for i in answer["run_ids"]}
    runs = [r for r in every if r["id"] in mine]
    share, kept = oracle_share(answer, every)
    prorated = oracle_share(answer, runs)[0]  # the accounting before 2026-12-07
    fewest, fewest_kept = (None, "-") if where else fewest_share(db, task, work, answer, every)
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
        "oracle_prorated": None if prorated is None else floor + (cpu - floor) * prorated,
        "oracle_runs": kept,
        # the least by the answer's own derivation on a subset of these very runs
        "fewest": None if fewest is None else floor + (cpu - floor) * fewest,
        "fewest_runs": fewest_kept,
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
    interval); nothing else. A seed of a model whose learning rate is searched is its runs at
    every rate: the rate is chosen on validation per seed, and the answer states what the
    search chose. Measured in the runs' own recorded wall seconds over `runs` (None where the
    answer states no k*), and the seeds it keeps, cell by cell. (Before 2026-12-04's
    error-rate rules the oracle trained only k*, k* − 1 and k_low − 1 at two seeds: those
    rules took the contexts below one shown outside as too short without training them.
    Before 2026-12-07 `runs` held the answer's own runs alone, one a seed, and the share they
    gave was applied to the command's whole CPU: the rates that lost on validation were
    pro-rated as if a race could spare them as it spares a context's third seed.)"""
    if answer["k_star"] is None:
        return None, "-"
    best = answer["best_cell"]
    by_cell: dict[tuple[str, int | None], list[dict]] = {}
    for r in runs:
        by_cell.setdefault((r["model"], r["k"]), []).append(r)
    keep, cells = [], {}
    for (model, k), rs in by_cell.items():
        label = model if k is None else f"{model} at k={k}"
        seeds = sorted({r["seed"] for r in rs})
        if not (k is None or label == best):
            seeds = seeds[:2]
        keep += [r for r in rs if r["seed"] in seeds]
        cells[model if k is None else f"{model} k={k}"] = len(seeds)
    total = sum(r["wall_seconds"] for r in runs)
    kept = f"{sum(cells.values())} seeds: " + ", ".join(f"{c} ×{n}" for c, n in cells.items())
    return sum(r["wall_seconds"] for r in keep) / total, kept


def fewest_share(db: Path, task: str, work: Path, answer: dict, runs: list[dict]):
    """The oracle as the answer's own derivation reads it: the fewest of the answer's runs
    (by their recorded wall seconds) from which `derive`, at the answer's level, states the
    same verdict, k* and interval at every tolerance, searched over every cell's seed count
    from two (the fewest a paired test takes) to all, the first seeds of each, with the
    references and the best cell at every seed. `oracle_share`'s two seeds for every other
    context bound this from below, but two seeds may not show what the answer rests on (a
    context within the tolerance, at one degree of freedom): this is the floor of a race
    that knew the answer and must still state it by its rules. A seed costs its runs at every
    rate its model tried (`runs`: every run of the command), as in `oracle_share`. (None
    where no k*.) Runs this checkout's library in-process, on the answer's store; not for
    --before."""
    import itertools

    import pandas as pd

    from seqbench.memory.plan import make_plan, with_points
    from seqbench.memory.reading import answer_facts, answers_from, plan_runs
    from seqbench.store.opening import open_store

    if answer["k_star"] is None:
        return None, "-"
    data, sets, own = TASKS[task]
    flags = dict(zip(own[::2], own[1::2], strict=True))
    refs = flags.get("--references")
    plan = make_plan(
        data[1], sets=sets, path=str(work / "delay.npz") if "--path" in data else None,
        families=flags["--families"].split(","),
        references=[] if refs == "none" else refs.split(","),
        params=int(flags["--params"]) if "--params" in flags else None,
    )  # fmt: skip
    plan = with_points(plan, sorted({c["k"] for c in answer["cells"] if c["k"] is not None}))
    store = open_store(str(db), "read")
    try:
        every = plan_runs(store, plan)
    finally:
        store.dispose()
    every = every[every["run_id"].isin(answer["run_ids"])].reset_index(drop=True)
    facts = answer_facts(plan)

    def said(rs: pd.DataFrame) -> list[tuple]:
        answers = answers_from(rs.reset_index(drop=True), plan, facts)
        return [(a.verdict, a.k_star, a.k_low, a.k_high) for a in answers]

    want = said(every)
    if want[0] != (answer["verdict"], answer["k_star"], answer["k_low"], answer["k_high"]):
        sys.exit(f"{task}: the runs re-derived say {want[0]}, the command said otherwise")
    wall: dict[tuple, float] = {}  # a seed's cost: its runs at every rate its model tried
    for r in runs:
        key = (r["model"], r["k"], r["seed"])
        wall[key] = wall.get(key, 0.0) + r["wall_seconds"]
    every = every.assign(
        wall=[wall[(m, None if pd.isna(k) else int(k), int(s))]
              for m, k, s in zip(every["model"], every["k"], every["seed"], strict=True)],
        cell=[(m, -1 if pd.isna(k) else int(k)) for m, k in zip(every["model"], every["k"],
                                                                 strict=True)],
    )  # fmt: skip
    cells = {c: g.sort_values("seed") for c, g in every.groupby("cell")}
    best = answer["best_cell"]
    fixed = [c for c in cells if c[1] == -1 or f"{c[0]} at k={c[1]}" == best]
    free = [c for c in cells if c not in fixed]
    least, kept = None, {}
    for counts in itertools.product(*(range(2, len(cells[c]) + 1) for c in free)):
        chosen = zip(free, counts, strict=True)
        rs = pd.concat([*(cells[c] for c in fixed), *(cells[c].head(n) for c, n in chosen)])
        if (least is None or rs["wall"].sum() < least) and said(rs) == want:
            least, kept = rs["wall"].sum(), dict(zip(free, counts, strict=True))
    n = {**{c: len(cells[c]) for c in fixed}, **kept}
    label = lambda c: c[0] if c[1] == -1 else f"{c[0]} k={c[1]}"  # noqa: E731
    text = f"{sum(n.values())} seeds: " + ", ".join(f"{label(c)} ×{n[c]}" for c in sorted(n))
    return least / every["wall"].sum(), text


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
          "| oracle / CPU | CPU / oracle | CPU / oracle, rates pro-rated | oracle's seeds "
          "| fewest CPU s | CPU / fewest | the fewest seeds |")  # fmt: skip
    print(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        print(f"| {r['task']} | {r['checkout']} | {r['with']} | {r['verdict']} | {r['k_star']} | "
              f"{r['interval']} | {r['runs']} | {r['rounds']} | {r['cpu']:.0f} | "
              f"{r['wall']:.0f} | {r['run_cpu']:.1f} | {r['n']:.1f} | {r['floor']:.1f} | "
              f"{r['floor'] / r['run_cpu']:.2f} | {_num(r['oracle'], '.0f')} | "
              f"{_num(r['oracle'] and r['oracle'] / r['cpu'], '.2f')} | "
              f"{_num(r['oracle'] and r['cpu'] / r['oracle'], '.2f')} | "
              f"{_num(r['oracle_prorated'] and r['cpu'] / r['oracle_prorated'], '.2f')} | "
              f"{r['oracle_runs']} | {_num(r['fewest'], '.0f')} | "
              f"{_num(r['fewest'] and r['cpu'] / r['fewest'], '.2f')} | "
              f"{r['fewest_runs']} |")  # fmt: skip
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
